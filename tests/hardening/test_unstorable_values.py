"""A number that overflows to infinity (`1e400`) and a lone surrogate (`"\\ud800"`) are valid
JSON that no database stores: every agent kind's hook input holding one anywhere is refused as
it is read, with a 422 naming where, and changes nothing. Each case here answered 500 once."""

from __future__ import annotations

import json

import pytest
from google.protobuf import json_format
from google.rpc import status_pb2

from dashboard.costs.models import Usage
from planmode.models import PermissionRequest, TerminalWait
from tests.codex.conftest import load_fixture as codex_fixture
from tests.costs.conftest import SESSION as COST_SESSION
from tests.costs.conftest import as_json, usage_metrics
from tests.hardening.conftest import errors_in, send_frame, stored_state, stored_state_async
from tests.hooks.conftest import load_fixture as claude_fixture
from tests.opencode.conftest import asked

pytestmark = pytest.mark.django_db

# Stands where the value under test goes; replaced in the JSON text, as a client would write it.
HERE = "<value under test>"
OVERFLOW = "1e400"
LONE_SURROGATE = '"\\ud800"'
GEMINI_SESSION = "3f1c1a52-7a47-4c39-9d1b-1d0c2a5f3e11"


def gemini(name: str, **fields) -> dict:
    """A hook input as Gemini CLI sends it."""
    return {
        "session_id": GEMINI_SESSION,
        "cwd": "/home/dev/shop",
        "hook_event_name": name,
        "timestamp": "2026-11-26T14:00:00.000Z",
        **fields,
    }


def gemini_held_shell(**tool_input) -> dict:
    """A BeforeTool that `agentboard gemini-hook --approvals` holds for the inbox."""
    return gemini(
        "BeforeTool",
        tool_name="run_shell_command",
        tool_input={"command": "npm publish", **tool_input},
        agentboard_approvals=True,
    )


def gemini_notification(**fields) -> dict:
    return gemini(
        "Notification",
        **{"notification_type": "ToolPermission", "message": "Allow npm publish?", **fields},
    )


# (endpoint, payload with HERE where the number goes, the path to it)
OVERFLOWS = {
    "Claude Code Bash tool_input": (
        "/hooks/claude-code",
        claude_fixture(
            "permission_request_bash.json", tool_input={"command": "ls", "timeout": HERE}
        ),
        "tool_input.timeout",
    ),
    "Claude Code Edit tool_input": (
        "/hooks/claude-code",
        claude_fixture("permission_request_edit.json", tool_input={"file_path": "/a", "n": HERE}),
        "tool_input.n",
    ),
    "Claude Code MCP tool_input": (
        "/hooks/claude-code",
        claude_fixture("permission_request_mcp.json", tool_input={"limit": [1, HERE]}),
        "tool_input.limit.1",
    ),
    "Claude Code WebFetch tool_input": (
        "/hooks/claude-code",
        claude_fixture("permission_request_web_fetch.json", tool_input={"url": "x", "n": HERE}),
        "tool_input.n",
    ),
    "Claude Code permission_suggestions": (
        "/hooks/claude-code",
        claude_fixture(
            "permission_request_bash.json",
            permission_suggestions=[{"type": "addRules", "rules": [{"weight": HERE}]}],
        ),
        "permission_suggestions.0.rules.0.weight",
    ),
    "Codex PermissionRequest tool_input": (
        "/hooks/codex",
        codex_fixture(
            "permission_request_bash.json", tool_input={"command": "ls", "timeout": HERE}
        ),
        "tool_input.timeout",
    ),
    "Gemini BeforeTool held for approval": (
        "/hooks/gemini",
        gemini_held_shell(timeout=HERE),
        "tool_input.timeout",
    ),
    "opencode permission.asked metadata": (
        "/hooks/opencode",
        asked(metadata={"command": "rm -rf build", "timeout": HERE}),
        "properties.metadata.timeout",
    ),
}

