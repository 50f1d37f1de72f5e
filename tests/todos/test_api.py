from __future__ import annotations

import json
import time

import pytest
from django.utils import timezone

from dashboard.core import services
from dashboard.core.services import TOKEN_CACHE_SECONDS, Session
from dashboard.models import AgentToken
from tests.conftest import AgentApi, todo, write_todos
from todos.models import Todo, TodoRevision

pytestmark = pytest.mark.django_db

SESSION = "sess-1"
LIST = [
    {"content": "Fix tests", "status": "completed", "activeForm": "Fixing tests"},
    {"content": "Update docs", "status": "in_progress", "activeForm": "Updating docs"},
    {"content": "Run build", "status": "pending", "activeForm": "Running build"},
]


def board_state() -> tuple:
    """Everything a refused write must leave alone."""
    return (
        list(Session.objects.values_list("session_id", "owner_id", "permission_mode")),
        list(Todo.objects.values_list("agent__agent_id", "position", "content", "status")),
        list(TodoRevision.objects.values_list("agent__agent_id", "number", "new_todos")),
    )


@pytest.fixture
def existing(agent_api) -> tuple:
    """An agent that already has a list, and the state a refused write must keep."""
    response = agent_api.put_todos(SESSION, SESSION, {"todos": [todo("Keep me", "in_progress")]})
    assert response.status_code == 200
    return board_state()


def error_of(response) -> dict:
    body = response.json()
    assert set(body) == {"error"}
    return body["error"]


# --- 200 --------------------------------------------------------------------------------------


def test_it_replaces_the_list_and_answers_with_the_whole_result(agent_api):
    response = agent_api.put_todos(SESSION, SESSION, {"todos": LIST})

    assert response.status_code == 200
    assert response.json() == {
        "revision": 1,
        "old_todos": [],
        "new_todos": LIST,
        "progress": {"completed": 1, "in_progress": 1, "pending": 1, "cancelled": 0, "total": 3},
        "rendered": "[x] Fix tests\n[>] Update docs <- Updating docs\n[ ] Run build\n\n"
        "(1/3 completed)",
    }


def test_the_next_write_reports_the_previous_list_as_old_todos(agent_api):
    agent_api.put_todos(SESSION, SESSION, {"todos": LIST})

    body = agent_api.put_todos(SESSION, SESSION, {"todos": [todo("Ship it")]}).json()

    assert (body["revision"], body["old_todos"], body["new_todos"]) == (2, LIST, [todo("Ship it")])


def test_it_accepts_the_older_item_shape_with_id_and_priority(agent_api):
    legacy = [
        {"id": "1", "content": "Fix tests", "status": "completed", "priority": "high"},
        {"id": "2", "content": "Run build", "status": "pending", "priority": "low"},
    ]

    response = agent_api.put_todos(SESSION, SESSION, {"todos": legacy})

    assert response.status_code == 200
    assert response.json()["new_todos"] == legacy
    assert agent_api.get_todos(SESSION, SESSION).json()["todos"] == legacy


def test_it_accepts_opencodes_cancelled_items(agent_api):
    items = [
        {"content": "Old idea", "status": "cancelled", "priority": "medium"},
        {"content": "Run build", "status": "in_progress", "priority": "high"},
    ]

    response = agent_api.put_todos(SESSION, SESSION, {"todos": items})

    assert response.status_code == 200
    assert response.json()["progress"]["cancelled"] == 1
    assert agent_api.get_todos(SESSION, SESSION).json()["todos"] == items


