"""What waits on the lead comes first: the overview's pinned rows, the board's banner, the
agent's card, the tab title; and every row says which session it is."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from dashboard.models import Session
from tests.conftest import parse_html, todo, write_todos
from tests.domain import plan_decide, plan_submit
from tests.hooks.conftest import SESSION_ID, load_fixture

pytestmark = pytest.mark.django_db

PLAN = "# Cursor pagination for orders\n\n1. Add `?after=<id>`\n"


@pytest.fixture
def lead(client, reviewer):
    client.force_login(reviewer)
    return client


def overview_rows(client) -> list:
    return parse_html(client.get("/").content).find_all("li", cls="session-row")


def age(session_id: str, minutes: float) -> None:
    Session.objects.filter(session_id=session_id).update(
        last_seen_at=timezone.now() - timedelta(minutes=minutes)
    )


def test_a_session_waiting_on_a_plan_is_pinned_above_the_rest_with_how_long_it_waited(lead, user):
    for name in ("sess-new", "sess-mid", "sess-old"):
        write_todos(user, name, name, [todo("Work", "in_progress")], cwd=f"/home/dana/{name}")
    plan_submit(
        owner=user,
        session_id="sess-old",
        agent_id="sess-old",
        plan=PLAN,
        plan_file_path=None,
        source="api",
    )
    age("sess-old", 50)
    age("sess-mid", 5)

    rows = overview_rows(lead)

    assert [row.find(cls="project").text() for row in rows] == ["sess-old", "sess-new", "sess-mid"]
    status = rows[0].find(cls="row-status")
    # Submitted a moment ago (a second on a busy machine).
    assert re.search(r"Plan waiting [01] s", status.text())
    assert status.find(cls="wait-what").text() == "Cursor pagination for orders"
    assert rows[0].find("a", cls="needs-you").attrs["href"].startswith("/plans/")
    assert rows[0].attrs["data-group"] == "waiting"


def test_ended_sessions_come_after_running_ones_and_say_they_ended(lead, user):
    write_todos(user, "sess-ended", "sess-ended", [todo("Work")], cwd="/home/dana/ended")
    write_todos(user, "sess-running", "sess-running", [todo("Work")], cwd="/home/dana/running")
    age("sess-running", 20)
    Session.objects.filter(session_id="sess-ended").update(ended_at=timezone.now())

    rows = overview_rows(lead)

    assert [row.find(cls="project").text() for row in rows] == ["running", "ended"]
    assert "is-ended" in rows[1].classes
    assert rows[1].find(cls="live-dot").attrs["aria-label"] == "ended"
    assert rows[1].find(cls="row-status").text() == "ended"


def test_a_row_names_its_session_by_the_first_prompt_with_branch_and_short_id(lead, hook, user):
    first = load_fixture(
        "user_prompt_submit.json", prompt="Add a dark mode toggle\nto the settings page"
    )
    assert hook(first).status_code == 200
    hook(load_fixture("user_prompt_submit.json", prompt="Also make it keyboard accessible"))
    hook(load_fixture("session_start.json", git_branch="feature/dark-mode"))

    row = overview_rows(lead)[0]

    title = row.find(cls="row-title")
    assert title.find("a", cls="session-link").text() == "Add a dark mode toggle"
    assert "feature/dark-mode" in title.find(cls="branch").text()
    assert title.find("code", cls="short-id").text() == SESSION_ID[:8]


def test_a_session_without_a_prompt_is_titled_by_its_first_plan(lead, user):
    plan_submit(
        owner=user,
        session_id="sess-api",
        agent_id="sess-api",
        plan=PLAN,
        plan_file_path=None,
        source="api",
    )
    plan_submit(
        owner=user,
        session_id="sess-api",
        agent_id="sess-api",
        plan="# Another plan\n",
        plan_file_path=None,
        source="api",
    )

    row = overview_rows(lead)[0]

    assert row.find("a", cls="session-link").text() == "Cursor pagination for orders"


def test_rows_of_one_project_can_be_told_apart(lead, user):
    for number, prompt in enumerate(["Fix the login form", "Add CSV export"]):
        session_id = f"sess-{number}"
        write_todos(user, session_id, session_id, [todo("Work")], cwd="/home/dana/admin-ui")
        Session.objects.filter(session_id=session_id).update(title=prompt)

    titles = {row.find("a", cls="session-link").text() for row in overview_rows(lead)}

    assert titles == {"Fix the login form", "Add CSV export"}


def test_the_board_leads_with_a_banner_for_a_waiting_plan_and_the_card_says_it_waits(lead, user):
    plan = plan_submit(
        owner=user,
        session_id="sess-b",
        agent_id="sess-b",
        plan=PLAN,
        plan_file_path=None,
        source="api",
    )

    document = parse_html(lead.get("/sessions/sess-b/").content)

    banner = document.find("section", id="session-attention")
    assert "hidden" not in banner.attrs
    assert "Cursor pagination for orders" in banner.text()
    assert banner.find("a", cls="button").attrs["href"] == f"/plans/{plan.pk}/"
    card = document.find("article", cls="card")
    assert "Waiting for a review of its plan Cursor pagination for orders" in card.text()


def test_a_decided_plan_leaves_no_banner_and_the_card_stops_waiting(lead, user, reviewer):
    plan = plan_submit(
        owner=user,
        session_id="sess-b",
        agent_id="sess-b",
        plan=PLAN,
        plan_file_path=None,
        source="api",
    )
    plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=True)

    document = parse_html(lead.get("/sessions/sess-b/").content)

    assert "hidden" in document.find("section", id="session-attention").attrs
    assert "Waiting for a review" not in document.find("article", cls="card").text()


def test_the_tab_title_counts_plans_for_a_reviewer_but_not_for_a_watcher(client, user, reviewer):
    plan_submit(
        owner=user,
        session_id="sess-t",
        agent_id="sess-t",
        plan=PLAN,
        plan_file_path=None,
        source="api",
    )
    watcher = User.objects.create_user("watcher", password="a-long-password-9")

    client.force_login(reviewer)
    reviewer_page = parse_html(client.get("/").content)
    client.force_login(watcher)
    watcher_page = parse_html(client.get("/").content)

    assert reviewer_page.find("title").text() == "(1) Sessions · Agentboard"
    assert "can-review" in reviewer_page.find("body").classes
    assert watcher_page.find("title").text() == "Sessions · Agentboard"
    assert "watch-only" in watcher_page.find("body").classes
