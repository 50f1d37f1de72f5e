"""What the Agentboard plugin for opencode reports, as the board stores and shows it."""

from __future__ import annotations

import pytest

from dashboard.models import Agent, Client, Session
from planmode.models import PermissionRequest
from tests.conftest import parse_html
from tests.opencode.conftest import (
    SESSION,
    SUBAGENT,
    asked,
    item,
    session_event,
    todo_event,
)
from todos.models import Continuation, TodoRevision


def todos_of(agent_api, session_id: str, agent_id: str) -> list[tuple[str, str, str | None]]:
    body = agent_api.get_todos(session_id, agent_id).json()
    return [(t["content"], t["status"], t.get("priority")) for t in body["todos"]]


def test_a_session_and_its_list_show_as_an_opencode_session(opencode, agent_api):
    assert opencode(session_event("created", title="New session - 2026-11-23")).json() == {}
    opencode(session_event("updated", title="Add a dark mode toggle"))
    response = opencode(
        todo_event([item("Add the toggle", "in_progress", "high"), item("Drop IE", "cancelled")])
    )

    assert response.status_code == 200
    session = Session.objects.get(session_id=SESSION)
    assert session.client == Client.OPENCODE
    assert session.title == "Add a dark mode toggle"
    assert session.project == "shop"
    assert todos_of(agent_api, SESSION, SESSION) == [
        ("Add the toggle", "in_progress", "high"),
        ("Drop IE", "cancelled", "medium"),
    ]


def test_a_list_opencode_completed_reads_back_all_done_over_the_api(opencode, agent_api):
    opencode(todo_event([item("Add the toggle", "in_progress"), item("Test it", "pending")]))
    opencode(todo_event([item("Add the toggle", "completed"), item("Test it", "completed")]))

    assert todos_of(agent_api, SESSION, SESSION) == [
        ("Add the toggle", "completed", "medium"),
        ("Test it", "completed", "medium"),
    ]
    read = agent_api.get(f"/api/v1/sessions/{SESSION}").json()
    assert (read["progress"]["completed"], read["progress"]["total"]) == (2, 2)


def test_a_placeholder_title_does_not_name_the_session(opencode):
    opencode(session_event("created", title="New session - 2026-11-23T03:05:36.850Z"))

    assert Session.objects.get(session_id=SESSION).title == ""


def test_the_same_list_reported_twice_is_one_revision(opencode):
    opencode(todo_event([item("Add the toggle", "in_progress")]))
    opencode(todo_event([item("Add the toggle", "in_progress")]))

    assert TodoRevision.objects.count() == 1


def test_a_subagent_session_is_a_card_of_the_session_that_started_it(opencode, agent_api):
    opencode(session_event("created"))
    opencode(
        session_event(
            "created", SUBAGENT, parentID=SESSION, title="Find the theme code (@explore subagent)"
        )
    )
    opencode(todo_event([item("Search for the theme", "in_progress")], session_id=SUBAGENT))

    child = Agent.objects.get(agent_id=SUBAGENT)
    assert child.session.session_id == SESSION
    assert child.agent_type == "Explore"
    assert child.parent.agent_id == SESSION
    assert not Session.objects.filter(session_id=SUBAGENT).exists()
    assert todos_of(agent_api, SESSION, SUBAGENT) == [
        ("Search for the theme", "in_progress", "medium")
    ]


def test_a_deleted_session_ends_with_its_agents(opencode):
    opencode(session_event("created"))
    opencode(session_event("created", SUBAGENT, parentID=SESSION))
    opencode(session_event("deleted"))

    session = Session.objects.get(session_id=SESSION)
    assert session.ended_at is not None
    assert set(session.agents.values_list("status", flat=True)) == {Agent.Status.STOPPED}


def test_events_opencode_sends_that_the_board_does_not_use_are_ignored(opencode):
    response = opencode({"type": "message.part.delta", "properties": {"delta": "Hel"}})

    assert response.status_code == 200
    assert response.json() == {}
    assert not Session.objects.exists()