def test_an_all_completed_list_reads_back_as_all_done_as_the_board_shows_it(agent_api):
    agent_api.put_todos(SESSION, SESSION, {"todos": [todo("Fix tests", "in_progress")]})
    done = [todo("Fix tests", "completed"), todo("Run build", "completed")]

    body = agent_api.put_todos(SESSION, SESSION, {"todos": done}).json()

    assert body["new_todos"] == done
    assert body["progress"]["completed"] == body["progress"]["total"] == 2
    read = agent_api.get_todos(SESSION, SESSION).json()
    assert (read["revision"], read["todos"]) == (2, done)
    assert (read["progress"]["completed"], read["progress"]["total"]) == (2, 2)
    session = agent_api.get(f"/api/v1/sessions/{SESSION}").json()
    (main,) = session["agents"]
    assert main["todos"] == done
    assert (main["progress"]["completed"], main["progress"]["total"]) == (2, 2)
    assert (session["progress"]["completed"], session["progress"]["total"]) == (2, 2)


def test_the_next_list_after_a_completed_one_starts_afresh(agent_api):
    agent_api.put_todos(SESSION, SESSION, {"todos": [todo("Fix tests", "completed")]})

    agent_api.put_todos(SESSION, SESSION, {"todos": [todo("Ship it", "pending")]})

    read = agent_api.get_todos(SESSION, SESSION).json()
    assert read["todos"] == [todo("Ship it", "pending")]
    assert (read["progress"]["completed"], read["progress"]["total"]) == (0, 1)


def test_reading_a_session_costs_the_same_few_queries_however_many_agents_finished(
    agent_api, django_assert_max_num_queries
):
    for agent in ("a1", "a2", "a3", SESSION):
        agent_api.put_todos(SESSION, agent, {"todos": [todo(f"Task of {agent}", "completed")]})

    with django_assert_max_num_queries(6):
        session = agent_api.get(f"/api/v1/sessions/{SESSION}").json()

    assert session["progress"]["completed"] == session["progress"]["total"] == 4


def test_a_retry_with_the_same_idempotency_key_returns_the_first_response(agent_api):
    key = {"Idempotency-Key": "toolu_01ABC"}
    first = agent_api.put_todos(SESSION, SESSION, {"todos": LIST}, headers=key)

    retry = agent_api.put_todos(SESSION, SESSION, {"todos": LIST}, headers=key)

    assert retry.status_code == 200
    assert retry.json() == first.json()
    assert TodoRevision.objects.count() == 1


def test_a_write_can_name_the_subagents_type_and_the_project(agent_api):
    agent_api.put_todos(SESSION, SESSION, {"todos": LIST}, query={"cwd": "/home/dana/shop"})
    response = agent_api.put_todos(
        SESSION, "agent-2", {"todos": [todo("Search")]}, query={"agent_type": "Explore"}
    )

    assert response.status_code == 200
    session = Session.objects.get()
    assert session.project == "shop"
    assert session.agents.get(agent_id="agent-2").label == "Explore"


def test_it_refuses_an_overlong_agent_type(agent_api):
    response = agent_api.put_todos(
        SESSION, "agent-2", {"todos": LIST}, query={"agent_type": "x" * 101}
    )

    assert response.status_code == 422
    assert error_of(response)["detail"][0]["loc"] == ["query", "agent_type"]
    assert not Session.objects.exists()


# --- TodoRead ---------------------------------------------------------------------------------


def test_todo_read_returns_the_current_list(agent_api):
    agent_api.put_todos(SESSION, SESSION, {"todos": LIST})

    response = agent_api.get_todos(SESSION, SESSION)

    assert response.status_code == 200
    assert response.json() == {
        "revision": 1,
        "todos": LIST,
        "progress": {"completed": 1, "in_progress": 1, "pending": 1, "cancelled": 0, "total": 3},
    }


def test_todo_read_of_an_unknown_agent_is_an_empty_list(agent_api):
    response = agent_api.get_todos("never-seen", "never-seen")

    assert response.status_code == 200
    assert response.json()["todos"] == []
    assert not Session.objects.exists()


def test_todo_read_of_a_subagent_returns_only_its_own_list(agent_api):
    agent_api.put_todos(SESSION, SESSION, {"todos": LIST})
    agent_api.put_todos(SESSION, "agent-2", {"todos": [todo("Search the code")]})

    assert agent_api.get_todos(SESSION, "agent-2").json()["todos"] == [todo("Search the code")]


