from __future__ import annotations

from django.http import HttpRequest


def header(request: HttpRequest) -> dict:
    """What the header shows on every page: how much waits on this user (plans, permission
    requests, countdowns, agents waiting in their terminal); `can_review` makes plan pages and
    boards loud only for those who can decide."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    from dashboard.core.visibility import audience_of
    from planmode.inbox import inbox_count

    audience = audience_of(user)
    return {"waiting": inbox_count(audience), "can_review": audience.reviews_anything}
