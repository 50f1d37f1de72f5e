"""Every event the browser and agent sockets receive, with the one helper that sends each.

Events leave only after commit (callers use `transaction.on_commit`) and always cross the
channel layer, so one process or many behave alike. Fragments are rendered once per event
here, not once per connected browser.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.template.loader import render_to_string

OVERVIEW_GROUP = "board.overview"
# Every board page: the header's count of plans waiting.
HEADER_GROUP = "board.header"


def session_group(session_pk: int) -> str:
    return f"board.session.{session_pk}"


def plan_group(plan_pk: int) -> str:
    return f"plan.{plan_pk}"


class BoardFragment(TypedDict):
    """htmx out-of-band fragments for board sockets to forward as they are."""

    type: Literal["board.fragment"]
    html: str


def _send(group: str, message: BoardFragment | dict) -> None:
    async_to_sync(get_channel_layer().group_send)(group, message)


def send_fragment(group: str, html: str) -> None:
    _send(group, BoardFragment(type="board.fragment", html=html))


def agent_changed(
    *,
    agent_pk: int,
    revision_pk: int | None = None,
    agent_created: bool = False,
    session_created: bool = False,
) -> None:
    """An agent's list or state changed: refresh its card, the session header and overview row."""
    from dashboard import selectors
    from todos.models import TodoRevision

    card = selectors.agent_card(agent_pk)
    session = card.agent.session
    summary = selectors.session_summary(session.pk)
    parts = [
        render_to_string(
            "dashboard/_agent_card.html",
            {
                "card": card,
                "oob": True,
                "oob_insert": "beforeend:#cards" if agent_created else "",
                "flash": True,
            },
        ),
        render_to_string("dashboard/_session_header.html", {"summary": summary, "oob": True}),
    ]
    if revision_pk is not None:
        revision = TodoRevision.objects.select_related("agent", "agent__session").get(
            pk=revision_pk
        )
        parts.append(
            render_to_string(
                "dashboard/_history_entry.html",
                {"entry": selectors.history_entry(revision), "oob": True},
            )
        )
    send_fragment(session_group(session.pk), "".join(parts))
    session_changed_on_overview(summary=summary, created=session_created)


def session_changed_on_overview(*, summary: object, created: bool = False) -> None:
    """Rows update in place; a new session's row is put on top (no rows jumping around)."""
    html = render_to_string(
        "dashboard/_session_row.html",
        {
            "summary": summary,
            "oob": True,
            "oob_insert": "afterbegin:#session-list" if created else "",
            "flash": True,
        },
    )
    send_fragment(OVERVIEW_GROUP, html)


def render_plans_waiting() -> str:
    from planmode.selectors import pending_plan_count

    return render_to_string(
        "dashboard/_plans_waiting.html", {"pending_plans": pending_plan_count(), "oob": True}
    )