def test_todo_read_needs_a_token(client):
    response = AgentApi(client, None).get_todos(SESSION, SESSION)
    assert response.status_code == 401


# --- 400 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("body", ['{"todos": [', "todos: []", "{'todos': []}"])
def test_it_refuses_malformed_json_and_changes_nothing(agent_api, existing, body):
    response = agent_api.put_todos(SESSION, SESSION, body)

    assert response.status_code == 400
    assert error_of(response)["code"] == "malformed_json"
    assert board_state() == existing


# --- 401 --------------------------------------------------------------------------------------


def test_it_refuses_a_write_without_a_token(client, existing):
    response = AgentApi(client, None).put_todos(SESSION, SESSION, {"todos": LIST})

    assert response.status_code == 401
    error = error_of(response)
    assert error["code"] == "unauthenticated"
    assert "create_token" in error["message"]
    assert board_state() == existing


def test_it_refuses_a_write_with_an_unknown_token(client, existing):
    response = AgentApi(client, "ab_not-a-real-token").put_todos(SESSION, SESSION, {"todos": LIST})

    assert response.status_code == 401
    assert board_state() == existing


def test_it_refuses_a_write_with_a_token_revoked_in_the_admin(agent_api, existing):
    assert agent_api.get_todos(SESSION, SESSION).status_code == 200  # the token is cached now
    token = AgentToken.objects.get()
    token.revoked_at = timezone.now()
    token.save()

    response = agent_api.put_todos(SESSION, SESSION, {"todos": LIST})

    assert response.status_code == 401
    assert board_state() == existing


def test_a_token_revoked_elsewhere_stops_working_within_the_cache_time(
    agent_api, existing, monkeypatch
):
    assert agent_api.get_todos(SESSION, SESSION).status_code == 200
    # As another server process would: no signal reaches this one.
    AgentToken.objects.update(revoked_at=timezone.now())

    # The cache time passes (the clock moves on; the test does not wait for it).
    later = time.monotonic() + TOKEN_CACHE_SECONDS + 0.01
    monkeypatch.setattr(services, "monotonic", lambda: later)

    assert agent_api.put_todos(SESSION, SESSION, {"todos": LIST}).status_code == 401
    assert board_state() == existing


def test_it_refuses_the_token_of_a_deactivated_user(agent_api, user, existing):
    user.is_active = False
    user.save()

    assert agent_api.put_todos(SESSION, SESSION, {"todos": LIST}).status_code == 401


def test_it_refuses_a_token_sent_with_another_scheme(client, token, existing):
    response = client.put(
        f"/api/v1/sessions/{SESSION}/agents/{SESSION}/todos",
        data=json.dumps({"todos": LIST}),
        content_type="application/json",
        headers={"Authorization": f"Token {token}"},
    )
    assert response.status_code == 401


# --- 403 --------------------------------------------------------------------------------------


def test_it_refuses_a_write_into_another_users_session(agent_api, other_user):
    write_todos(other_user, SESSION, SESSION, [todo("Their task")])
    before = board_state()

    response = agent_api.put_todos(SESSION, SESSION, {"todos": LIST})

    assert response.status_code == 403
    assert error_of(response)["code"] == "session_forbidden"
    assert board_state() == before


def test_reading_another_users_session_answers_as_for_an_unknown_one(agent_api, other_user):
    write_todos(other_user, SESSION, SESSION, [todo("Their task")])

    theirs = agent_api.get_todos(SESSION, SESSION)
    unknown = agent_api.get_todos("never-reported", "never-reported")

    # No answer tells that the session exists.
    assert (theirs.status_code, theirs.json()) == (unknown.status_code, unknown.json())
    assert "Their task" not in theirs.content.decode()


