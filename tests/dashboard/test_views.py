from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.staticfiles import finders
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard.models import Agent, Session
from tests.conftest import parse_html, todo, write_todos
from todos import enforcer

pytestmark = pytest.mark.django_db

SESSION = "sess-board"


@pytest.fixture
def logged_in(client, user):
    client.force_login(user)
    return client


def page(client, url: str):
    response = client.get(url)
    assert response.status_code == 200
    return parse_html(response.content)


def card_of(document, label: str):
    for card in document.find_all("article", cls="card"):
        if card.find(cls="agent-label").text() == label:
            return card
    raise AssertionError(f"no card labelled {label!r}")


# --- login ------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/", f"/sessions/{SESSION}/"])
def test_pages_send_a_visitor_who_is_not_logged_in_to_the_login_page(client, url):
    response = client.get(url)

    assert response.status_code == 302
    assert response.url == f"/accounts/login/?next={url}"


def test_the_login_page_logs_a_reviewer_in(client, user):
    assert client.get("/accounts/login/").status_code == 200

    response = client.post(
        "/accounts/login/", {"username": "dana", "password": "a-long-password-1"}
    )

    assert response.status_code == 302
    assert response.url == "/"


# --- overview ---------------------------------------------------------------------------------


def test_the_overview_lists_sessions_with_the_newest_activity_first(logged_in, user, other_user):
    write_todos(user, "s-alpha", "s-alpha", [todo("A")], cwd="/src/alpha")
    write_todos(other_user, "s-beta", "s-beta", [todo("B")], cwd="/src/beta")
    write_todos(user, "s-gamma", "s-gamma", [todo("C")], cwd="/src/gamma")
    write_todos(user, "s-alpha", "s-alpha", [todo("A", "in_progress")], cwd="/src/alpha")

    rows = page(logged_in, "/").find_all("li", cls="session-row")

    assert [row.find(cls="project").text() for row in rows] == ["alpha", "gamma", "beta"]


def test_an_overview_row_shows_project_owner_mode_agents_and_progress(logged_in, other_user):
    write_todos(
        other_user,
        SESSION,
        SESSION,
        [
            todo("Fix tests", "completed"),
            todo("Update docs", "in_progress", "Updating docs"),
            todo("Run build"),
        ],
        cwd="/home/ana/shop",
    )
    write_todos(other_user, SESSION, "agent-2", [todo("Search", "completed")], agent_type="Explore")
    Session.objects.update(permission_mode="acceptEdits")

    row = page(logged_in, "/").find("li", cls="session-row")

    assert row.find(cls="project").text() == "shop"
    assert row.find(cls="row-project").text() == "shop API"
    assert row.find(cls="row-owner").text() == "ana · unknown machine · acceptEdits"
    assert row.find(cls="owner").attrs["title"] == "Person ana"
    assert row.find(cls="agents").text() == "2 agents"
    assert row.find(cls="count").text() == "2/4"
    bar = row.find(role="progressbar")
    assert (bar.attrs["aria-valuenow"], bar.attrs["aria-valuemax"]) == ("2", "4")
    assert row.find(cls="activity").text() == "▶ Updating docs"
    assert row.find("a", cls="session-link").attrs["href"] == f"/sessions/{SESSION}/"


def test_the_filter_box_finds_a_row_by_person_machine_branch_and_what_it_does(
    logged_in, other_user
):
    other_user.first_name, other_user.last_name = "Ana", "Lima"
    other_user.save()
    write_todos(
        other_user, SESSION, SESSION, [todo("Update docs", "in_progress", "Updating docs")],
        cwd="/home/ana/shop",
    )  # fmt: skip
    Session.objects.update(host="ana-laptop", branch="Feature/Docs", title="Docs <b>pass</b>")

    row = page(logged_in, "/").find("li", cls="session-row")

    words = row.attrs["data-search"].split()
    assert {"shop", "ana", "lima", "ana-laptop", "feature/docs", "updating", "<b>pass</b>"} <= set(
        words
    )
    assert SESSION.lower() in words


def test_an_overview_row_says_when_the_session_is_in_plan_mode(logged_in, user):
    write_todos(user, SESSION, SESSION, [todo("Research")])
    Session.objects.update(permission_mode="plan")

    row = page(logged_in, "/").find("li", cls="session-row")

    assert "plan mode on" in row.find(cls="row-status").text()


