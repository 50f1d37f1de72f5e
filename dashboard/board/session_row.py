"""An overview row as HTML, made in Python.

The overview lists every running session, what waits on the lead first, and the template
engine spent two thirds of the page on them: about 360 lookups and filters a row, 0.6 ms each
on a team's overview of 58 rows. Here a row is a few `format_html` calls, which escape every
text of an agent's or a person's; the markup is what `dashboard/_session_row.html` showed
(that template now calls this), and the page's scripts and tests read it the same way. What a
row shows only sometimes, a thing that waits, stays in its own template.
"""

from __future__ import annotations

from django.template.loader import get_template
from django.urls import reverse
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

from dashboard.board.parts_html import now_html, progress_bar, usage_figure
from dashboard.board.selectors import SessionSummary
from dashboard.board.steer_html import paused_line, steer_actions

# The markup of a row, in constant pieces; `format_html` fills in and escapes every value.
ROW = (
    '\n<li id="session-row-{pk}" class="session-row is-{group}{flash}"{swap}'
    '\n    data-group="{group}" data-change-key="{change_key}" data-active="{active}" '
    'data-waiting="{waiting}" data-waits="{waits}" data-owner="{owner}" data-team="{team}" '
    'data-client="{client}" data-project="{project_pk}" data-person="{username}" '
    'data-machine="{machine}" data-paused="{paused}"'
    '\n    data-search="{search}">'
    '\n  <span class="live-dot{live}" role="img" aria-label="{state}"></span>'
    '\n  <span class="row-project"><strong class="project" title="Project {project}">'
    '{project}</strong> <span class="kind" title="Agent kind">{kind}</span></span>'
    '\n  <span class="row-owner meta"><span class="owner" title="Person {person}{username_aside}">'
    '{person}</span><span class="host" title="Machine {host}">&nbsp;· {host}</span>{mode}</span>'
    '\n  <span class="row-title"><a class="session-link" href="{href}" '
    'title="{project} · {username}{branch_aside} — {title} (session {short_id})">{title}</a>'
    '{branch} <code class="short-id meta" title="Session {session_id}">{short_id}</code></span>'
    '\n  <span class="row-status">{status}{paused_line}</span>'
    # The included templates ended with a new line: a space between inline elements.
    '\n  <span class="row-progress">{bar}\n<span class="count">{done}/{of}</span></span>'
    '\n  <span class="agents">{agents} agent{plural}{flags}</span>'
    '\n  <span class="cost">{usage}\n</span>'
    '\n  <time class="when" datetime="{iso}" title="Last event {when}" data-relative>'
    "{since} ago</time>"
    "{steer}"
    "\n</li>"
)
GAP = "\n    "


def _status(summary: SessionSummary) -> SafeString | str:
    """What the row says the session is at: what waits longest, else ended, else what its
    agents do now."""
    session, first = summary.session, summary.first_wait
    if first is not None:
        more = len(summary.waits) - 1
        return format_html(
            "{}{}" + GAP,
            get_template("planmode/_wait_line.html").render({"item": first}),
            format_html(' <span class="meta">and {} more</span>', more) if more > 0 else "",
        )
    if not session.is_active:
        quietly = " (went quiet)" if session.ended_quietly else ""
        return format_html('<span class="meta">ended{}</span>' + GAP, quietly)
    if summary.now:
        return format_html('<span class="activity">{}\n</span>' + GAP, now_html(summary.now))
    if summary.current_activity:
        return format_html(
            '<span class="activity"><span aria-hidden="true">▶</span> {}</span>' + GAP,
            summary.current_activity,
        )
    if session.permission_mode == "plan":
        return format_html(
            '<span class="meta"><span class="i-pause" aria-hidden="true"></span> {}</span>',
            "plan mode on",
        )
    return ""


def _paused(summary: SessionSummary) -> SafeString | str:
    """Paused by ana · 3 min: the reason, and how many of its agents, if not all."""
    if summary.pause is None:
        return ""
    of = summary.agent_count
    return format_html(
        "{}{}",
        paused_line(summary.pause, tag="span"),
        format_html(' <span class="meta">({} of {} agents)</span>', summary.paused, of)
        if of > 1
        else "",
    )


def session_row(
    summary: SessionSummary,
    *,
    oob: bool = False,
    oob_insert: str = "",
    flash: bool = False,
    steer: bool | None = None,
) -> SafeString:
    """The `<li>` of a session on the overview. `oob`: it replaces the row already on the page
    (a live update); `oob_insert`: it goes in at that place instead; `flash`: it just changed;
    `steer`: whether the viewer may message, pause and stop its agents (None: a row sent to
    every viewer, whose page's script shows the buttons to those who may)."""
    s, tally = summary.session, summary.tally
    owner = s.owner
    username, full = owner.get_username(), owner.get_full_name()
    active, mode, agents = s.is_active, s.permission_mode, summary.agent_count
    last_seen = timezone.localtime(s.last_seen_at)
    row = format_html(
        ROW,
        pk=s.pk,
        group=summary.group,
        flash=" flash" if flash else "",
        swap=format_html(' hx-swap-oob="{}"', "true") if oob and not oob_insert else "",
        change_key=summary.change_key,
        active="true" if active else "false",
        waiting="true" if summary.group == "waiting" else "false",
        waits=len(summary.waits),
        owner=s.owner_id or "",
        team=s.team_id or "",
        client=s.client,
        project_pk=s.project_record_id or "",
        username=username,
        machine=s.host,
        search=summary.search_text,
        live=" is-live" if active else "",
        state="running" if active else "ended",
        project=s.project,
        kind=s.get_client_display(),
        person=full or username,
        username_aside=f" ({username})" if full else "",
        host=s.host_label,
        mode=format_html('<span class="mode">&nbsp;· {}</span>', mode)
        if mode not in ("default", "plan")
        else "",
        href=reverse("session-board", args=[s.session_id]),
        branch_aside=f" · ⎇ {s.branch}" if s.branch else "",
        title=s.display_title,
        short_id=s.short_id,
        branch=format_html(
            ' <span class="branch meta" title="git branch {0}"><span aria-hidden="true">⎇'
            '</span><span class="visually-hidden">branch</span> {0}</span>',
            s.branch,
        )
        if s.branch
        else "",
        session_id=s.session_id,
        status=_status(summary),
        paused="true" if summary.paused and active else "false",
        paused_line=_paused(summary) if active else "",
        steer=format_html(
            '\n  <span class="row-steer">{}</span>',
            steer_actions(
                s.session_id,
                who=f"the agents of {s.project}",
                paused=bool(summary.paused),
                steer=steer,
            ),
        )
        if active and steer is not False
        else "",
        bar=progress_bar(tally, s.display_title),
        done=tally.completed,
        of=tally.of,
        agents=agents,
        plural="" if agents == 1 else "s",
        flags=format_html(
            ' <span class="flag-count" title="Agents whose todo list a discipline check '
            'flagged (see their cards)"><span aria-hidden="true">⚑</span> {} flagged</span>',
            summary.flag_count,
        )
        if summary.flag_count
        else "",
        usage=usage_figure(summary.parts.get("usage")),
        iso=date_format(last_seen, "c"),
        when=date_format(last_seen, "Y-m-d H:i:s e"),
        since=timesince(s.last_seen_at),
    )
    if oob_insert:
        return format_html('<div hx-swap-oob="{}">{}</div>', oob_insert, row)
    return row
