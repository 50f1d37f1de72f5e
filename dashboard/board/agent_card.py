"""An agent's card as HTML, made in Python.

The board renders a card for every agent on its page and again for every live update of one
(`dashboard.live.publisher`), and under load (100 boards open, 100 writes a second) the
template engine spent about a fifth of the render thread on them. Here a card is a few
`format_html` calls, which escape every text of an agent's; the markup is what
`dashboard/_agent_card.html` showed (that template now calls this), and the page's scripts and
tests read it the same way. A card around its items costs about half what the template did
(0.25 → 0.14 ms); its items are `dashboard.board.todo_html`'s, and its progress bar, its usage
and what the agent is doing now are made as the overview row makes them
(`dashboard.board.parts_html`).
"""

from __future__ import annotations

from typing import Any

from django.contrib.humanize.templatetags.humanize import intcomma
from django.template.defaultfilters import capfirst, floatformat, pluralize, truncatechars
from django.urls import reverse
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

from dashboard.board.parts_html import now_html, progress_bar, usage_figure
from dashboard.board.selectors import AgentCard
from dashboard.board.steer_html import steer_actions, steering_lines
from dashboard.board.todo_html import cut
from dashboard.models import Agent
from planmode.inbox import InboxItem
from planmode.templatetags.planmode import clock, waited
from todos.models import Continuation, EnforcerEvent

# The markup of a card, in constant pieces; `format_html` fills in and escapes every value.
CARD = (
    '\n<article id="agent-{pk}" class="card{stopped}{waiting}{flash}"{swap}'
    '\n         data-collapse-key="{session_id}/{agent_id}" aria-labelledby="agent-{pk}-title">'
    '\n  <header class="card-head">'
    '\n    <h2 id="agent-{pk}-title" class="card-title"><span class="agent-label">{label}</span>'
    "{short_id}{stopped_word}</h2>"
    "\n    {usage}"
    '\n    <button type="button" class="collapse-toggle" aria-expanded="true" '
    'aria-controls="agent-{pk}-body" aria-label="Collapse the list of {label}" '
    'title="Collapse or expand (like Ctrl+T in the terminal)"><span aria-hidden="true">▾</span>'
    "</button>"
    "\n  </header>"
    "\n  {waits}"
    "\n  {now}"
    "\n  {steering}{steer}"
    "\n  {countdown}"
    "\n  {note}"
    '\n  <div class="card-progress">'
    '\n    <span class="tasks-count">Tasks ({done}/{of})</span>'
    "\n    {bar}"
    "\n    {done_word}"
    "\n  </div>"
    '\n  <div id="agent-{pk}-body" class="card-body">'
    "\n    {items}"
    "\n    {next}"
    "\n    {flags}"
    "\n    {history}"
    "\n  </div>"
    "\n</article>"
)
# What waits on a person, a line each, and how long it has waited.
WAIT = (
    '<p class="card-waiting" data-wait="{kind}">{what} · <time datetime="{iso}" '
    'title="{said} {when}" data-duration>{waited}</time></p>'
)
PAUSE = '<span class="i-pause" aria-hidden="true"></span> '
PLAN = PAUSE + 'Waiting for a review of its plan <a href="{}">{}</a>'
PERMISSION = PAUSE + 'Waiting for you: <a href="{}">{}</a> <code>{}</code>'
LOOK = '<span aria-hidden="true">⟳</span> Needs a look — {}: {}'
# A permission request's command and a concern's detail are cut to stay on a line or two.
PERMISSION_CHARS = 80
LOOK_CHARS = 90
COUNTDOWN = (
    '\n  <div class="toast" role="status" data-countdown-seconds="{seconds}">'
    '\n    <span>Resumes in <strong class="countdown-number">{clock}</strong> '
    "({unfinished} task{plural} left)</span>"
    '\n    <button type="button" class="button button-small reviewer-only" hx-post="{href}" '
    'hx-swap="none" aria-label="Cancel the continuation of {label}">Cancel</button>'
    "\n  </div>"
)
NOTE = (
    '<p class="card-note"><span aria-hidden="true">↻</span> {} continues this agent with its own '
    "enforcer; Agentboard's stays out of its way.</p>"
)
# The included templates ended with a new line: a space between inline elements.
NOW = '<p class="card-now">{}\n</p>'
MORE = (
    '<li class="todo todo-more"><span class="box" aria-hidden="true">⋯</span>'
    '<span class="text subtext">{}</span></li>'
)
# As the template laid them out, the list and "all done" end in a new line and an indent.
ITEMS = '\n    <ul class="todo-list">\n      {}\n      {}\n      {}\n    </ul>\n    '
FLAG = '<li class="badge badge-flag" data-flag="{}"><span aria-hidden="true">⚑</span> {}</li>'
FLAG_EVENT = '<li><time datetime="{}" title="{}" data-relative>{} ago</time> {}</li>'
# The usage on a card, and on the main card the session's, which Claude Code reports without
# naming the agent (its subagents' included): said so, or the subagents' would seem to cost nothing.
USAGE = (
    '<span class="card-usage"><span class="visually-hidden">Model usage so far: </span>{}\n</span>'
)
SESSION_USAGE = (
    '<span class="card-usage" title="Reported for the session as a whole: its subagents\' model '
    'requests are counted here too"><span class="visually-hidden">Model usage so far: </span>{}\n'
    " for the session</span>"
)


def _usage(usage: Any, *, main: bool) -> SafeString | str:
    """Its usage so far; on the main card, whether it is the whole session's."""
    if not usage:
        return ""
    return format_html(
        SESSION_USAGE if main and usage.session_wide else USAGE, usage_figure(usage, card=True)
    )


