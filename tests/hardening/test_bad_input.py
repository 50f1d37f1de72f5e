"""Hostile input found by fuzzing: every one is refused with a 4xx and one clear sentence, the
same on SQLite and PostgreSQL, and leaves everything stored as it was."""

from __future__ import annotations

import json

import pytest

from dashboard.models import Agent, Session
from planmode.models import PermissionRequest, Plan
from tests.conftest import todo
from tests.hardening.conftest import (
    errors_in,
    send_frame,
    stored_state,
    stored_state_async,
)
from tests.hooks.conftest import load_fixture
from todos.models import Todo, TodoRevision

pytestmark = pytest.mark.django_db

SESSION = "sess-hostile"
TODOS_URL = f"/api/v1/sessions/{SESSION}/agents/{SESSION}/todos"
PLANS_URL = f"/api/v1/sessions/{SESSION}/agents/{SESSION}/plans"
SURROGATE = "\ud800"
# The documented nesting limit of any JSON body or frame.
MAX_JSON_DEPTH = 64
NUL = "\u0000"


def assert_refused(response, status: int = 422, code: str | None = None) -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    if code:
        assert error["code"] == code
    # One sentence: it ends with a full stop and holds no other sentence end.
    assert error["message"].endswith(".")
    assert ". " not in error["message"].removesuffix(".").replace("e.g. ", "")
    return error


@pytest.fixture
def board(hook, agent_api):
    """A session with a list, a subagent and a pending plan: what refusals must not change."""
    hook(load_fixture("session_start.json"))
    hook(load_fixture("post_tool_use_todowrite.json"))
    hook(load_fixture("subagent_start.json"))
    agent_api.put_todos(SESSION, SESSION, {"todos": [todo("Keep me", "in_progress")]})
    agent_api.post(PLANS_URL, {"plan": "# Keep this plan"})
    return stored_state()


def todowrite(*items: dict, **changes) -> dict:
    return load_fixture(
        "post_tool_use_todowrite.json", tool_input={"todos": list(items)}, **changes
    )


def bash_used(**changes) -> dict:
    """A PostToolUse of a tool Agentboard does not track: a step for the enforcer."""
    return load_fixture(
        "post_tool_use_todowrite.json",
        tool_name="Bash",
        tool_input={"command": "ls"},
        tool_response={"stdout": ""},
        **changes,
    )


def deep_list(depth: int) -> str:
    return "[" * depth + "]" * depth


# --- 1. hostile hook bodies: 4xx, never 500 ---------------------------------------------------

HOSTILE_HOOKS = {
    "a lone surrogate in todo content": todowrite({"content": SURROGATE, "status": "pending"}),
    "a lone surrogate in an activeForm": todowrite(
        {"content": "Run", "status": "in_progress", "activeForm": f"Running {SURROGATE}"}
    ),
    "a lone surrogate in a todo id": todowrite(
        {"content": "Run", "status": "pending", "id": SURROGATE}
    ),
    "a lone surrogate in the plan": load_fixture(
        "permission_request_exit_plan_mode.json", tool_input={"plan": f"# Plan {SURROGATE}"}
    ),
    "a lone surrogate in the cwd": load_fixture("session_start.json", cwd=f"/home/{SURROGATE}"),
    "a lone surrogate in the agent_type": load_fixture(
        "subagent_start.json", agent_type=f"Explore{SURROGATE}"
    ),
    "a lone surrogate in a Task subject": load_fixture(
        "post_tool_use_task_create.json", tool_input={"subject": SURROGATE}
    ),
    "a lone surrogate in the agent id": load_fixture("subagent_start.json", agent_id=SURROGATE),
    "hook_event_name as a list": load_fixture("session_start.json", hook_event_name=["Stop"]),
    "hook_event_name as an object": load_fixture("session_start.json", hook_event_name={"a": 1}),
    "tool_name as a list": todowrite(tool_name=["TodoWrite"]),
    "tool_name as an object": todowrite(tool_name={"name": "TodoWrite"}),
    "a blank Task subject": load_fixture(
        "post_tool_use_task_create.json", tool_input={"subject": "  "}
    ),
}


