from __future__ import annotations

from django import template

from dashboard.activity.models import duration_text

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    """Seconds in words: "12 s", "3 min 5 s", "1 h 12 min"."""
    return duration_text(seconds) if seconds else "none"
