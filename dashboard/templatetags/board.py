"""Template tags of the board's pages."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from dashboard.board.agent_card import agent_card as card_html
from dashboard.board.selectors import AgentCard, SessionSummary
from dashboard.board.session_row import session_row as row_html
from dashboard.board.steer_html import paused_line
from dashboard.board.steer_html import steer_actions as actions_html
from dashboard.steering import services as steering

register = template.Library()


@register.simple_tag(takes_context=True)
def session_row(context: dict[str, Any], summary: SessionSummary) -> SafeString:
    """An overview row (`dashboard.board.session_row`), with the `oob`, `oob_insert` and
    `flash` its includer sets."""
    audience = context.get("audience")
    steer = audience.is_waited_on_in(summary.session) if audience is not None else None
    return row_html(summary, steer=steer, **_placed(context))


@register.simple_tag(takes_context=True)
def agent_card(context: dict[str, Any], card: AgentCard) -> SafeString:
    """An agent's card (`dashboard.board.agent_card`), with the `oob`, `oob_insert` and
    `flash` its includer sets."""
    may = context.get("can_review")
    return card_html(card, steer=None if may is None else bool(may), **_placed(context))


@register.simple_tag(takes_context=True)
def steer_actions(
    context: dict[str, Any],
    session: Any,
    *,
    who: str,
    agent: Any = None,
    paused: bool = False,
) -> SafeString | str:
    """Message, Pause or Resume, Stop (`dashboard.board.steer_html`) on a board's header (the
    session's every agent, `paused` when some are) and banner (one `agent`: Resume while it is
    paused): left out for a viewer who may not steer, and only while the session runs."""
    if not session.is_active or context.get("can_review") is False:
        return ""
    if agent is not None:
        paused = steering.is_paused(agent.pk)
    agent_id = agent.agent_id if agent is not None else ""
    return actions_html(session.session_id, who=who, agent_id=agent_id, paused=paused, steer=True)


@register.simple_tag
def session_paused(summary: SessionSummary) -> SafeString | str:
    """Paused by ana · 3 min: the reason, of a session with a paused agent."""
    if summary.pause is None or not summary.session.is_active:
        return ""
    return paused_line(summary.pause, tag="span")


def _placed(context: dict[str, Any]) -> dict[str, Any]:
    """How the includer places a row or a card: in the page, instead of the one shown (`oob`),
    at another place (`oob_insert`), highlighted as just changed (`flash`)."""
    return {
        "oob": bool(context.get("oob")),
        "oob_insert": context.get("oob_insert") or "",
        "flash": bool(context.get("flash")),
    }