@pytest.mark.parametrize("name", HOSTILE_HOOKS)
def test_a_hostile_hook_body_is_refused_with_a_4xx_and_changes_nothing(
    hook, board, server_errors, name
):
    response = hook(HOSTILE_HOOKS[name])

    assert_refused(response, 422)
    assert stored_state() == board
    assert errors_in(server_errors) == []


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(deep_list(100_000), id="a body nested 100,000 deep"),
        pytest.param(
            json.dumps(todowrite()).replace(
                '"tool_input": {', f'"tool_input": {{"x": {deep_list(5_000)}, ', 1
            ),
            id="tool_input nested 5,000 deep",
        ),
        pytest.param(
            json.dumps(todowrite()).replace(
                '"tool_input": {', f'"tool_input": {{"x": {deep_list(MAX_JSON_DEPTH)}, ', 1
            ),
            id=f"tool_input nested just over {MAX_JSON_DEPTH} deep",
        ),
    ],
)
def test_a_body_nested_too_deep_is_refused_with_a_4xx(hook, board, server_errors, body):
    error = assert_refused(hook(body), 422, "too_deeply_nested")

    assert f"more than {MAX_JSON_DEPTH} levels deep" in error["message"]
    assert stored_state() == board
    assert errors_in(server_errors) == []


def test_the_deep_part_is_named_when_the_body_could_be_read(hook, board):
    body = json.dumps(todowrite()).replace(
        '"tool_input": {', f'"tool_input": {{"x": {deep_list(70)}, ', 1
    )
    error = assert_refused(hook(body), 422, "too_deeply_nested")

    assert "(at tool_input.x.0.0…)" in error["message"]


def test_nesting_up_to_the_limit_is_accepted(hook, board):
    # tool_input is level 2 of the body, so a list inside it may nest this much.
    nested = deep_list(MAX_JSON_DEPTH - 2)
    body = json.dumps(todowrite(todo("Still fine"))).replace(
        '"tool_input": {', f'"tool_input": {{"x": {nested}, ', 1
    )
    assert hook(body).status_code == 200


def test_the_same_hostile_input_is_refused_by_the_http_api(agent_api, board, server_errors):
    surrogate = agent_api.put_todos(
        SESSION, SESSION, {"todos": [{"content": SURROGATE, "status": "pending"}]}
    )
    deep = agent_api.put_todos(SESSION, SESSION, f'{{"todos": {deep_list(5_000)}}}')
    deep_plan = agent_api.post(PLANS_URL, deep_list(100_000))

    error = assert_refused(surrogate, 422, "validation_error")
    assert error["message"] == (
        "The request body holds a lone surrogate at todos.0.content (half of a UTF-16 pair, "
        "such as \\ud800), which is not text; send valid Unicode."
    )
    assert_refused(deep, 422, "too_deeply_nested")
    assert_refused(deep_plan, 422, "too_deeply_nested")
    assert stored_state() == board
    assert errors_in(server_errors) == []


HOSTILE_FRAMES = {
    "a lone surrogate in todo content": {"todos": [{"content": SURROGATE, "status": "pending"}]},
    "a lone surrogate in the cwd": {"cwd": f"/home/{SURROGATE}", "todos": []},
    "a lone surrogate in the agent_type": {"agent_type": SURROGATE, "todos": []},
}


@pytest.mark.parametrize("name", HOSTILE_FRAMES)
async def test_a_hostile_frame_gets_a_validation_error_not_an_internal_error(
    agent_socket, server_errors, name
):
    frame = {"type": "todo_write", "id": 1, "session_id": SESSION, "agent_id": SESSION}
    before = await stored_state_async()

    reply = await send_frame(agent_socket, json.dumps({**frame, **HOSTILE_FRAMES[name]}))

    assert reply["type"] == "error"
    assert reply["id"] == 1
    assert reply["error"]["code"] == "validation_error"
    assert await stored_state_async() == before
    assert errors_in(server_errors) == []


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(deep_list(100_000), id="a frame nested 100,000 deep"),
        pytest.param(
            json.dumps({"type": "todo_write", "session_id": "s", "agent_id": "s"})[:-1]
            + f', "todos": {deep_list(5_000)}}}',
            id="todos nested 5,000 deep",
        ),
        pytest.param(
            json.dumps({"type": "exit_plan_mode", "session_id": "s", "agent_id": "s"})[:-1]
            + f', "plan": "# Plan {SURROGATE}"}}'.replace(SURROGATE, "\\ud800"),
            id="a lone surrogate in the plan",
        ),
        pytest.param(json.dumps({"type": ["todo_write"]}), id="the type as a list"),
        pytest.param(json.dumps({"type": {"a": 1}}), id="the type as an object"),
    ],
)
async def test_a_hostile_frame_is_refused_and_the_socket_stays_open(
    agent_socket, server_errors, text
):
    before = await stored_state_async()

    reply = await send_frame(agent_socket, text)

    assert reply["type"] == "error"
    assert reply["error"]["code"] in {
        "too_deeply_nested",
        "validation_error",
        "unknown_frame_type",
    }
    assert reply["error"]["message"].endswith(".")
    assert await stored_state_async() == before
    assert errors_in(server_errors) == []


