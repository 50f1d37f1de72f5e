"""The year-of-history generator (`python -m tests.bench.history`): its rows are what the write
path stores, its search index is what `rebuild_search` makes of them, and a few sessions wait
on a person now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.db.models import Count

from dashboard.activity.models import Step
from dashboard.models import Agent, Session
from dashboard.search.models import SearchEntry
from planmode.models import Decision, PermissionRequest, Plan
from tests.bench.history import RUNNING_NOW, generate
from todos.models import Todo, TodoRevision

pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)


@pytest.fixture
def year():
    return generate(scale=0.0005, now=NOW)


def entries() -> list[tuple]:
    return sorted(
        SearchEntry.objects.values_list(
            "kind", "ref", "parent", "session_id", "owner_id", "at", "title", "body"
        )
    )


def test_the_index_made_in_bulk_is_the_one_rebuild_search_makes(year):
    made = entries()
    assert {kind for kind, *_ in made} == {
        "session", "todos", "plan", "comment", "decision", "request", "step",
    }  # fmt: skip
    SearchEntry.objects.all().delete()
    call_command("rebuild_search", stdout=open("/dev/null", "w"))
    assert entries() == made


def test_a_year_of_sessions_most_ended_a_few_running_and_waiting_now(year):
    assert year["sessions"] == 30 and year["tool steps"] == 5_000
    assert year["todo revisions"] == 1_500 and year["permission requests"] == 100
    running = Session.objects.filter(ended_at__isnull=True)
    assert running.count() == RUNNING_NOW
    assert all(NOW - s.last_seen_at < timedelta(minutes=5) for s in running)
    first = Session.objects.order_by("started_at").first().started_at
    assert NOW - first > timedelta(days=200)
    # Working hours on working days, mostly.
    ended = Session.objects.filter(ended_at__isnull=False)
    assert sum(7 <= s.started_at.hour <= 22 for s in ended) == ended.count()
    assert PermissionRequest.objects.filter(status="pending").count() == 2
    pending_plan = Plan.objects.get(status="pending")
    assert pending_plan.session.ended_at is None
    # Every agent's current list is its latest revision's.
    agent = Agent.objects.annotate(n=Count("revisions")).filter(n__gt=0).first()
    latest = TodoRevision.objects.filter(agent=agent).order_by("-number").first()
    assert agent.todo_revision == latest.number
    assert [t.content for t in Todo.objects.filter(agent=agent)] == [
        item["content"] for item in latest.new_todos
    ]
    assert (
        Decision.objects.count() == Plan.objects.filter(status__in=["approved", "rejected"]).count()
    )
    # Steps and sessions carry the projects, people and machines the overview filters by.
    assert Session.objects.values("project_record").distinct().count() > 3
    assert Session.objects.exclude(host="").count() == 30
    assert Step.objects.filter(outcome="running").count() == RUNNING_NOW
