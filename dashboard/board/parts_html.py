"""Parts that an overview row (`session_row`) and an agent's card (`agent_card`) both show,
as HTML made in Python: a progress bar, what a session or agent cost so far, and what an agent
is doing this second."""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString

from dashboard.activity.selectors import NowLine
from dashboard.board.selectors import Tally

BAR = (
    '<span class="bar" role="progressbar" aria-label="Progress of {label}" aria-valuemin="0" '
    'aria-valuemax="{of}" aria-valuenow="{done}" aria-valuetext="{done} of {of} done">'
    '<svg class="bar-track" viewBox="0 0 100 1" preserveAspectRatio="none" aria-hidden="true" '
    'focusable="false"><rect class="bar-fill" width="{percent}" height="1"/></svg></span>'
)
NOW_LINE = (
    '<span class="now is-{state}" data-now="{state}"{idle_at}>{doing} · <time datetime="{iso}" '
    'title="{title}" data-duration>{elapsed}</time></span>'
)


def progress_bar(tally: Tally, label: str) -> SafeString:
    """A progress bar, of a row and of a card: the fill is an SVG width, as the
    Content-Security-Policy allows no inline style."""
    return format_html(BAR, label=label, of=tally.of, done=tally.completed, percent=tally.percent)


def usage_figure(usage: Any, *, card: bool = False) -> SafeString | str:
    """What a session or an agent cost so far (`costs.selectors.SessionUsage`), as
    `costs/_usage.html` shows it short: the cost, else the tokens (never a cost of $0). A
    card names them in words; a row's narrow column says "tokens" to screen readers only."""
    if not usage:
        return ""
    if usage.cost_micros:
        return format_html(
            '<span title="{} tokens; cost {}">{}{}</span>',
            usage.tokens_text,
            "estimated" if usage.estimated else "reported by the agent",
            "≈" if usage.estimated else "",
            usage.cost_text,
        )
    if card:
        return format_html(
            '<span title="{0} tokens; no cost reported">{0} tokens</span>', usage.tokens_text
        )
    return format_html(
        '<span title="{0} tokens; no cost reported">{0}<span class="visually-hidden"> tokens'
        "</span></span>",
        usage.tokens_text,
    )


def now_html(now: NowLine) -> SafeString:
    """What the agent is doing this second (running a tool, thinking, idle), and for how long."""
    idle_at = format_html(' data-idle-at="{}"', now.idle_at_iso) if now.idle_at else ""
    if now.state == "running":
        doing = format_html(
            '<span class="spinner" aria-hidden="true">▶</span> {}{}{}',
            now.verb,
            format_html(' <code class="now-subject">{}</code>', now.subject_short)
            if now.subject
            else "",
            format_html(' <span class="meta">{}</span>', now.detail)
            if now.detail and now.verb != "Running"
            else "",
        )
    else:
        word = "Thinking" if now.state == "thinking" else "Idle"
        doing = format_html('<span class="now-word">{}</span>', word)
    return format_html(
        NOW_LINE,
        state=now.state,
        idle_at=idle_at,
        doing=doing,
        iso=now.since_iso,
        title=now.since_title,
        elapsed=now.elapsed,
    )
