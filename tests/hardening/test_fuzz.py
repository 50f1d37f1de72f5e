"""Property tests: hostile JSON into every hook event and every socket frame, built from real
payloads with parts replaced by arbitrary JSON, hostile strings (lone surrogates, NUL
characters, text past every column, whitespace), wrong types and deep nesting. Whatever arrives,
the server answers below 500 without a traceback, and a refusal leaves everything stored as it
was. The number of examples is bounded so the suite stays fast."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.asgi import application
from planmode.models import PermissionRequest, TerminalWait
from tests.conftest import todo
from tests.hardening.conftest import errors_in, run_async, stored_state
from tests.hooks.conftest import fixture_names, load_fixture

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(300)]

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

HOSTILE_STRINGS = st.sampled_from(
    [
        "",
        " ",
        "\t\n",
        "\u0000",
        "a\u0000b",
        "\ud800",
        "\udfff",
        "x\udc00y",
        "x" * 101,
        "x" * 201,
        "/" * 1001,
        "é" * 300,
        "😀" * 60,
        "TodoWrite",
        "ExitPlanMode",
        "PostToolUse",
        "PermissionRequest",
        "Stop",
        "SessionStart",
        "pending",
        "in_progress",
        "../../etc",
        "sess-fuzz",
    ]
)
TEXT = st.one_of(st.text(max_size=30), HOSTILE_STRINGS)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=12,
)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# Where a value goes: a path of keys into a payload (created when missing).
HOOK_PATHS = [
    ("session_id",),
    ("hook_event_name",),
    ("tool_name",),
    ("tool_use_id",),
    ("cwd",),
    ("agent_id",),
    ("agent_type",),
    ("permission_mode",),
    ("source",),
    ("task_id",),
    ("task_subject",),
    ("tool_input",),
    ("tool_input", "todos"),
    ("tool_input", "todos", 0),
    ("tool_input", "todos", 0, "content"),
    ("tool_input", "todos", 0, "status"),
    ("tool_input", "todos", 0, "activeForm"),
    ("tool_input", "todos", 0, "id"),
    ("tool_input", "plan"),
    ("tool_input", "planFilePath"),
    ("tool_input", "subject"),
    ("tool_input", "taskId"),
    ("tool_response",),
    ("tool_response", "task", "id"),
    ("background_tasks",),
    ("stop_hook_active",),
]


def put(payload: Any, path: tuple, value: Any) -> Any:
    """`payload` with `value` at `path`, creating containers on the way."""
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(key, int):
        items = list(payload) if isinstance(payload, list) else []
        items = items or [{}]
        items[0] = put(items[0], rest, value)
        return items
    container = dict(payload) if isinstance(payload, dict) else {}
    container[key] = put(container.get(key), rest, value)
    return container


@st.composite
def hook_bodies(draw) -> str:
    payload = load_fixture(draw(st.sampled_from(fixture_names())))
    for _ in range(draw(st.integers(1, 3))):
        payload = put(payload, draw(st.sampled_from(HOOK_PATHS)), draw(JSON))
    text = json.dumps(payload)
    if draw(st.booleans()):
        return text
    # Deep nesting somewhere, or a body that is all nesting.
    depth = draw(st.integers(min_value=60, max_value=5_000))
    if draw(st.booleans()):
        return nested(depth)
    return text[:-1] + f', "deep": {nested(depth)}}}'


@pytest.fixture
def quick_waits(settings) -> None:
    """A plan hook that passes validation is held for a reviewer, and a Stop with unfinished
    tasks for a countdown: both end at once here."""
    settings.AGENTBOARD_PLAN_HOOK_WAIT_SECONDS = 0.01
    settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS = 0.01
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 0.01


@FUZZ
@given(body=hook_bodies())
def test_no_hook_body_gets_a_server_error(hook, quick_waits, caplog, body):
    caplog.set_level(logging.WARNING)
    before = stored_state()

    response = hook(body)

    assert response.status_code < 500, response.content
    assert errors_in(caplog.records) == []
    if response.status_code >= 400:
        error = response.json()["error"]
        assert error["message"].endswith(".")
        assert stored_state() == before


FRAMES = [
    {"type": "ping", "id": 1},
    {"type": "todo_write", "id": 2, "session_id": "s-1", "agent_id": "s-1", "todos": [todo("A")]},
    {
        "type": "exit_plan_mode",
        "id": 3,
        "session_id": "s-1",
        "agent_id": "s-1",
        "plan": "# Plan",
        "plan_file_path": "/p.md",
    },
    {"type": "watch_plan", "id": 4, "plan_id": 1},
    {"type": "expire_plan", "id": 5, "plan_id": 1},
    {"type": "step", "id": 6, "session_id": "s-1", "agent_id": "s-1", "key": "k-1"},
]
FRAME_PATHS = [
    ("type",),
    ("id",),
    ("session_id",),
    ("agent_id",),
    ("agent_type",),
    ("cwd",),
    ("todos",),
    ("todos", 0),
    ("todos", 0, "content"),
    ("todos", 0, "id"),
    ("todos", 0, "status"),
    ("plan",),
    ("plan_file_path",),
    ("plan_id",),
    ("key",),
]


@st.composite
def frames(draw) -> str:
    frame: Any = dict(draw(st.sampled_from(FRAMES)))
    for _ in range(draw(st.integers(1, 3))):
        frame = put(frame, draw(st.sampled_from(FRAME_PATHS)), draw(JSON))
    text = json.dumps(frame)
    if draw(st.booleans()):
        return text
    depth = draw(st.integers(min_value=60, max_value=5_000))
    return nested(depth) if draw(st.booleans()) else text[:-1] + f', "deep": {nested(depth)}}}'


async def exchange(token: str, text: str) -> tuple[dict, dict]:
    """Send one frame on a fresh agent socket: its reply, and the answer to a ping after it."""
    socket = WebsocketCommunicator(
        application, "/ws/agent/", headers=[(b"authorization", f"Bearer {token}".encode())]
    )
    connected, _ = await socket.connect(timeout=5)
    assert connected
    try:
        await socket.send_to(text_data=text)
        reply = await socket.receive_json_from(timeout=10)
        await socket.send_json_to({"type": "ping", "id": "after"})
        pong = await socket.receive_json_from(timeout=5)
        # A watched plan decided meanwhile would come first; the ping's answer is the last.
        while pong.get("type") != "pong":
            pong = await socket.receive_json_from(timeout=5)
        return reply, pong
    finally:
        await socket.disconnect()


@FUZZ
@given(text=frames())
def test_no_frame_gets_an_internal_error(token, caplog, text):
    caplog.set_level(logging.WARNING)
    before = stored_state()

    reply, pong = run_async(exchange(token, text))

    assert reply["type"] in {"ack", "pong", "error"}
    assert pong == {"type": "pong", "id": "after"}
    assert errors_in(caplog.records) == []
    if reply["type"] == "error":
        assert reply["error"]["code"] != "internal_error", reply
        assert reply["error"]["message"].endswith(".")
        assert stored_state() == before


# --- every hook event of every agent kind, with arbitrary Unicode and extreme numbers ----------

GEMINI_SESSION = "3f1c1a52-7a47-4c39-9d1b-1d0c2a5f3e11"
OPENCODE_SESSION = "ses_main0001"


def gemini_event(name: str, **fields) -> dict:
    return {
        "session_id": GEMINI_SESSION,
        "cwd": "/home/dev/shop",
        "hook_event_name": name,
        "timestamp": "2026-11-26T14:00:00.000Z",
        **fields,
    }


def opencode_event(event_type: str, **properties) -> dict:
    return {"type": event_type, "properties": {"sessionID": OPENCODE_SESSION, **properties}}


def every_event() -> list[tuple[str, dict]]:
    """Every hook event each agent kind sends, as (endpoint, payload): the recorded payloads,
    and the events no payload was recorded for built as the agent sends them."""
    recorded = [
        (url, json.loads(path.read_text()))
        for url, folder in [
            ("/hooks/claude-code", "claude-code"),
            ("/hooks/codex", "codex"),
            ("/hooks/gemini", "gemini"),
        ]
        for path in sorted((FIXTURES / folder).glob("*.json"))
    ]
    shell = {"tool_name": "run_shell_command", "tool_input": {"command": "npm publish"}}
    gemini = [
        gemini_event("BeforeTool", **shell, agentboard_approvals=True),
        gemini_event(
            "Notification",
            notification_type="ToolPermission",
            message="Allow npm publish?",
            details={"type": "exec", "command": "npm publish"},
        ),
        gemini_event(
            "AfterTool",
            tool_name="write_todos",
            tool_input={"todos": [{"description": "Ship", "status": "in_progress"}]},
            tool_response={"llmContent": "Updated.", "returnDisplay": ""},
        ),
        gemini_event("SessionEnd", reason="exit"),
    ]
    info = {"id": OPENCODE_SESSION, "directory": "/work/shop", "title": "Fix it"}
    call = {"callID": "call_1", "tool": "bash"}
    opencode = [
        {"type": "session.created", "properties": {"info": info}},
        {"type": "session.deleted", "properties": {"info": info}},
        opencode_event("todo.updated", todos=[{"content": "A", "status": "pending"}]),
        opencode_event("session.idle"),
        opencode_event("session.error"),
        opencode_event("agentboard.activity", kind="step"),
        opencode_event("agentboard.other_enforcer", name="oh-my-opencode"),
        opencode_event("agentboard.tool", **call, status="completed", input={"n": 1}, exit=0),
        opencode_event("agentboard.gate", **call),
        opencode_event(
            "permission.asked",
            id="per_0001",
            permission="bash",
            patterns=["rm -rf build"],
            always=["rm *"],
            metadata={"command": "rm -rf build", "timeout": 60},
            tool={"messageID": "msg_1", "callID": "call_1"},
        ),
    ]
    usage = {
        "sessionID": OPENCODE_SESSION,
        "id": "msg_0001",
        "modelID": "gpt-5.5",
        "cost": 0.0123,
        "tokens": {"input": 900, "output": 40, "reasoning": 10, "cache": {"read": 300}},
        "completed": 1_795_690_876_000,
    }
    return [
        *recorded,
        *(("/hooks/gemini", payload) for payload in gemini),
        *(("/hooks/opencode", payload) for payload in opencode),
        ("/hooks/opencode/usage", usage),
    ]


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EVENTS = every_event()

SURROGATE_CHARACTERS = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
UNICODE = st.one_of(
    # Any code point, lone surrogates included.
    st.text(st.characters(exclude_categories=()), max_size=20),
    st.builds(
        lambda before, half, after: before + half + after,
        st.text(max_size=8),
        SURROGATE_CHARACTERS,
        st.text(max_size=8),
    ),
)
# As JSON text: escaped (lone surrogates as `\udXXX`), or raw UTF-8 where it can be.
STRING_LITERALS = st.one_of(
    UNICODE.map(json.dumps),
    st.text(max_size=20).map(lambda text: json.dumps(text, ensure_ascii=False)),
)
NUMBER_LITERALS = st.one_of(
    st.sampled_from(
        [
            *("1e400", "-1e400", "1E+309", "NaN", "Infinity", "-Infinity", "1e-400", "-0.0"),
            *(str(10**400), str(-(10**400)), str(2**63), str(-(2**63) - 1), str(2**64)),
        ]
    ),
    st.floats().map(json.dumps),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
)
SCALAR_LITERALS = st.one_of(STRING_LITERALS, NUMBER_LITERALS)
LITERALS = st.one_of(
    SCALAR_LITERALS,
    st.builds(lambda literal: f"[{literal}]", SCALAR_LITERALS),
    st.builds(lambda key, literal: f"{{{key}: {literal}}}", STRING_LITERALS, SCALAR_LITERALS),
)


def paths_in(value: Any, path: tuple = ()) -> list[tuple]:
    """Every place in a payload a value stands, the payload itself left out."""
    found = [path] if path else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths_in(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += paths_in(child, (*path, index))
    return found


def get(payload: Any, path: tuple) -> Any:
    for key in path:
        payload = payload[key]
    return payload


@st.composite
def agent_hooks(draw) -> tuple[str, str]:
    """An endpoint and a body: one of its events with one to three values replaced (or keys
    added) by arbitrary Unicode or extreme numbers, written as JSON text."""
    url, payload = draw(st.sampled_from(EVENTS))
    places = paths_in(payload)
    literals = []
    for index in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(places))
        if draw(st.booleans()):  # a field of its own beside this one
            path = (*path[:-1], draw(st.sampled_from(["x", "timeout", "id", "session_id"])))
        marker = f"@@value-{index}@@"
        payload = put(payload, path, marker)
        literals.append((marker, draw(LITERALS)))
    body = json.dumps(payload)
    for marker, literal in literals:
        body = body.replace(json.dumps(marker), literal)
    return url, body


def everything_stored() -> tuple:
    return (
        stored_state(),
        list(PermissionRequest.objects.order_by("pk").values_list("pk", "status")),
        list(TerminalWait.objects.order_by("pk").values_list("pk", "ended_at")),
    )


@settings(FUZZ, max_examples=250)
@given(sent=agent_hooks())
def test_no_hook_of_any_agent_kind_gets_a_server_error(agent_api, quick_waits, caplog, sent):
    url, body = sent
    caplog.set_level(logging.WARNING)
    before = everything_stored()

    response = agent_api.post(url, body.encode("utf-8", "surrogatepass"))

    assert response.status_code < 500, (url, body[:2000], response.content)
    assert errors_in(caplog.records) == []
    assert [record for record in caplog.records if record.exc_info] == []
    if response.status_code >= 400:
        error = response.json()["error"]
        assert error["message"].endswith(".")
        assert everything_stored() == before


@pytest.mark.parametrize(
    "number", [2**63, -(2**63) - 1, 10**400], ids=["2**63", "-2**63-1", "10**400"]
)
def test_an_integer_past_64_bits_in_any_number_of_any_event_is_no_server_error(
    agent_api, quick_waits, server_errors, number
):
    """Valid JSON that Python reads as an int, which no integer column holds: every number of
    every event (a command's exit code, a token count, a time) in turn."""
    for url, payload in EVENTS:
        for path in paths_in(payload):
            value = get(payload, path)
            if isinstance(value, int | float) and not isinstance(value, bool):
                response = agent_api.post(url, json.dumps(put(payload, path, number)))
                assert response.status_code < 500, (url, path, response.content)
    assert errors_in(server_errors) == []