def test_the_overview_explains_what_to_do_when_there_are_no_sessions(logged_in):
    document = page(logged_in, "/")

    assert document.find_all("li", cls="session-row") == []
    assert "No sessions yet" in document.find("ol", id="session-list").text()


# --- session board ----------------------------------------------------------------------------


def test_the_board_shows_the_main_agent_first_then_subagents_labelled_by_type(logged_in, user):
    write_todos(user, SESSION, "a4d2c8e1f0", [todo("Search")], agent_type="Explore")
    write_todos(user, SESSION, "b71f09aa33", [todo("Draft")])
    write_todos(user, SESSION, "c0ffee1234", [todo("Design")], agent_type="Plan")
    write_todos(user, SESSION, SESSION, [todo("Lead")])
    # The main agent comes first even when it started after its subagents.
    Agent.objects.filter(agent_id=SESSION).update(started_at=timezone.now() + timedelta(hours=1))

    cards = page(logged_in, f"/sessions/{SESSION}/").find_all("article", cls="card")

    assert [card.find(cls="card-title").text() for card in cards] == [
        "main",
        "Explore a4d2c8",
        "subagent b71f09",
        "Plan c0ffee",
    ]


def test_a_card_shows_each_item_the_way_the_terminal_does(logged_in, user):
    write_todos(
        user,
        SESSION,
        SESSION,
        [
            todo("Fix tests", "completed"),
            todo("Run tests", "in_progress", "Running tests"),
            todo("Run build"),
            todo("Old idea", "cancelled"),
            todo("Write docs"),
        ],
    )

    card = card_of(page(logged_in, f"/sessions/{SESSION}/"), "main")

    items = {item.find(cls="text").text(): item for item in card.find_all("li", cls="todo")}
    assert items["Fix tests"].find(cls="box").text() == "☒"
    assert "is-completed" in items["Fix tests"].classes
    assert items["Run build"].find(cls="box").text() == "☐"
    assert items["Old idea"].find(cls="box").text() == "⊘"
    assert "is-cancelled" in items["Old idea"].classes
    running = card.find("li", cls="is-in_progress")
    assert running.find("strong").text() == "Running tests…"
    assert card.find(cls="tasks-count").text() == "Tasks (1/4)"
    assert card.find(cls="next").text() == "Next: Run build"


def test_completed_and_cancelled_items_are_struck_through(logged_in):
    stylesheet = finders.find("css/agentboard.css")
    rules = open(stylesheet, encoding="utf-8").read()

    assert re.search(
        r"/static/css/agentboard\.[0-9a-f]{12}\.css", logged_in.get("/").content.decode()
    )
    for selector in (".todo.is-completed .text", ".todo.is-cancelled .text"):
        rule = rules.split(selector, 1)[1].split("}", 1)[0]
        assert "line-through" in rule


def test_a_card_shows_the_older_items_priority(logged_in, user):
    write_todos(
        user,
        SESSION,
        SESSION,
        [
            {"id": "1", "content": "Fix tests", "status": "pending", "priority": "high"},
        ],
    )

    item = card_of(page(logged_in, f"/sessions/{SESSION}/"), "main").find("li", cls="todo")

    assert item.find(cls="priority").text() == "high"


@pytest.mark.parametrize(
    ("statuses", "flag"),
    [
        (["in_progress", "in_progress"], "More than one task is in progress at once."),
        (["completed", "pending"], "Nothing is in progress while tasks are still pending."),
    ],
)
def test_a_card_flags_a_list_with_a_discipline_problem(logged_in, user, statuses, flag):
    write_todos(user, SESSION, SESSION, [todo(f"T{n}", s) for n, s in enumerate(statuses)])
    # Flagged once the agent works on with the list so (a step of other work).
    agent = Agent.objects.select_related("session").get(agent_id=SESSION)
    enforcer.on_step(agent=agent, key="toolu_read")

    card = card_of(page(logged_in, f"/sessions/{SESSION}/"), "main")

    assert card.find("ul", cls="flags").text() == f"⚑ {flag}"


def test_a_card_with_a_sound_list_has_no_flags(logged_in, user):
    write_todos(user, SESSION, SESSION, [todo("A", "completed"), todo("B", "in_progress")])

    card = card_of(page(logged_in, f"/sessions/{SESSION}/"), "main")

    assert card.find_all("ul", cls="flags") == []
    assert card.find_all(cls="next") == []