# --- 2. what PostgreSQL refuses is refused first, on every database ---------------------------


def column_length(model, field: str) -> int:
    return model._meta.get_field(field).max_length


LIMITS = {
    "todo id": column_length(Todo, "external_id"),
    "agent_type": column_length(Agent, "agent_type"),
    "cwd": column_length(Session, "cwd"),
    "tool_use_id": column_length(TodoRevision, "idempotency_key"),
    "plan_file_path": column_length(Plan, "plan_file_path"),
}


def test_the_limits_are_those_of_the_columns():
    assert LIMITS == {
        "todo id": 200,
        "agent_type": 100,
        "cwd": 1000,
        "tool_use_id": 200,
        "plan_file_path": 1000,
    }


def api_todo_write(agent_api, *, item: dict | None = None, **query):
    return agent_api.put_todos(
        SESSION, SESSION, {"todos": [item or todo("Write")]}, query=query or None
    )


@pytest.mark.parametrize(
    ("limit", "send", "field"),
    [
        (
            LIMITS["todo id"],
            lambda api, n: api_todo_write(api, item={**todo("A"), "id": "i" * n}),
            "body.todos.0.id",
        ),
        (
            LIMITS["agent_type"],
            lambda api, n: api_todo_write(api, agent_type="E" * n),
            "query.agent_type",
        ),
        (LIMITS["cwd"], lambda api, n: api_todo_write(api, cwd="/" * n), "query.cwd"),
        (
            LIMITS["plan_file_path"],
            lambda api, n: api.post(PLANS_URL, {"plan": "# P", "plan_file_path": "p" * n}),
            "body.plan_file_path",
        ),
    ],
    ids=["todo id", "agent_type", "cwd", "plan_file_path"],
)
def test_the_http_api_takes_text_up_to_the_column_length_and_refuses_longer(
    agent_api, limit, send, field
):
    before = stored_state()
    error = assert_refused(send(agent_api, limit + 1), 422, "validation_error")
    assert error["message"].startswith(f"{field}")
    assert stored_state() == before

    assert send(agent_api, limit).status_code in {200, 201}


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        (todowrite({**todo("A"), "id": "i" * 201}), "body.tool_input.todos.0.id"),
        (load_fixture("subagent_start.json", agent_type="E" * 101), "body.agent_type"),
        (load_fixture("session_start.json", cwd="/" * 1001), "body.cwd"),
        (todowrite(todo("A"), tool_use_id="t" * 201), "body.tool_use_id"),
        (bash_used(tool_use_id="t" * 201), "body.tool_use_id"),
        (
            load_fixture(
                "permission_request_exit_plan_mode.json",
                tool_input={"plan": "# P", "planFilePath": "p" * 1001},
            ),
            "body.tool_input.planFilePath",
        ),
        (
            load_fixture("post_tool_use_task_update.json", tool_input={"taskId": "7" * 201}),
            "body.tool_input.taskId",
        ),
        (load_fixture("task_completed.json", task_id=2**64), "body.task_id"),
    ],
    ids=[
        "todo id",
        "agent_type",
        "cwd",
        "tool_use_id of a TodoWrite",
        "tool_use_id of any event",
        "planFilePath",
        "Task id",
        "Task id as a huge integer",
    ],
)
def test_a_hook_with_text_longer_than_its_column_is_refused(hook, board, payload, field):
    error = assert_refused(hook(payload), 422, "validation_error")

    assert error["message"].startswith(f"{field}: ")
    assert stored_state() == board