SURROGATES = {
    "Claude Code permission_mode": (
        "/hooks/claude-code",
        claude_fixture("permission_request_bash.json", permission_mode=HERE),
        "permission_mode",
    ),
    "Codex permission_mode": (
        "/hooks/codex",
        codex_fixture("permission_request_bash.json", permission_mode=HERE),
        "permission_mode",
    ),
    "Claude Code Notification message": (
        "/hooks/claude-code",
        claude_fixture("notification_idle.json", message=HERE),
        "message",
    ),
    "Claude Code Notification notification_type": (
        "/hooks/claude-code",
        claude_fixture("notification_idle.json", notification_type=HERE),
        "notification_type",
    ),
    "Gemini Notification message": (
        "/hooks/gemini",
        gemini_notification(message=HERE),
        "message",
    ),
    "Gemini Notification notification_type": (
        "/hooks/gemini",
        gemini_notification(notification_type=HERE),
        "notification_type",
    ),
    "Gemini session_id": (
        "/hooks/gemini",
        {**gemini_held_shell(), "session_id": HERE},
        "session_id",
    ),
    "Claude Code agent_id": (
        "/hooks/claude-code",
        claude_fixture("subagent_start.json", agent_id=HERE),
        "agent_id",
    ),
}


@pytest.fixture
def quick_waits(settings) -> None:
    """Were a body let through, its request would be held: not for long here."""
    settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS = 0.01
    settings.AGENTBOARD_PLAN_HOOK_WAIT_SECONDS = 0.01


def send(agent_api, url: str, payload: dict, literal: str):
    body = json.dumps(payload).replace(json.dumps(HERE), literal)
    assert literal in body
    return agent_api.post(url, body)


def refused(response, code: str) -> dict:
    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert error["code"] == code
    assert error["message"].endswith(".")
    assert ". " not in error["message"].removesuffix(".")
    return error


def loc(where: str) -> list:
    return ["body", *(int(part) if part.isdigit() else part for part in where.split("."))]


def nothing_changed(before: tuple) -> None:
    assert stored_state() == before
    assert not PermissionRequest.objects.exists()
    assert not TerminalWait.objects.exists()


@pytest.mark.parametrize("literal", [OVERFLOW, f"-{OVERFLOW}", "1" * 400 + ".0"])
@pytest.mark.parametrize("case", OVERFLOWS)
def test_a_number_that_overflows_in_a_permission_request_is_refused_naming_where(
    agent_api, quick_waits, server_errors, case, literal
):
    url, payload, where = OVERFLOWS[case]
    before = stored_state()

    error = refused(send(agent_api, url, payload, literal), "non_finite_number")

    assert f" at {where}, a number beyond the range of a 64-bit float;" in error["message"]
    assert error["detail"] == [{"loc": loc(where), "msg": "is beyond the range of a 64-bit float"}]
    nothing_changed(before)
    assert errors_in(server_errors) == []


def test_the_sentence_shows_the_start_of_a_long_number(agent_api, quick_waits):
    url, payload, _ = OVERFLOWS["Claude Code Bash tool_input"]

    error = refused(send(agent_api, url, payload, "9" * 400 + ".5"), "non_finite_number")

    assert error["message"].startswith(f"The hook input holds {'9' * 20}… at tool_input.timeout")


@pytest.mark.parametrize("case", SURROGATES)
def test_a_lone_surrogate_in_a_hook_field_is_refused_naming_where(
    agent_api, quick_waits, server_errors, case
):
    url, payload, where = SURROGATES[case]
    before = stored_state()

    error = refused(send(agent_api, url, payload, LONE_SURROGATE), "validation_error")

    assert error["message"] == (
        f"The hook input holds a lone surrogate at {where} (half of a UTF-16 pair, such as "
        "\\ud800), which is not text; send valid Unicode."
    )
    assert [item["loc"] for item in error["detail"]] == [loc(where)]
    nothing_changed(before)
    assert errors_in(server_errors) == []


@pytest.mark.parametrize(
    "literal",
    ['"\\udc00"', '"a\\uDBFFb"', '"\\ude00\\ud83d"', '"\\ud83d\\ud83d\\ude00"'],
    ids=["a low half", "upper-case hex", "a pair in the wrong order", "a high half before a pair"],
)
def test_every_spelling_of_a_lone_surrogate_is_refused(agent_api, quick_waits, literal):
    url, payload, where = SURROGATES["Claude Code permission_mode"]

    error = refused(send(agent_api, url, payload, literal), "validation_error")

    assert f"lone surrogate at {where} " in error["message"]


