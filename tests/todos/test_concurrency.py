"""Writes for one agent arrive at the same moment from several connections (threads here)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from itertools import pairwise

import pytest
from django.db import connections

from dashboard.models import Agent, Session
from tests.conftest import todo, write_todos
from todos.models import TodoRevision
from todos.selectors import current_todos

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = "sess-race"
WRITERS = 8


def run_at_once(count: int, work: Callable[[int], object]) -> tuple[dict[int, object], list]:
    """Run work(0..count-1) in threads released together; each closes its own connection."""
    barrier = threading.Barrier(count)
    results: dict[int, object] = {}
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[n] = work(n)
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a writer never finished"
    return results, errors


def test_concurrent_writes_for_one_agent_leave_exactly_one_submitted_list(user):
    lists = [
        [
            todo(f"Writer {n} step {step}", "in_progress" if step == 0 else "pending")
            for step in range(n % 3 + 2)
        ]
        for n in range(WRITERS)
    ]

    results, errors = run_at_once(
        WRITERS, lambda n: write_todos(user, SESSION, SESSION, lists[n]).revision
    )

    assert errors == []
    assert sorted(results.values()) == list(range(1, WRITERS + 1))
    agent = Agent.objects.get(session__session_id=SESSION, agent_id=SESSION)
    revisions = list(agent.revisions.order_by("number"))
    assert [r.number for r in revisions] == list(range(1, WRITERS + 1))
    assert agent.todo_revision == WRITERS
    stored = current_todos(agent)
    assert stored in lists
    assert stored == revisions[-1].new_todos
    # Serialized in some order: each write saw exactly the list the one before it left.
    assert revisions[0].old_todos == []
    for earlier, later in pairwise(revisions):
        assert later.old_todos == earlier.new_todos
    for n, revision_number in results.items():
        assert revisions[revision_number - 1].new_todos == lists[n]


def test_concurrent_first_writes_create_the_session_once(user):
    results, errors = run_at_once(
        WRITERS, lambda n: write_todos(user, SESSION, f"agent-{n}", [todo(f"Task {n}")]).revision
    )

    assert errors == []
    assert set(results.values()) == {1}
    session = Session.objects.get(session_id=SESSION)
    agent_ids = set(session.agents.values_list("agent_id", flat=True))
    assert agent_ids == {SESSION, *(f"agent-{n}" for n in range(WRITERS))}


def test_concurrent_retries_with_one_idempotency_key_make_one_revision(user):
    items = [todo("Run tests", "in_progress")]

    results, errors = run_at_once(
        WRITERS,
        lambda n: write_todos(user, SESSION, SESSION, items, idempotency_key="toolu_1").revision,
    )

    assert errors == []
    assert set(results.values()) == {1}
    assert TodoRevision.objects.count() == 1
