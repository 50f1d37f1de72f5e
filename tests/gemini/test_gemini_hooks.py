"""`POST /hooks/gemini` in process: what each Gemini CLI event does on the board, and bad input
refused with one clear sentence, nothing stored."""

from __future__ import annotations

import pytest

from dashboard.activity.models import Step
from dashboard.models import Client, Session
from planmode.models import PermissionRequest, TerminalWait
from todos.models import Todo, TodoRevision

pytestmark = pytest.mark.django_db

HOOK_URL = "/hooks/gemini"
SESSION_ID = "3f1c1a52-7a47-4c39-9d1b-1d0c2a5f3e11"


def event(name: str, **fields) -> dict:
    """A hook input as Gemini CLI 0.61.0 sends it."""
    return {
        "session_id": SESSION_ID,
        "transcript_path": f"/home/dev/.gemini/tmp/project/chats/session-{SESSION_ID}.json",
        "cwd": "/home/dev/project",
        "hook_event_name": name,
        "timestamp": "2026-11-26T14:00:00.000Z",
        **fields,
    }


def write_todos(*items: tuple[str, str]) -> dict:
    todos = [{"description": d, "status": s} for d, s in items]
    return event(
        "AfterTool",
        tool_name="write_todos",
        tool_input={"todos": todos},
        tool_response={"llmContent": "Successfully updated the todo list.", "returnDisplay": ""},
    )


@pytest.fixture
def hook(agent_api):
    def post(payload, headers: dict | None = None):
        return agent_api.post(HOOK_URL, payload, headers=headers)

    return post


def refused(response, status: int = 422) -> str:
    assert response.status_code == status, response.content
    message = response.json()["error"]["message"]
    assert message and "\n" not in message
    return message


def nothing_stored() -> None:
    assert not Session.objects.exists()
    assert not Todo.objects.exists()
    assert not TodoRevision.objects.exists()
    assert not PermissionRequest.objects.exists()


def test_a_session_is_of_kind_gemini_cli_and_its_prompt_titles_it(hook):
    assert hook(event("SessionStart", source="startup")).json() == {}
    assert hook(event("BeforeAgent", prompt="Add a dark <b>theme</b>")).json() == {}

    session = Session.objects.get(session_id=SESSION_ID)
    assert (session.client, session.get_client_display()) == (Client.GEMINI, "Gemini CLI")
    assert session.title == "Add a dark <b>theme</b>"


def test_write_todos_replaces_the_list_and_a_retry_of_the_same_list_is_a_new_write(hook):
    hook(write_todos(("Read it", "completed"), ("Store it", "in_progress"), ("Ship", "blocked")))
    hook(write_todos(("Read it", "completed"), ("Store it", "in_progress"), ("Ship", "blocked")))

    todos = list(Todo.objects.order_by("position").values_list("content", "status"))
    assert todos == [("Read it", "completed"), ("Store it", "in_progress"), ("Ship", "pending")]
    # Two write_todos calls, two revisions: each call has an id of its own.
    assert TodoRevision.objects.count() == 2


def test_a_tool_call_is_one_step_from_before_to_after(hook):
    call = {"tool_name": "read_file", "tool_input": {"file_path": "/home/dev/project/a.py"}}
    hook(event("BeforeTool", **call))
    assert list(Step.objects.values_list("outcome", flat=True)) == ["running"]
    hook(event("AfterTool", **call, tool_response={"llmContent": "x = 1", "returnDisplay": ""}))

    [step] = Step.objects.all()
    assert (step.tool_name, step.outcome, step.tool_use_id.startswith("gemini:")) == (
        "read_file",
        "ok",
        True,
    )


def test_a_tool_response_with_an_error_is_a_failed_step(hook):
    call = {"tool_name": "read_file", "tool_input": {"file_path": "/nope"}}
    hook(event("BeforeTool", **call))
    error = {"message": "File not found: /nope", "type": "file_not_found"}
    hook(event("AfterTool", **call, tool_response={"llmContent": "", "error": error}))

    [step] = Step.objects.all()
    assert (step.outcome, step.error) == ("failed", "File not found: /nope")


def test_the_model_events_are_not_looked_at(hook):
    assert hook(event("BeforeModel", llm_request={"model": "gemini-2.5-flash"})).json() == {}
    assert hook(event("PreCompress", trigger="auto")).json() == {}
    nothing_stored()


@pytest.mark.parametrize(
    ("todos", "where"),
    [
        ("not a list", "todos"),
        ([{"description": "Store it", "status": "done"}], "status"),
        ([{"status": "pending"}], "description"),
        ([{"description": "   ", "status": "pending"}], "description"),
        ([{"description": "a\x00b", "status": "pending"}], "description"),
    ],
)
def test_a_malformed_todo_list_is_refused(hook, todos, where):
    payload = write_todos(("Store it", "pending"))
    payload["tool_input"] = {"todos": todos}

    assert where in refused(hook(payload))
    nothing_stored()


@pytest.mark.parametrize(
    "changes",
    [{"session_id": None}, {"session_id": 7}, {"hook_event_name": 3}, {"cwd": ["/home"]}],
)
def test_a_malformed_event_is_refused(hook, changes):
    refused(hook({**event("SessionStart", source="startup"), **changes}))
    nothing_stored()


def test_input_that_is_not_a_json_object_is_refused(hook):
    refused(hook("not json"), 400)
    refused(hook("[1, 2]"), 400)
    nothing_stored()


def test_without_a_token_nothing_is_stored(client):
    response = client.post(
        HOOK_URL, event("SessionStart", source="startup"), content_type="application/json"
    )

    assert response.status_code == 401
    nothing_stored()


def test_only_post_is_answered(agent_api):
    response = agent_api.client.get(HOOK_URL, headers=agent_api.headers())

    assert response.status_code == 405
    assert "POST" in response.json()["error"]["message"]


def test_a_confirmation_in_geminis_terminal_shows_until_the_agent_moves_on(hook):
    call = {"tool_name": "run_shell_command", "tool_input": {"command": "npm publish"}}
    hook(event("BeforeTool", **call))
    hook(
        event(
            "Notification",
            notification_type="ToolPermission",
            message="Tool run_shell_command requires editing",
            details={"type": "exec", "command": "npm publish"},
        )
    )
    [wait] = TerminalWait.objects.all()
    assert (wait.notification_type, wait.ended_at) == ("ToolPermission", None)

    hook(event("AfterTool", **call, tool_response={"llmContent": "Output: ok"}))

    wait.refresh_from_db()
    assert wait.ended_at is not None