def test_a_card_says_all_done_after_an_all_completed_write(logged_in, user):
    write_todos(user, SESSION, SESSION, [todo("A", "completed"), todo("B", "completed")])

    card = card_of(page(logged_in, f"/sessions/{SESSION}/"), "main")

    assert card.find(cls="tasks-count").text() == "Tasks (2/2)"
    assert card.find(cls="all-done").text() == "All 2 tasks completed."


def test_a_card_with_an_empty_list_says_so(logged_in, user):
    write_todos(user, SESSION, SESSION, [])

    card = card_of(page(logged_in, f"/sessions/{SESSION}/"), "main")

    assert card.find(cls="no-todos").text() == "No todos currently tracked."


def test_the_board_of_an_unknown_session_is_not_found(logged_in):
    assert logged_in.get("/sessions/nope/").status_code == 404


def test_the_board_lists_the_history_newest_first(logged_in, user):
    write_todos(user, SESSION, SESSION, [todo("A", "in_progress"), todo("B")])
    write_todos(user, SESSION, SESSION, [todo("A", "completed"), todo("B", "in_progress")])

    entries = page(logged_in, f"/sessions/{SESSION}/").find("ol", id="history").find_all("li")

    assert [entry.find(cls="rev").text() for entry in entries] == [
        "rev 2 · HTTP API",
        "rev 1 · HTTP API",
    ]
    assert entries[0].find(cls="what").text() == "completed “A”; started “B”"


# --- untrusted text ---------------------------------------------------------------------------

HOSTILE = '<script>alert("todo")</script>'
HOSTILE_FORM = "<img src=x onerror=alert(1)>"


@pytest.mark.parametrize("url", ["/", f"/sessions/{SESSION}/"])
def test_html_from_agents_shows_as_text(logged_in, user, url):
    write_todos(
        user,
        SESSION,
        SESSION,
        [todo(HOSTILE, "in_progress", HOSTILE_FORM), todo(HOSTILE)],
        cwd='/src/<b class="x">proj',
    )
    write_todos(user, SESSION, "agent-2", [todo("x")], agent_type="<i>Sneaky</i>")

    document = page(logged_in, url)

    assert all(
        script.attrs.get("src", "").startswith("/static/") for script in document.find_all("script")
    )
    assert document.find_all("img") == []
    assert document.find_all("b") == []
    assert document.find_all("i") == []
    assert HOSTILE_FORM in document.text()
    assert '<b class="x">proj' in document.text()


def test_the_board_shows_todo_html_as_text(logged_in, user):
    write_todos(user, SESSION, SESSION, [todo(HOSTILE, "in_progress", HOSTILE_FORM), todo(HOSTILE)])
    write_todos(user, SESSION, "agent-2", [todo("x")], agent_type="<i>Sneaky</i>")

    document = page(logged_in, f"/sessions/{SESSION}/")

    assert card_of(document, "main").find(cls="next").text() == f"Next: {HOSTILE}"
    assert card_of(document, "<i>Sneaky</i>")


# --- bounded queries --------------------------------------------------------------------------


def populate(owner, *, sessions: int, agents: int, todos: int) -> None:
    for s in range(sessions):
        session_id = f"sess-{s}"
        for a in range(agents):
            agent_id = session_id if a == 0 else f"{session_id}-agent-{a}"
            items = [
                todo(f"Task {n}", "completed" if n == 0 else "in_progress" if n == 1 else "pending")
                for n in range(todos)
            ]
            write_todos(
                owner,
                session_id,
                agent_id,
                items,
                agent_type="Explore" if a else "",
                cwd=f"/src/project-{s}",
            )


def queries_for(client, url: str) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return len(queries), response.content.decode()


@pytest.mark.parametrize("url", ["/", "/sessions/sess-0/"])
def test_pages_issue_the_same_number_of_queries_however_many_agents_and_todos(
    logged_in, user, django_assert_max_num_queries, url
):
    populate(user, sessions=1, agents=2, todos=3)
    queries_for(logged_in, url)  # warm caches shared by every request
    small, _ = queries_for(logged_in, url)

    populate(user, sessions=4, agents=20, todos=30)
    with django_assert_max_num_queries(small):
        response = logged_in.get(url)

    document = parse_html(response.content)
    if url == "/":
        assert len(document.find_all("li", cls="session-row")) == 4
    else:
        cards = document.find_all("article", cls="card")
        assert len(cards) == 20
        assert all(card.find(cls="tasks-count").text() == "Tasks (1/30)" for card in cards)
