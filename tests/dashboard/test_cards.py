"""What a card reads: its agent's list, countdown, waiting plan and newest flags, with queries
compiled once per process (`dashboard.core.sql.PreparedQuery`)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard.board import selectors
from dashboard.core.sql import PreparedQuery
from dashboard.models import Agent
from tests.conftest import todo, write_todos
from todos.models import EnforcerEvent, Todo, TodoRevision

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = "sess-cards"


def agent_pk(agent_id: str) -> int:
    return Agent.objects.get(session__session_id=SESSION, agent_id=agent_id).pk


def flag(agent: int, text: str, minutes_ago: int, kind: str = EnforcerEvent.Kind.FLAG) -> None:
    EnforcerEvent.objects.create(
        agent_id=agent,
        kind=kind,
        code="x",
        text=text,
        created_at=timezone.now() - timedelta(minutes=minutes_ago),
    )


def test_a_card_shows_the_newest_five_flags_of_its_own_agent(user):
    write_todos(user, SESSION, SESSION, [todo("Build", "in_progress")])
    write_todos(user, SESSION, "helper", [todo("Search")], agent_type="Explore")
    main, helper = agent_pk(SESSION), agent_pk("helper")
    for n in range(7):
        flag(main, f"main flag {n}", minutes_ago=10 - n)  # flag 6 is the newest
    flag(main, "a reminder, not a flag", minutes_ago=0, kind=EnforcerEvent.Kind.REMINDER)
    flag(helper, "helper flag", minutes_ago=30)

    cards = {card.agent.pk: card for card in selectors.agent_cards([main, helper])}

    assert [event.text for event in cards[main].flag_history] == [
        f"main flag {n}" for n in (6, 5, 4, 3, 2)
    ]
    assert [event.text for event in cards[helper].flag_history] == ["helper flag"]
    # The page's cards read the same.
    on_page = {card.agent.pk: card for card in selectors.board_cards(cards[main].agent.session)}
    assert on_page[main].flag_history == cards[main].flag_history
    assert [t.content for t in on_page[main].todos] == ["Build"]


_pending_todos = PreparedQuery(
    Todo, lambda pks: Todo.objects.filter(agent_id__in=pks, status="pending").order_by("pk")
)
_revisions = PreparedQuery(
    TodoRevision,
    lambda pks: TodoRevision.objects.filter(pk__in=pks).select_related("agent__session"),
)


def test_a_prepared_read_answers_as_the_orm_for_any_ids(user):
    for n in range(4):
        write_todos(user, SESSION, f"agent-{n}", [todo(f"A{n}", "completed"), todo(f"P{n}")])
    pks = sorted(Agent.objects.values_list("pk", flat=True))

    def orm(ids: list[int]) -> list[int]:
        return list(
            Todo.objects.filter(agent_id__in=ids, status="pending")
            .order_by("pk")
            .values_list("pk", flat=True)
        )

    # The same number of ids twice: the second run uses its own ids, not the first's.
    for ids in ([pks[0]], [pks[1]], pks[:2], pks[2:], pks, [*pks, *range(10_000, 10_070)]):
        assert [t.pk for t in _pending_todos.rows(ids)] == orm(ids)
    assert _pending_todos.rows([]) == []

    revision_pk = TodoRevision.objects.order_by("pk").values_list("pk", flat=True).first()
    _revisions.rows([revision_pk])  # compiled here
    with CaptureQueriesContext(connection) as queries:
        (revision,) = _revisions.rows([revision_pk])
        # Related rows, dates and JSON come as the ORM gives them, with no further query.
        assert revision.agent.session.session_id == SESSION
        assert isinstance(revision.received_at, datetime)
        assert revision.received_at.tzinfo is not None
        assert revision.new_todos[0]["content"] == "A0"
    assert len(queries) == 1
