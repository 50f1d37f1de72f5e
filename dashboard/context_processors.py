from __future__ import annotations

from django.http import HttpRequest


def header(request: HttpRequest) -> dict:
    """What the header shows on every page: the number of plans waiting for a decision."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    from planmode.selectors import pending_plan_count

    return {"pending_plans": pending_plan_count()}