NUL_IN_API = {
    "content": lambda api: api_todo_write(api, item=todo(f"Run{NUL}tests")),
    "activeForm": lambda api: api_todo_write(api, item=todo("Run", active_form=f"R{NUL}")),
    "id": lambda api: api_todo_write(api, item={**todo("Run"), "id": f"a{NUL}"}),
    "agent_type query": lambda api: api_todo_write(api, agent_type=f"E{NUL}"),
    "cwd query": lambda api: api_todo_write(api, cwd=f"/x{NUL}"),
    "plan": lambda api: api.post(PLANS_URL, {"plan": f"# Plan{NUL}"}),
    "plan_file_path": lambda api: api.post(
        PLANS_URL, {"plan": "# Plan", "plan_file_path": f"/p{NUL}"}
    ),
    "Idempotency-Key header": lambda api: api.put_todos(
        SESSION, SESSION, {"todos": [todo("A")]}, headers={"Idempotency-Key": f"k{NUL}"}
    ),
}


@pytest.mark.parametrize("name", NUL_IN_API)
def test_a_nul_character_in_any_api_text_is_refused(agent_api, board, server_errors, name):
    error = assert_refused(NUL_IN_API[name](agent_api), 422)

    assert "NUL" in error["message"]
    assert stored_state() == board
    assert errors_in(server_errors) == []


NUL_IN_HOOKS = {
    "todo content": todowrite(todo(f"Run{NUL}")),
    "cwd": load_fixture("session_start.json", cwd=f"/x{NUL}"),
    "agent_type": load_fixture("subagent_start.json", agent_type=f"E{NUL}"),
    "tool_use_id": bash_used(tool_use_id=f"t{NUL}"),
    "plan": load_fixture("post_tool_use_exit_plan_mode.json", tool_input={"plan": f"#{NUL}"}),
    "Task subject": load_fixture(
        "post_tool_use_task_update.json", tool_input={"taskId": "7", "subject": f"S{NUL}"}
    ),
    "Task id": load_fixture("task_completed.json", task_id=f"7{NUL}"),
}


@pytest.mark.parametrize("name", NUL_IN_HOOKS)
def test_a_nul_character_in_any_hook_text_is_refused(hook, board, server_errors, name):
    error = assert_refused(hook(NUL_IN_HOOKS[name]), 422, "validation_error")

    assert "NUL" in error["message"]
    assert stored_state() == board
    assert errors_in(server_errors) == []


BAD_IDS_IN_HOOKS = {
    "a NUL in a stopping subagent's id": load_fixture("subagent_stop.json", agent_id=f"a{NUL}"),
    "a NUL in the session id": load_fixture("session_start.json", session_id=f"s{NUL}"),
    "a space in the session id": load_fixture("stop.json", session_id="a b"),
}


@pytest.mark.parametrize("name", BAD_IDS_IN_HOOKS)
def test_a_hook_with_an_id_no_agent_could_have_is_refused_before_any_lookup(
    hook, board, server_errors, name
):
    """Checked before a handler looks the agent up: a NUL in a query is an error on
    PostgreSQL, not an empty answer."""
    error = assert_refused(hook(BAD_IDS_IN_HOOKS[name]), 422, "invalid_id")

    assert "letters, digits" in error["message"]
    assert stored_state() == board
    assert errors_in(server_errors) == []


def test_a_tool_step_with_a_lone_surrogate_in_its_input_is_refused_while_a_plan_waits(
    hook, board, server_errors
):
    """Refused as it is read, before the step could count as the agent moving on: the plan
    it waits on stays pending."""
    assert Agent.objects.get(agent_id=SESSION).awaiting_plan

    step = {**bash_used(session_id=SESSION), "tool_input": {"command": f"echo {SURROGATE}"}}
    error = assert_refused(hook(step), 422, "validation_error")

    assert "lone surrogate at tool_input.command" in error["message"]
    assert errors_in(server_errors) == []
    assert stored_state() == board
    plans = Plan.objects.filter(session__session_id=SESSION)
    assert list(plans.values_list("status", flat=True)) == ["pending"]


