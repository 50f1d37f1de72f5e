from __future__ import annotations

from datetime import datetime

from django import template

from dashboard.activity.models import duration_text
from planmode.templatetags.planmode import waited

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    """Seconds in words: "12 s", "3 min 5 s", "1 h 12 min"."""
    return duration_text(seconds) if seconds else "none"


@register.filter
def ago(moment: datetime | None) -> str:
    """ "12 s ago", "4 min ago", "3 days ago"."""
    return f"{waited(moment)} ago" if moment else ""
