"""Every event the browser and agent sockets receive, with the one helper that sends each.

Events leave only after commit (callers use `transaction.on_commit`) and always cross the
channel layer, so one process or many behave alike. Fragments are rendered once per event
here, not once per connected browser.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.template.loader import render_to_string

OVERVIEW_GROUP = "board.overview"
# Every board page: the header's count of plans waiting.
HEADER_GROUP = "board.header"


def session_group(session_pk: int) -> str:
    return f"board.session.{session_pk}"


def plan_group(plan_pk: int) -> str:
    return f"plan.{plan_pk}"


# The review queue page and every review page (its list of plans waiting).
PLANS_GROUP = "board.plans"


def plan_review_group(plan_pk: int) -> str:
    """Browsers on one plan's review page."""
    return f"board.plan.{plan_pk}"


class BoardFragment(TypedDict):
    """htmx out-of-band fragments for board sockets to forward as they are."""

    type: Literal["board.fragment"]
    html: str


def after_commit(func: Callable[..., None], **kwargs: Any) -> None:
    """Run `func(**kwargs)` once the current transaction commits; a failure is logged, since
    the change itself is already durable and clients resync on reconnect."""

    def notify() -> None:
        func(**kwargs)

    notify.__qualname__ = f"notify:{func.__qualname__}"
    transaction.on_commit(notify, robust=True)


def _send(group: str, message: BoardFragment | dict) -> None:
    async_to_sync(get_channel_layer().group_send)(group, message)


def send_event(group: str, message: dict) -> None:
    """A typed event for waiters (held hooks, agent sockets) rather than for browsers."""
    _send(group, message)


def send_fragment(group: str, html: str) -> None:
    _send(group, BoardFragment(type="board.fragment", html=html))


def agent_changed(
    *,
    agent_pk: int,
    revision_pk: int | None = None,
    agent_created: bool = False,
    session_created: bool = False,
    enforcer_event_pks: list[int] | None = None,
) -> None:
    """An agent's list or state changed: refresh its card, the session header and overview row."""
    from dashboard import selectors
    from todos.models import EnforcerEvent, TodoRevision

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
    entries = []
    if revision_pk is not None:
        revision = TodoRevision.objects.select_related("agent", "agent__session").get(
            pk=revision_pk
        )
        entries.append(selectors.history_entry(revision))
    if enforcer_event_pks:
        events = EnforcerEvent.objects.filter(pk__in=enforcer_event_pks).select_related(
            "agent", "agent__session"
        )
        entries += [selectors.enforcer_history_entry(event) for event in events]
    # Inserted one by one at the top, so the newest must come last.
    entries.sort(key=lambda entry: entry.at)
    parts += [
        render_to_string("dashboard/_history_entry.html", {"entry": entry, "oob": True})
        for entry in entries
    ]
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


class PlanDecided(TypedDict):
    """To agents waiting on a plan (agent sockets, held hooks): it left pending; re-read it."""

    type: Literal["plan.decided"]
    plan_id: int


def plan_decided(*, plan_pk: int) -> None:
    _send(plan_group(plan_pk), PlanDecided(type="plan.decided", plan_id=plan_pk))


def plans_changed(*, plan_pks: list[int]) -> None:
    """Plans were submitted, decided, withdrawn or expired: the header count, the queue, the
    session boards and overview rows, and the review pages of these plans."""
    from dashboard import selectors
    from planmode import fragments
    from planmode.selectors import plans_by_pk

    plans = plans_by_pk(plan_pks)
    send_fragment(HEADER_GROUP, render_plans_waiting())
    send_fragment(PLANS_GROUP, fragments.render_queue(flash_pks=plan_pks, oob=True))
    for session_pk in sorted({plan.session_id for plan in plans}):
        summary = selectors.session_summary(session_pk)
        header = render_to_string(
            "dashboard/_session_header.html", {"summary": summary, "oob": True}
        )
        board_plans = fragments.render_session_plans(session_pk, flash_pks=plan_pks, oob=True)
        send_fragment(session_group(session_pk), header + board_plans)
        session_changed_on_overview(summary=summary)
    # Every page of an agent's plan thread shows the thread's decision history.
    for plan in {plan.agent_id: plan for plan in plans}.values():
        thread = fragments.render_thread(plan, oob=True)
        for review_pk in fragments.thread_plan_pks(plan):
            send_fragment(plan_review_group(review_pk), thread)
    for plan in plans:
        if not plan.is_pending:
            send_fragment(plan_review_group(plan.pk), fragments.render_decision_panel(plan))
