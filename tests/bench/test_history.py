"""The year-of-history generator (`python -m tests.bench.history`): its rows are what the write
path stores, its search index is what `rebuild_search` makes of them, its audit log what the
write path records, and a few sessions wait on a person now."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db.models import Count
from django.test import Client

from dashboard.activity.models import Step
from dashboard.core.audit import Via, _entry
from dashboard.models import Agent, AuditAction, AuditEntry, Session
from dashboard.search.models import SearchEntry
from planmode.models import Decision, PermissionRequest, Plan
from planmode.services import _decision_summary, feedback_with_annotations
from planmode.tool_display import describe
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


RECORDED = (
    "at", "actor_id", "actor_name", "rule", "action", "session_id", "session_key", "project_id",
    "project_name", "team_id", "about", "summary", "surface", "address",
)  # fmt: skip


def recorded(entry: AuditEntry) -> tuple:
    return tuple(getattr(entry, name) for name in RECORDED)


def test_every_decision_a_person_made_is_in_the_audit_log_as_the_write_path_records_it(year):
    made = {entry.about: entry for entry in AuditEntry.objects.all()}
    decisions = Decision.objects.select_related("plan__session", "decided_by")
    answered = PermissionRequest.objects.filter(status__in=["allowed", "denied"])
    assert decisions.exists() and answered.exists()
    for decision in decisions:
        plan = decision.plan
        said = feedback_with_annotations(
            decision.feedback or decision.notes, list(plan.annotations.order_by("pk"))
        )
        entry = made[f"plan:{plan.pk}"]
        expected = _entry(
            AuditAction.PLAN_APPROVED_AUTO
            if decision.outcome == "approved"
            else AuditAction.PLAN_REJECTED,
            actor=decision.decided_by, via=Via(entry.surface, entry.address),
            session=plan.session, about=f"plan:{plan.pk}", summary=_decision_summary(plan, said),
        )  # fmt: skip
        expected.at = decision.decided_at
        assert recorded(entry) == recorded(expected)
        assert entry.surface in ("review page", "keyboard shortcut") and entry.address
    for request in answered.select_related("session", "decided_by"):
        view = describe(request.tool_name, request.tool_input)
        said = f"{view.tool}: {view.headline}"
        if request.message:  # a denial's message to the agent
            said += f"\n{request.message}"
        entry = made[f"request:{request.pk}"]
        expected = _entry(
            f"request.{request.status}", actor=request.decided_by,
            via=Via(entry.surface, entry.address), session=request.session,
            about=f"request:{request.pk}", summary=said,
        )  # fmt: skip
        expected.at = request.decided_at
        assert recorded(entry) == recorded(expected)
    # Nothing else of the sessions' work: requests the agent moved on from were never answered.
    assert AuditEntry.objects.filter(session__isnull=False).count() == len(decisions) + len(
        answered
    )
    # And the team's own: sign-ins, tokens and rules, over the year.
    kinds = set(AuditEntry.objects.values_list("action", flat=True))
    assert {"auth.signed_in", "token.created", "token.revoked", "rule.added"} <= kinds
    assert year["audit entries"] == AuditEntry.objects.count()
    assert NOW - AuditEntry.objects.order_by("at").first().at > timedelta(days=200)


def test_an_admin_reads_the_year_on_the_audit_page_newest_first_and_filtered(year):
    admin = User.objects.create_superuser("audit-admin", password="x")
    client = Client()
    client.force_login(admin)
    newest = AuditEntry.objects.order_by("-at", "-pk").first()
    project = AuditEntry.objects.exclude(project_name="").values_list("project_name", flat=True)[0]
    person = AuditEntry.objects.filter(action__startswith="plan.").values_list(
        "actor_name", flat=True
    )[0]
    pages = {
        "/audit/": lambda row: True,
        f"/audit/?project={project}": lambda row: f" in {project}" in re.sub("<[^>]+>", "", row),
        f"/audit/?person={person}": lambda row: f'<th scope="row">{person}</th>' in row,
    }
    for path, belongs in pages.items():
        response = client.get(path)
        assert response.status_code == 200, path
        rows = re.findall(r"<tr>(.*?)</tr>", response.content.decode(), re.S)[1:]
        assert rows and [row for row in rows if not belongs(row)] == [], path
        moments = re.findall(r'<time datetime="([^"]+)"', "".join(rows))
        assert moments == sorted(moments, reverse=True), path
    first = re.findall(r"<tr>(.*?)</tr>", client.get("/audit/").content.decode(), re.S)[1]
    assert f'<th scope="row">{newest.actor_name}</th>' in first and newest.surface in first
