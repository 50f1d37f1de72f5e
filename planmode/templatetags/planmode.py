from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from planmode import fragments

register = template.Library()

STATUS_ICONS = {
    "pending": "●",
    "approved": "✓",
    "rejected": "✗",
    "withdrawn": "↺",
    "expired": "◷",
    "answered_in_terminal": "⌨",
}


@register.filter
def waited(since: datetime | None) -> str:
    """How long someone has waited, short: "12 s", "4 min", "2 h", "3 days" (as plans.js)."""
    if since is None:
        return ""
    seconds = max(0, round((timezone.now() - since).total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours = round(minutes / 60)
    if hours < 48:
        return f"{hours} h"
    return f"{round(hours / 24)} days"


@register.filter
def clock(seconds: float | None) -> str:
    """Time left as a clock, "4:32" (as agentboard.js ticks it)."""
    whole = max(0, int(-(-float(seconds or 0) // 1)))
    return f"{whole // 60}:{whole % 60:02d}"


@register.filter
def staged_words(answer: dict | None) -> str:
    """A decision held in its undo window, in words: "Approved by ana", "Denied by raj"."""
    if not answer:
        return ""
    if "approve" in answer:
        what = "Approved" if answer["approve"] else "Rejected"
        if answer["approve"] and answer.get("auto_accept"):
            what += " with auto-accept edits"
    elif answer.get("allow"):
        what = "Allowed"
    else:
        what = "Denied and stopped" if answer.get("interrupt") else "Denied"
    return f"{what} by {answer.get('by_name') or 'someone'}"


@register.filter
def sends_in(sends_at: datetime | None) -> str:
    """The time left in an undo window, as a clock: "0:04" (agentboard.js counts it down)."""
    if sends_at is None:
        return ""
    return clock((sends_at - timezone.now()).total_seconds())


def _countdown(at: datetime | None) -> SafeString:
    stamp = at.isoformat() if at else ""
    return format_html('<time datetime="{}" data-sends-at>{}</time>', stamp, sends_in(at))


@register.simple_tag
def sends_when(answer: dict | None, sends_at: datetime | None) -> SafeString:
    """When a decision in its undo window is sent: "sends in 0:04", or, when the hook that
    waits for it gives up before the usual window would end, that it goes sooner and why."""
    stops = (answer or {}).get("stops_waiting_at")
    if not stops:
        return format_html("sends in {}", _countdown(sends_at))
    return format_html(
        "sends sooner than usual, in {}: the agent stops waiting in {}",
        _countdown(sends_at),
        _countdown(datetime.fromisoformat(stops)),
    )


@register.filter
def status_icon(status: str) -> str:
    return STATUS_ICONS.get(status, "")


REQUEST_ICONS = {**STATUS_ICONS, "allowed": "✓", "denied": "✗"}


@register.filter
def request_icon(status: str) -> str:
    return REQUEST_ICONS.get(status, "")


@register.simple_tag
def session_plans(session_pk: int) -> SafeString:
    """The session board's plans and their decisions (the same fragment the socket pushes).
    Rendered by the template engine, so it is already escaped."""
    return fragments.render_session_plans(session_pk)


@register.simple_tag
def session_attention(session_pk: int) -> SafeString:
    """The board's banner for everything of the session that waits on a person (the same
    fragment the socket pushes)."""
    return fragments.render_session_attention(session_pk)
