from __future__ import annotations

from django.http import HttpRequest


def header(request: HttpRequest) -> dict:
    """What the header shows on every page: how much waits on this user (plans, permission
    requests, countdowns, agents waiting in their terminal)."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    from planmode.inbox import inbox_count
    from planmode.permissions import audience_of

    return {"waiting": inbox_count(audience_of(request.user))}
