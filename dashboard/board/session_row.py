"""An overview row as HTML, made in Python.

The overview lists every running session, what waits on the lead first, and the template
engine spent two thirds of the page on them: about 360 lookups and filters a row, 0.6 ms each
on a team's overview of 58 rows. Here a row is a few strings, every text from an agent or a
person escaped; the markup is what `dashboard/_session_row.html` showed (that template now
calls this), and the page's scripts and tests read it the same way. What a row shows only
sometimes, a thing that waits or what the agent is doing now, stays in its own template.
"""

from __future__ import annotations

from typing import Any

from django.template.loader import get_template
from django.urls import reverse
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

from dashboard.board.selectors import SessionSummary, Tally


def _e(value: Any) -> str:
    return str(conditional_escape(value))


def progress_bar(tally: Tally, label: str) -> str:
    """`dashboard/_bar.html`: the fill is an SVG width, as the Content-Security-Policy
    allows no inline style."""
    done, of = tally.completed, tally.of
    return (
        f'<span class="bar" role="progressbar" aria-label="Progress of {_e(label)}" '
        f'aria-valuemin="0" aria-valuemax="{of}" aria-valuenow="{done}" '
        f'aria-valuetext="{done} of {of} done"><svg class="bar-track" viewBox="0 0 100 1" '
        'preserveAspectRatio="none" aria-hidden="true" focusable="false">'
        f'<rect class="bar-fill" width="{tally.percent}" height="1"/></svg></span>'
    )


def _usage(usage: Any) -> str:
    """`costs/_usage.html` as a row shows it: the cost, else the tokens."""
    if not usage:
        return ""
    tokens = _e(usage.tokens_text)
    if usage.cost_micros:
        how = "estimated" if usage.estimated else "reported by the agent"
        sign = "≈" if usage.estimated else ""
        return f'<span title="{tokens} tokens; cost {how}">{sign}{_e(usage.cost_text)}</span>'
    return (
        f'<span title="{tokens} tokens; no cost reported">{tokens}'
        '<span class="visually-hidden"> tokens</span></span>'
    )


def _status(summary: SessionSummary) -> str:
    """What the row says the session is at: what waits longest, else ended, else what its
    agents do now."""
    session, first = summary.session, summary.first_wait
    gap = "\n    "
    if first is not None:
        line = get_template("planmode/_wait_line.html").render({"item": first})
        more = len(summary.waits) - 1
        if more > 0:
            line += f' <span class="meta">and {more} more</span>'
        return line + gap
    if not session.is_active:
        quietly = " (went quiet)" if session.ended_quietly else ""
        return f'<span class="meta">ended{quietly}</span>{gap}'
    if summary.now:
        now = get_template("activity/_now.html").render({"now": summary.now})
        return f'<span class="activity">{now}</span>{gap}'
    if summary.current_activity:
        return (
            '<span class="activity"><span aria-hidden="true">▶</span> '
            f"{_e(summary.current_activity)}</span>{gap}"
        )
    if session.permission_mode == "plan":
        return (
            '<span class="meta"><span class="i-pause" aria-hidden="true"></span> '
            "plan mode on</span>"
        )
    return ""


def session_row(
    summary: SessionSummary, *, oob: bool = False, oob_insert: str = "", flash: bool = False
) -> SafeString:
    """The `<li>` of a session on the overview. `oob`: it replaces the row already on the page
    (a live update); `oob_insert`: it goes in at that place instead; `flash`: it just changed."""
    s = summary.session
    tally = summary.tally
    owner = s.owner
    username = _e(owner.get_username())
    full = _e(owner.get_full_name())
    person = full or username
    project, title, host = _e(s.project), _e(s.display_title), _e(s.host_label)
    active = s.is_active
    last_seen = timezone.localtime(s.last_seen_at)
    mode = s.permission_mode
    branch = _e(s.branch)
    flagged = (
        ' <span class="flag-count" title="Agents with discipline flags">'
        '<span aria-hidden="true">⚑</span><span class="visually-hidden">flagged:</span> '
        f"{summary.flag_count}</span>"
        if summary.flag_count
        else ""
    )
    agents = summary.agent_count
    swap = ' hx-swap-oob="true"' if oob and not oob_insert else ""
    html = (
        f'\n<li id="session-row-{s.pk}" class="session-row is-{summary.group}'
        f'{" flash" if flash else ""}"'
        f"{swap}"
        f'\n    data-group="{summary.group}" data-change-key="{_e(summary.change_key)}" '
        f'data-active="{"true" if active else "false"}" '
        f'data-waiting="{"true" if summary.group == "waiting" else "false"}" '
        f'data-waits="{len(summary.waits)}" data-owner="{s.owner_id or ""}" '
        f'data-team="{s.team_id or ""}" data-client="{_e(s.client)}" '
        f'data-project="{s.project_record_id or ""}" data-person="{username}" '
        f'data-machine="{_e(s.host)}"'
        f'\n    data-search="{_e(summary.search_text)}">'
        f'\n  <span class="live-dot{" is-live" if active else ""}" role="img" '
        f'aria-label="{"running" if active else "ended"}"></span>'
        f'\n  <span class="row-project"><strong class="project" title="Project {project}">'
        f'{project}</strong> <span class="kind" title="Agent kind">'
        f"{_e(s.get_client_display())}</span></span>"
        f'\n  <span class="row-owner meta"><span class="owner" title="Person {person}'
        f'{f" ({username})" if full else ""}">{person}</span>'
        f'<span class="host" title="Machine {host}">&nbsp;· {host}</span>'
        + (
            f'<span class="mode">&nbsp;· {_e(mode)}</span>'
            if mode not in ("default", "plan")
            else ""
        )
        + "</span>"
        f'\n  <span class="row-title"><a class="session-link" '
        f'href="{reverse("session-board", args=[s.session_id])}" '
        f'title="{project} · {username}{f" · ⎇ {branch}" if s.branch else ""} — {title} '
        f'(session {_e(s.short_id)})">{title}</a>'
        + (
            f' <span class="branch meta" title="git branch {branch}"><span aria-hidden="true">'
            f'⎇</span><span class="visually-hidden">branch</span> {branch}</span>'
            if s.branch
            else ""
        )
        + f' <code class="short-id meta" title="Session {_e(s.session_id)}">{_e(s.short_id)}'
        "</code></span>"
        f'\n  <span class="row-status">{_status(summary)}</span>'
        # The included templates ended with a new line: a space between inline elements.
        f'\n  <span class="row-progress">{progress_bar(tally, s.display_title)}\n'
        f'<span class="count">{tally.completed}/{tally.of}</span></span>'
        f'\n  <span class="agents">{agents} agent{"" if agents == 1 else "s"}{flagged}</span>'
        f'\n  <span class="cost">{_usage(summary.parts.get("usage"))}\n</span>'
        f'\n  <time class="when" datetime="{date_format(last_seen, "c")}" '
        f'title="Last event {date_format(last_seen, "Y-m-d H:i:s e")}" data-relative>'
        f"{_e(timesince(s.last_seen_at))} ago</time>"
        "\n</li>"
    )
    if oob_insert:
        html = f'<div hx-swap-oob="{_e(oob_insert)}">{html}</div>'
    # Every text of an agent or a person above went through `_e`.
    return mark_safe(html)  # noqa: S308