@pytest.mark.parametrize(
    ("payload", "status", "sentence"),
    [
        ("not json", 400, "not valid JSON"),
        ([1, 2], 400, "JSON object"),
        ({"properties": {}}, 422, "type"),
        (todo_event([{"content": "Ship", "status": "shipped"}]), 422, "status"),
        (todo_event([item("")]), 422, "content"),
        ({"type": "todo.updated", "properties": {"todos": []}}, 422, "sessionID"),
        (todo_event([item("Ship\u0000it")]), 422, "NUL"),
        (session_event("created", "bad id with spaces"), 422, "session_id"),
        (
            {"type": "agentboard.activity", "properties": {"sessionID": SESSION, "kind": "x"}},
            422,
            "kind",
        ),
        ({"type": "permission.asked", "properties": {"sessionID": SESSION}}, 422, "id"),
        (asked(metadata={"command": "rm\u0000 -rf"}), 422, "NUL"),
        (asked(permission=["bash"]), 422, "permission"),
        (asked(patterns="rm -rf build"), 422, "patterns"),
        (asked(id="x" * 201), 422, "id"),
        ({"type": "session.idle", "properties": {}}, 422, "sessionID"),
        ({"type": "session.idle", "properties": {"sessionID": 7}}, 422, "sessionID"),
    ],
)
def test_a_bad_event_is_refused_with_one_sentence_and_changes_nothing(
    opencode, payload, status, sentence
):
    response = opencode(payload)

    assert response.status_code == status, response.content
    message = response.json()["error"]["message"]
    assert sentence.lower() in message.lower(), message
    assert not Session.objects.exists()
    assert not TodoRevision.objects.exists()
    assert not PermissionRequest.objects.exists()
    assert not Continuation.objects.exists()


def test_an_event_without_a_valid_token_is_refused(agent_api):
    agent_api.token = "ab_not-a-token"
    response = agent_api.post("/hooks/opencode", todo_event([item("Ship")]))

    assert response.status_code == 401
    assert not Session.objects.exists()


def test_only_post_is_accepted(agent_api):
    assert agent_api.get("/hooks/opencode").status_code == 405


def test_the_card_says_when_oh_my_opencodes_enforcer_looks_after_the_session(
    opencode, client, user
):
    opencode(todo_event([item("Add the toggle", "in_progress")]))
    opencode(
        {
            "type": "agentboard.other_enforcer",
            "properties": {"sessionID": SESSION, "name": "oh-my-opencode"},
        }
    )
    client.force_login(user)

    board = parse_html(client.get(f"/sessions/{SESSION}/").content)

    note = board.find("article", cls="card").find(cls="card-note").text()
    assert "oh-my-opencode continues this agent with its own enforcer" in note
    assert "oh-my-opencode" in board.find(cls="enforcer-switch").text()


def _tool_batch(user, session_id: str, prefix: str) -> list[str]:
    """The statements of one writer batch of four tool events (two calls) of an opencode
    session, as its plugin reports them."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from dashboard.activity.services import steps_store
    from dashboard.activity.summaries import step_draft
    from dashboard.core.writer import Writer, _Job
    from dashboard.integrations.opencode.views import _step_record

    writer = Writer()
    writer.within_batch.append(steps_store)
    jobs = []
    for n in range(4):
        draft = step_draft(
            tool_use_id=f"{prefix}-{n // 2}",
            tool_name="bash",
            tool_input={"command": f"make {n}"},
            at=timezone.now(),
            outcome="running" if n % 2 == 0 else "ok",
        )
        kwargs = {"owner": user, "opencode_id": session_id, "step": draft}
        jobs.append(_Job(func=_step_record, kwargs=kwargs, loop=None))
        jobs[-1].future.set_running_or_notify_cancel()
    with CaptureQueriesContext(connection) as queries:
        outcomes, _ = writer._transaction(jobs)
    assert all(error is None for _, _, error in outcomes)
    return [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]


def test_a_subagents_steps_cost_no_query_of_their_own_like_the_main_agents(opencode, user):
    opencode(session_event("created"))
    opencode(session_event("created", SUBAGENT, parentID=SESSION))
    _tool_batch(user, SESSION, "warm")  # what needs a look is read once per process

    main = _tool_batch(user, SESSION, "main")
    child = _tool_batch(user, SUBAGENT, "child")

    assert len(child) == len(main)
    assert not [sql for sql in child if "dashboard_agent" in sql or "dashboard_session" in sql]
    assert Agent.objects.get(agent_id=SUBAGENT).steps.count() == 2