# --- GET /sessions/{id} ----------------------------------------------------------------------


def test_a_session_reads_with_every_agents_list_and_progress(
    agent_api, django_assert_max_num_queries
):
    agent_api.put_todos(SESSION, SESSION, {"todos": LIST})
    subagent = [todo("Map the routes", "in_progress")]
    agent_api.put_todos(SESSION, "sub-1", {"todos": subagent}, query={"agent_type": "Explore"})

    with django_assert_max_num_queries(4):
        response = agent_api.get(f"/api/v1/sessions/{SESSION}")

    assert response.status_code == 200
    body = response.json()
    assert body["session_id"] == SESSION and "ended_at" not in body  # still running
    main, sub = body["agents"]
    assert (main["agent_id"], main["main"], main["todos"]) == (SESSION, True, LIST)
    assert (sub["agent_id"], sub["agent_type"], sub["main"]) == ("sub-1", "Explore", False)
    assert sub["progress"] == {
        "completed": 0,
        "in_progress": 1,
        "pending": 0,
        "cancelled": 0,
        "total": 1,
    }
    assert body["progress"]["total"] == len(LIST) + 1


def test_an_unknown_session_and_another_users_session_are_the_same_404(agent_api, other_user):
    write_todos(other_user, "theirs", "theirs", [todo("Their task")])

    theirs = agent_api.get("/api/v1/sessions/theirs")
    unknown = agent_api.get("/api/v1/sessions/nobodys")

    assert theirs.status_code == unknown.status_code == 404
    assert theirs.json() == unknown.json()
    assert error_of(theirs)["code"] == "session_not_found"


# --- 409 --------------------------------------------------------------------------------------


def test_it_refuses_a_write_while_the_session_is_in_plan_mode(agent_api, existing):
    Session.objects.update(permission_mode="plan")
    before = board_state()

    response = agent_api.put_todos(SESSION, SESSION, {"todos": LIST})

    assert response.status_code == 409
    assert error_of(response)["code"] == "plan_mode_active"
    assert board_state() == before


# --- 413 --------------------------------------------------------------------------------------


def test_it_refuses_an_oversize_body_and_changes_nothing(agent_api, existing, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = settings.AGENTBOARD_MAX_BODY_BYTES = 2000
    body = {"todos": [todo(f"Task number {n}") for n in range(60)]}
    assert len(json.dumps(body)) > 2000

    response = agent_api.put_todos(SESSION, SESSION, body)

    assert response.status_code == 413
    error = error_of(response)
    assert error["code"] == "payload_too_large"
    assert "2000 bytes" in error["message"]
    assert board_state() == existing


def test_a_body_under_the_limit_is_accepted(agent_api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = settings.AGENTBOARD_MAX_BODY_BYTES = 2000
    assert agent_api.put_todos(SESSION, SESSION, {"todos": LIST}).status_code == 200


# --- 422 --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"todos": LIST, "merge": True}, ["body", "merge"]),
        ({}, ["body", "todos"]),
        ({"todos": "Fix tests"}, ["body", "todos"]),
        ({"todos": [{"content": 42, "status": "pending"}]}, ["body", "todos", 0, "content"]),
        (
            {"todos": [todo("Fine"), {"content": "", "status": "pending"}]},
            ["body", "todos", 1, "content"],
        ),
        ({"todos": [{"content": "  ", "status": "pending"}]}, ["body", "todos", 0, "content"]),
        ({"todos": [{"content": "Fix tests", "status": "done"}]}, ["body", "todos", 0, "status"]),
        ({"todos": [{"content": "Fix tests"}]}, ["body", "todos", 0, "status"]),
        (
            {"todos": [{"content": "Fix", "status": "pending", "priority": "asap"}]},
            ["body", "todos", 0, "priority"],
        ),
    ],
    ids=[
        "unknown key",
        "no todos",
        "todos not a list",
        "content as int",
        "empty content",
        "blank content",
        "unknown status",
        "missing status",
        "unknown priority",
    ],
)
def test_it_refuses_an_invalid_write_naming_the_field(agent_api, existing, body, loc):
    response = agent_api.put_todos(SESSION, SESSION, body)

    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "validation_error"
    assert error["detail"][0]["loc"] == loc
    assert error["message"].startswith(".".join(str(part) for part in loc))
    assert board_state() == existing


