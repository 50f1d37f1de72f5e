"""Steering on the board as HTML, made in Python: the Message, Pause (or Resume) and Stop
buttons of an agent or a session, and what a card says of its pause and of what was said to
it. The card, the overview row, the board's header and its "needs a look" lines all use these,
so each looks and works the same wherever it is.

The buttons are links to the box's own page (`dashboard.steering.views`), so they work without
JavaScript; the page's script opens the box in a dialog instead (`static/js/steer.js`). A
fragment sent live is the same for every viewer of a board, so the buttons carry
`reviewer-only`, which the page of someone who may not steer hides; a page rendered for one
viewer leaves them out.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.template.defaultfilters import truncatechars
from django.urls import reverse
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from dashboard.steering.models import Directive, Pause
from dashboard.steering.selectors import AgentSteering
from planmode.templatetags.planmode import waited

ACTIONS = (
    '<div class="steer-actions{reviewer_only}"{hidden} role="group" aria-label="Steer {who}">'
    '<a class="button button-small" href="{message}" data-steer="message" '
    'aria-keyshortcuts="m" title="Message {who} (m)">Message</a>'
    "{pause}"
    '<a class="button button-small button-reject" href="{stop}" data-steer="stop" '
    'title="Stop {who}">Stop</a>'
    '<span class="steer-error form-error" role="alert" data-steer-error></span>'
    "</div>"
)
PAUSE = (
    '<a class="button button-small" href="{href}" data-steer="pause" aria-keyshortcuts="p" '
    'title="Pause {who} (p)">Pause</a>'
)
# Without JavaScript, Resume opens the box (a form with its CSRF token); with it, one click.
RESUME = (
    '<a class="button button-small button-approve" href="{href}" data-steer-resume="{post}" '
    'aria-keyshortcuts="p" title="Resume {who} (p)">Resume</a>'
)
PAUSED = (
    '<{tag} class="steer-paused" data-steer-state="paused"><span class="i-pause" '
    'aria-hidden="true"></span> Paused by {by} · <time datetime="{iso}" title="Paused {when}" '
    "data-duration>{since}</time>{reason}</{tag}>"
)
# A message on a card is cut to a line or two; the timeline has it whole.
SAID_CHARS = 140
SAID = '<li class="steer-said is-{state}" data-steer-state="{state}">{what}{reason} · {how}</li>'


def _link(session_id: str, action: str, agent_id: str, *, send: bool = False) -> str:
    path = reverse("steer-act" if send else "steer-box", args=[session_id, action])
    return f"{path}?{urlencode({'agent': agent_id})}" if agent_id else path


def steer_actions(
    session_id: str, *, who: str, agent_id: str = "", paused: bool = False, steer: bool | None
) -> SafeString | str:
    """Message, Pause or Resume, Stop. `steer`: the viewer may (True), may not (False: left
    out), or it is not known, a fragment for every viewer (None: hidden until the page's
    script knows)."""
    if steer is False:
        return ""
    if paused:
        pause = format_html(
            RESUME,
            href=_link(session_id, "resume", agent_id),
            post=_link(session_id, "resume", agent_id, send=True),
            who=who,
        )
    else:
        pause = format_html(PAUSE, href=_link(session_id, "pause", agent_id), who=who)
    return format_html(
        ACTIONS,
        reviewer_only=" reviewer-only",
        hidden=format_html(" {}", "hidden data-steer-check") if steer is None else "",
        who=who,
        message=_link(session_id, "message", agent_id),
        pause=pause,
        stop=_link(session_id, "stop", agent_id),
    )


def paused_line(pause: Pause, *, tag: str = "p") -> SafeString:
    """Paused by ana · 3 min: the reason (a `p` of a card, a `span` of a row)."""
    at = timezone.localtime(pause.paused_at)
    return format_html(
        PAUSED,
        tag=tag,
        by=pause.paused_by_name,
        iso=date_format(at, "c"),
        when=date_format(at, "Y-m-d H:i:s e"),
        since=waited(pause.paused_at),
        reason=format_html(": {}", pause.reason) if pause.reason else "",
    )


def _how(directive: Directive) -> SafeString | str:
    if directive.state == Directive.State.DELIVERED and directive.delivered_at:
        at = timezone.localtime(directive.delivered_at)
        return format_html(
            'delivered <time datetime="{}" title="{}">{}</time> by {}',
            date_format(at, "c"),
            date_format(at, "Y-m-d H:i:s e"),
            date_format(at, "H:i"),
            directive.delivered_via,
        )
    if directive.state == Directive.State.UNDELIVERED:
        return format_html("not delivered: {}", directive.delivered_via or "the session ended")
    return "queued"


def _said(directive: Directive) -> tuple[str, SafeString, SafeString | str, SafeString | str]:
    if directive.kind == Directive.Kind.STOP:
        stopped = directive.state == Directive.State.DELIVERED
        what = format_html(
            '<span aria-hidden="true">⊘</span> {} by {}',
            "Stopped" if stopped else "Stop asked",
            directive.created_by_name,
        )
        reason = format_html(": {}", directive.text) if directive.text else ""
        return directive.state, what, reason, _how(directive)
    what = format_html(
        '<span aria-hidden="true">✉</span> {}: <q class="steer-text">{}</q>',
        directive.created_by_name,
        truncatechars(directive.text, SAID_CHARS),
    )
    return directive.state, what, "", _how(directive)


def steering_lines(steering: AgentSteering) -> SafeString | str:
    """An agent's open pause, and its latest messages and stops with their states."""
    if not steering:
        return ""
    said = (
        format_html(
            '<ul class="steer-list" aria-label="Said to this agent">{}</ul>',
            format_html_join(
                "",
                SAID,
                (
                    {"state": state, "what": what, "reason": reason, "how": how}
                    for state, what, reason, how in map(_said, steering.recent)
                ),
            ),
        )
        if steering.recent
        else ""
    )
    return format_html(
        '<div class="steer-lines">{}{}</div>',
        paused_line(steering.pause) if steering.pause else "",
        said,
    )