def test_a_lone_surrogate_in_a_key_is_refused(agent_api, quick_waits):
    payload = claude_fixture("permission_request_bash.json", tool_input={"command": "ls"})
    body = json.dumps(payload).replace('"command"', '"\\ud800"')

    error = refused(agent_api.post("/hooks/claude-code", body), "validation_error")

    assert "lone surrogate at tool_input.? " in error["message"]


def test_a_surrogate_pair_and_an_escaped_backslash_are_text(agent_api, quick_waits):
    """A pair is one character (an emoji here); `\\\\ud800` is a backslash and five letters."""
    payload = claude_fixture("notification_idle.json")
    body = json.dumps(payload).replace(
        '"Claude is waiting for your input"', '"Waiting \\ud83d\\ude00 \\\\ud800"'
    )

    response = agent_api.post("/hooks/claude-code", body)

    assert response.status_code == 200, response.content
    assert TerminalWait.objects.get().message == "Waiting \U0001f600 \\ud800"


def test_a_lone_surrogate_encoded_in_the_bytes_is_refused_like_its_escape(agent_api, quick_waits):
    """Python's JSON reader takes UTF-8 bytes of a surrogate (ED A0 80) as one."""
    url, payload, where = SURROGATES["Claude Code Notification message"]
    body = (
        json.dumps(payload).replace(json.dumps(HERE), '"a\udc00"').encode("utf-8", "surrogatepass")
    )

    error = refused(agent_api.post(url, body), "validation_error")

    assert f"lone surrogate at {where} " in error["message"]


def test_a_number_too_large_for_a_double_but_written_as_an_integer_is_no_server_error(
    agent_api, quick_waits, server_errors
):
    url, payload, _ = OVERFLOWS["Claude Code Bash tool_input"]

    response = send(agent_api, url, payload, str(10**400))

    assert response.status_code < 500, response.content
    assert errors_in(server_errors) == []


def test_the_http_api_refuses_an_overflowing_number_naming_where(agent_api, server_errors):
    url = "/api/v1/sessions/s-1/agents/s-1/todos"
    body = '{"todos": [{"content": "x", "status": "pending", "weight": 1e400}]}'

    response = agent_api.client.put(
        url, data=body, content_type="application/json", headers=agent_api.headers()
    )

    error = refused(response, "non_finite_number")
    assert error["message"].startswith("The request body holds 1e400 at todos.0.weight,")
    assert errors_in(server_errors) == []


@pytest.mark.parametrize(
    ("literal", "code"), [(OVERFLOW, "non_finite_number"), (LONE_SURROGATE, "validation_error")]
)
async def test_a_frame_is_refused_by_the_same_reader_and_answered_by_its_id(
    agent_socket, server_errors, literal, code
):
    frame = {"type": "todo_write", "id": 7, "session_id": "s-1", "agent_id": "s-1"}
    frame["todos"] = [{"content": "x", "status": "pending", "weight": HERE}]
    before = await stored_state_async()

    reply = await send_frame(agent_socket, json.dumps(frame).replace(json.dumps(HERE), literal))

    assert (reply["type"], reply["id"], reply["error"]["code"]) == ("error", 7, code)
    assert " at todos.0.weight" in reply["error"]["message"]
    assert await stored_state_async() == before
    assert errors_in(server_errors) == []


@pytest.mark.parametrize(
    ("replace", "by", "said"),
    [
        (f'"{COST_SESSION}"', LONE_SURROGATE, "a lone surrogate at resourceMetrics.0"),
        ('"asDouble": 0.0012', f'"asDouble": {OVERFLOW}', f"holds {OVERFLOW} at resourceMetrics.0"),
    ],
    ids=["a lone surrogate in an attribute", "an overflowing number in a point"],
)
def test_an_otlp_json_export_is_read_by_the_same_reader(
    agent_api, server_errors, replace, by, said
):
    body = as_json(usage_metrics(session_id=COST_SESSION)).decode()
    assert replace in body

    response = agent_api.client.post(
        "/v1/metrics",
        data=body.replace(replace, by),
        content_type="application/json",
        headers=agent_api.headers(),
    )

    # OTLP/HTTP answers a request it cannot take with a 400 and a google.rpc.Status.
    assert response.status_code == 400, response.content
    message = json_format.Parse(response.content, status_pb2.Status()).message
    assert message.startswith("The JSON OTLP metrics export request ")
    assert said in message
    assert not Usage.objects.exists()
    assert errors_in(server_errors) == []