NUL_IN_FRAMES = {
    "todo content": {"type": "todo_write", "todos": [todo(f"A{NUL}")]},
    "cwd": {"type": "todo_write", "todos": [], "cwd": f"/{NUL}"},
    "a step key": {"type": "step", "key": f"k{NUL}"},
    "plan_file_path": {"type": "exit_plan_mode", "plan": "# P", "plan_file_path": f"/{NUL}"},
    "an overlong step key": {"type": "step", "key": "k" * 201},
    "a plan id past 64 bits": {"type": "watch_plan", "plan_id": 2**64},
}


@pytest.mark.parametrize("name", NUL_IN_FRAMES)
async def test_a_frame_with_text_the_database_cannot_store_is_refused(
    agent_socket, server_errors, name
):
    frame = {"id": 5, "session_id": SESSION, "agent_id": SESSION, **NUL_IN_FRAMES[name]}
    if frame["type"] == "watch_plan":
        frame = {"type": "watch_plan", "id": 5, "plan_id": frame["plan_id"]}
    before = await stored_state_async()

    reply = await send_frame(agent_socket, json.dumps(frame))

    assert (reply["type"], reply["id"], reply["error"]["code"]) == (
        "error",
        5,
        "validation_error",
    )
    assert await stored_state_async() == before
    assert errors_in(server_errors) == []


def test_a_plan_id_past_64_bits_is_refused_not_a_database_error(agent_api, server_errors):
    response = agent_api.get(f"/api/v1/plans/{2**64}")

    assert_refused(response, 422, "validation_error")
    assert errors_in(server_errors) == []


def test_a_reviewer_feedback_with_a_nul_character_is_refused(client, reviewer, agent_api):
    plan_id = agent_api.post(PLANS_URL, {"plan": "# Plan"}).json()["id"]
    client.force_login(reviewer)

    response = client.post(f"/plans/{plan_id}/decide/", {"action": "reject", "text": f"No{NUL}pe"})

    assert response.status_code == 422
    assert "must not contain NUL characters" in response.content.decode()
    assert Plan.objects.get(pk=plan_id).status == "pending"


# --- 3. an empty todo id ------------------------------------------------------------------------


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_todo_id_is_refused_like_an_empty_active_form(agent_api, board, empty):
    response = api_todo_write(agent_api, item={**todo("Run"), "id": empty})

    error = assert_refused(response, 422, "validation_error")
    assert error["message"] == "body.todos.0.id: must not be empty when given."
    assert stored_state() == board


def test_an_empty_todo_id_is_refused_in_a_hook_and_on_the_socket(hook, board):
    response = hook(todowrite({**todo("Run"), "id": ""}))

    error = assert_refused(response, 422, "validation_error")
    assert error["message"] == "body.tool_input.todos.0.id: must not be empty when given."
    assert stored_state() == board


async def test_an_empty_todo_id_frame_is_refused(agent_socket):
    frame = {
        "type": "todo_write",
        "id": 9,
        "session_id": SESSION,
        "agent_id": SESSION,
        "todos": [{**todo("Run"), "id": ""}],
    }
    reply = await send_frame(agent_socket, json.dumps(frame))

    assert reply["error"]["message"] == "todos.0.id: must not be empty when given."


@pytest.mark.parametrize("given", ["0", 0, "task-7"])
def test_a_todo_id_that_is_given_is_read_back_as_written(agent_api, given):
    written = api_todo_write(agent_api, item={**todo("Run"), "id": given}).json()
    read = agent_api.get_todos(SESSION, SESSION).json()
    again = api_todo_write(agent_api, item=todo("Next")).json()

    assert written["new_todos"][0]["id"] == str(given)
    assert read["todos"][0]["id"] == str(given)
    assert again["old_todos"][0]["id"] == str(given)


# --- 3. numbers that JSON does not have ----------------------------------------------------------