def test_it_says_empty_content_must_not_be_empty(agent_api):
    response = agent_api.put_todos(
        SESSION, SESSION, {"todos": [{"content": "", "status": "pending"}]}
    )
    assert error_of(response)["message"] == "body.todos.0.content: must not be empty."


@pytest.mark.parametrize("body", ["", "[]", "null", "7", '"todos"'])
def test_it_refuses_a_body_that_is_not_an_object(agent_api, existing, body):
    response = agent_api.put_todos(SESSION, SESSION, body)

    assert response.status_code == 422
    assert error_of(response)["detail"][0]["loc"] == ["body"]
    assert board_state() == existing


def test_the_strict_policy_refuses_with_the_rule_it_broke(agent_api, existing, settings):
    settings.AGENTBOARD_TODO_POLICY = "strict"

    response = agent_api.put_todos(
        SESSION, SESSION, {"todos": [todo("A", "in_progress"), todo("B", "in_progress")]}
    )

    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "multiple_in_progress"
    assert error["detail"] == [
        {"loc": ["body", "todos", 1, "status"], "msg": "second in_progress item"}
    ]
    assert board_state() == existing


def test_the_same_idempotency_key_with_another_list_is_refused(agent_api):
    key = {"Idempotency-Key": "toolu_01ABC"}
    agent_api.put_todos(SESSION, SESSION, {"todos": LIST}, headers=key)
    before = board_state()

    response = agent_api.put_todos(SESSION, SESSION, {"todos": [todo("Other")]}, headers=key)

    assert response.status_code == 422
    assert error_of(response)["code"] == "idempotency_key_reused"
    assert board_state() == before


def test_it_refuses_an_overlong_idempotency_key(agent_api, existing):
    response = agent_api.put_todos(
        SESSION, SESSION, {"todos": LIST}, headers={"Idempotency-Key": "k" * 201}
    )

    assert response.status_code == 422
    assert error_of(response)["code"] == "invalid_idempotency_key"
    assert board_state() == existing


def test_it_refuses_a_session_id_that_is_not_a_plain_token(agent_api):
    response = agent_api.put_todos("bad%20id", "bad%20id", {"todos": LIST})

    assert response.status_code == 422
    assert error_of(response)["code"] == "invalid_id"
    assert not Session.objects.exists()


def test_it_refuses_other_methods_with_the_error_shape(agent_api):
    response = agent_api.client.delete(
        f"/api/v1/sessions/{SESSION}/agents/{SESSION}/todos", headers=agent_api.headers()
    )
    assert response.status_code == 405


# --- OpenAPI ----------------------------------------------------------------------------------


def test_the_api_reference_is_a_page_of_the_dashboard_read_from_the_openapi_schema(client):
    response = client.get("/api/v1/docs")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'href="/api/v1/openapi.json"' in page
    assert "/api/v1/sessions/{session_id}/agents/{agent_id}/todos" in page
    assert "TodoWrite: replace the agent&#x27;s list" in page
    assert 'id="model-TodoWriteIn"' in page
    assert 'href="/static/css/' in page


def test_the_openapi_schema_documents_todo_write_and_read(client):
    response = client.get("/api/v1/openapi.json")

    assert response.status_code == 200
    operations = response.json()["paths"]["/api/v1/sessions/{session_id}/agents/{agent_id}/todos"]
    assert set(operations) == {"put", "get"}
    assert {"200", "400", "401", "403", "409", "413", "422"} <= set(operations["put"]["responses"])