def _wait(item: InboxItem) -> SafeString:
    """A line of what of the agent waits on a person: a plan, a permission request, a look
    (it loops, is stuck, runs long), or its terminal."""
    if item.kind == "plan":
        assert item.plan is not None
        what = format_html(PLAN, reverse("plan-review", args=[item.plan.pk]), item.plan.title)
        said = "Submitted"
    elif item.kind == "permission":
        assert item.request is not None
        what = format_html(
            PERMISSION,
            reverse("inbox-request", args=[item.request.pk]),
            item.what,
            truncatechars(item.summary, PERMISSION_CHARS),
        )
        said = "Asked"
    elif item.kind == "look":
        what = format_html(LOOK, item.what, truncatechars(item.summary, LOOK_CHARS))
        said = "Since"
    else:
        what = format_html(PAUSE + "{}", capfirst(item.terminal_words))
        said = "Since"
    since = timezone.localtime(item.since)
    return format_html(
        WAIT,
        kind=item.kind,
        what=what,
        iso=date_format(since, "c"),
        said=said,
        when=date_format(since, "Y-m-d H:i:s e"),
        waited=waited(item.since),
    )


def _countdown(countdown: Continuation, label: str) -> SafeString:
    """The toast of a continuation counting down, with its cancel button."""
    # Read once: the time left moves on between two reads.
    seconds = countdown.seconds_left
    return format_html(
        COUNTDOWN,
        seconds=floatformat(seconds, "1"),
        clock=clock(seconds),
        unfinished=countdown.unfinished,
        plural=pluralize(countdown.unfinished),
        href=reverse("continuation-cancel", args=[countdown.pk]),
        label=label,
    )


def _items(card: AgentCard) -> SafeString:
    """The list, or that it is all done, or that there is none. A long list shows its current
    part (`selectors.card_window`) and counts the rest."""
    t = card.tally
    if card.todos:
        before, after = card.hidden_before, card.hidden_after
        return format_html(
            ITEMS,
            format_html(MORE, f"{intcomma(before)} earlier item{pluralize(before)} not shown")
            if before
            else "",
            card.shown_html,
            format_html(MORE, f"and {intcomma(after)} more") if after else "",
        )
    if card.all_done:
        return format_html(
            '<p class="all-done">All {} task{} completed.</p>\n    ',
            t.completed,
            pluralize(t.completed),
        )
    return format_html('<p class="no-todos">{}</p>', "No todos currently tracked.")


def _flag_history(events: list[EnforcerEvent]) -> SafeString:
    """The newest flags of the agent, folded, each with when it was raised."""

    def line(event: EnforcerEvent) -> tuple[str, str, str, str]:
        at = timezone.localtime(event.created_at)
        return (
            date_format(at, "c"),
            date_format(at, "Y-m-d H:i:s e"),
            timesince(event.created_at),
            event.text,
        )

    return format_html(
        '<details class="flag-history"><summary>Flag history ({})</summary><ul>{}</ul></details>',
        len(events),
        format_html_join("", FLAG_EVENT, (line(event) for event in events)),
    )


def agent_card(
    card: AgentCard,
    *,
    oob: bool = False,
    oob_insert: str = "",
    flash: bool = False,
    steer: bool | None = None,
) -> SafeString:
    """The `<article>` of an agent on its session's board. `oob`: it replaces the card already
    on the page (a live update); `oob_insert`: it goes in at that place instead; `flash`: it
    just changed; `steer`: whether the viewer may message, pause and stop it (None: a fragment
    for every viewer of the board, whose page hides what is not theirs)."""
    a, t = card.agent, card.tally
    label, main, stopped = a.label, a.is_main, a.status == Agent.Status.STOPPED
    next_pending = card.next_pending
    markup = format_html(
        CARD,
        pk=a.pk,
        stopped=" is-stopped" if stopped else "",
        waiting=" is-waiting" if card.waits else "",
        flash=" flash" if flash else "",
        swap=format_html(' hx-swap-oob="{}"', "true") if oob and not oob_insert else "",
        session_id=a.session.session_id,
        agent_id=a.agent_id,
        label=label,
        short_id=format_html(' <code class="short-id" title="{}">{}</code>', a.agent_id, a.short_id)
        if not main
        else "",
        stopped_word=format_html(' <span class="stopped">{}</span>', "stopped") if stopped else "",
        usage=_usage(card.parts.get("usage"), main=main),
        waits=format_html_join(
            "", "{}", ((_wait(item),) for item in card.waits if item.kind != "countdown")
        ),
        now=format_html(NOW, now_html(card.now)) if card.now and not card.waits else "",
        steering=steering_lines(card.steering),
        steer=steer_actions(
            a.session.session_id,
            who=label if main else f"{label} {a.short_id}",
            agent_id=a.agent_id,
            paused=card.steering.pause is not None,
            # On a board, the page hides what its viewer may not do (`reviewer-only`).
            steer=not (stopped or a.session.ended_at or steer is False),
        ),
        countdown=_countdown(card.countdown, label) if card.countdown else "",
        note=format_html(NOTE, a.session.other_enforcer)
        if main and a.session.other_enforcer
        else "",
        done=t.completed,
        of=t.of,
        bar=progress_bar(t, label),
        done_word=format_html('<span class="done-word">{}</span>', "✓ done")
        if t.of and not t.unfinished
        else "",
        items=_items(card),
        next=format_html('<p class="next">Next: {}</p>', cut(next_pending.content))
        if next_pending
        else "",
        flags=format_html(
            '<ul class="flags" aria-label="Discipline flags">{}</ul>',
            format_html_join("", FLAG, card.flags),
        )
        if card.flags
        else "",
        history=_flag_history(card.flag_history) if card.flag_history else "",
    )
    if oob_insert:
        return format_html('<div hx-swap-oob="{}">{}</div>', oob_insert, markup)
    return markup