NAN, INFINITY = float("nan"), float("inf")
# Python's JSON writer spells them NaN, Infinity and -Infinity, as a careless client would.
NON_FINITE_HOOKS = {
    "NaN in a permission request's tool_input": (
        load_fixture(
            "permission_request_bash.json", tool_input={"command": "sleep 1", "timeout": NAN}
        ),
        "tool_input.timeout",
        "NaN",
    ),
    "Infinity in a permission request's tool_input": (
        load_fixture("permission_request_web_fetch.json", tool_input={"url": "x", "n": INFINITY}),
        "tool_input.n",
        "Infinity",
    ),
    "-Infinity deep in a permission suggestion": (
        load_fixture(
            "permission_request_bash.json",
            permission_suggestions=[{"type": "addRules", "rules": [{"weight": -INFINITY}]}],
        ),
        "permission_suggestions.0.rules.0.weight",
        "-Infinity",
    ),
    "NaN in a TodoWrite item": (
        todowrite({"content": "Run tests", "status": "pending", "priority": NAN}),
        "tool_input.todos.0.priority",
        "NaN",
    ),
    "NaN in a tool step's response": (
        load_fixture(
            "post_tool_use_todowrite.json",
            tool_name="Bash",
            tool_input={"command": "ls"},
            tool_response={"exit": NAN},
        ),
        "tool_response.exit",
        "NaN",
    ),
}


@pytest.mark.parametrize("name", NON_FINITE_HOOKS)
def test_a_hook_with_a_number_json_does_not_have_is_refused_naming_where(
    hook, board, server_errors, name
):
    payload, where, constant = NON_FINITE_HOOKS[name]

    error = assert_refused(hook(json.dumps(payload)), 422, "non_finite_number")

    assert error["message"] == (
        f"The hook input holds {constant} at {where}, which is not a JSON number; "
        "send a finite number or null."
    )
    path = [int(part) if part.isdigit() else part for part in where.split(".")]
    assert error["detail"] == [{"loc": ["body", *path], "msg": f"{constant} is not a JSON number"}]
    assert stored_state() == board
    assert not PermissionRequest.objects.exists()
    assert errors_in(server_errors) == []


def test_the_text_nan_is_only_text(hook, board):
    response = hook(
        todowrite(todo("NaN and Infinity are not numbers here"), tool_use_id="toolu_nan_text")
    )

    assert response.status_code == 200
    assert Todo.objects.filter(content="NaN and Infinity are not numbers here").exists()


def test_the_http_api_refuses_a_number_json_does_not_have(agent_api, board, server_errors):
    todos = agent_api.put_todos(
        SESSION, SESSION, json.dumps({"todos": [{"content": "x", "status": "pending", "n": NAN}]})
    )
    plan = agent_api.post(PLANS_URL, json.dumps({"plan": "# Plan", "score": -INFINITY}))

    error = assert_refused(todos, 422, "non_finite_number")
    assert error["message"].startswith("The request body holds NaN at todos.0.n,")
    assert_refused(plan, 422, "non_finite_number")
    assert stored_state() == board
    assert errors_in(server_errors) == []


async def test_a_frame_with_a_number_json_does_not_have_is_refused(agent_socket, server_errors):
    frame = {"type": "todo_write", "id": 7, "session_id": SESSION, "agent_id": SESSION}
    frame["todos"] = [{"content": "x", "status": "pending", "weight": INFINITY}]
    before = await stored_state_async()

    reply = await send_frame(agent_socket, json.dumps(frame))

    assert reply["type"] == "error"
    assert reply["error"]["code"] == "non_finite_number"
    assert "Infinity at todos.0.weight" in reply["error"]["message"]
    assert await stored_state_async() == before
    assert errors_in(server_errors) == []


# --- 4. a failure on the server's side still answers JSON -----------------------------------------


def test_a_hook_that_fails_on_the_server_answers_json_and_logs_why(
    hook, board, server_errors, monkeypatch
):
    from dashboard.integrations.claude_code import hooks

    def broken(payload):
        raise RuntimeError("a bug in a handler")

    monkeypatch.setattr(hooks, "_handler_for", broken)

    error = assert_refused(hook(todowrite(todo("x"))), 500, "internal_error")

    assert "logged" in error["message"]
    assert any("a hook request failed" in message for message in errors_in(server_errors))
    assert stored_state() == board


def test_an_api_request_that_fails_on_the_server_answers_json(
    agent_api, board, server_errors, monkeypatch
):
    from todos import services

    def broken(**kwargs):
        raise RuntimeError("a bug in a service")

    monkeypatch.setattr(services, "todo_list_replace", broken)

    response = agent_api.put_todos(SESSION, SESSION, {"todos": [todo("x")]})

    assert_refused(response, 500, "internal_error")
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert any("an API request failed" in message for message in errors_in(server_errors))
    assert stored_state() == board
