"""Property tests: hostile JSON into every hook event and every socket frame, built from real
payloads with parts replaced by arbitrary JSON, hostile strings (lone surrogates, NUL
characters, text past every column, whitespace), wrong types and deep nesting. Whatever arrives,
the server answers below 500 without a traceback, and a refusal leaves everything stored as it
was. The number of examples is bounded so the suite stays fast."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.asgi import application
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
