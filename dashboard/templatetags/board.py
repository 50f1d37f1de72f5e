"""Template tags of the board's pages."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from dashboard.board.selectors import SessionSummary, Tally
from dashboard.board.session_row import progress_bar as bar_html
from dashboard.board.session_row import session_row as row_html

register = template.Library()


@register.simple_tag(takes_context=True)
def session_row(context: dict[str, Any], summary: SessionSummary) -> SafeString:
    """An overview row (`dashboard.board.session_row`), with the `oob`, `oob_insert` and
    `flash` its includer sets."""
    return row_html(
        summary,
        oob=bool(context.get("oob")),
        oob_insert=context.get("oob_insert") or "",
        flash=bool(context.get("flash")),
    )


@register.simple_tag
def progress_bar(tally: Tally, label: str) -> SafeString:
    """A progress bar (`dashboard.board.session_row.progress_bar`), as a card shows it."""
    return bar_html(tally, label)
