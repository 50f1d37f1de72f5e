"""Template tags of the board's pages."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from dashboard.board.agent_card import agent_card as card_html
from dashboard.board.selectors import AgentCard, SessionSummary
from dashboard.board.session_row import session_row as row_html

register = template.Library()


@register.simple_tag(takes_context=True)
def session_row(context: dict[str, Any], summary: SessionSummary) -> SafeString:
    """An overview row (`dashboard.board.session_row`), with the `oob`, `oob_insert` and
    `flash` its includer sets."""
    return row_html(summary, **_placed(context))


@register.simple_tag(takes_context=True)
def agent_card(context: dict[str, Any], card: AgentCard) -> SafeString:
    """An agent's card (`dashboard.board.agent_card`), with the `oob`, `oob_insert` and
    `flash` its includer sets."""
    return card_html(card, **_placed(context))


def _placed(context: dict[str, Any]) -> dict[str, Any]:
    """How the includer places a row or a card: in the page, instead of the one shown (`oob`),
    at another place (`oob_insert`), highlighted as just changed (`flash`)."""
    return {
        "oob": bool(context.get("oob")),
        "oob_insert": context.get("oob_insert") or "",
        "flash": bool(context.get("flash")),
    }
