from __future__ import annotations

import json
import time

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.utils import timezone

from dashboard.core import services
from dashboard.core.services import TOKEN_CACHE_SECONDS
from dashboard.models import AgentToken, Session
from tests.conftest import todo, write_todos
from todos.models import TodoRevision

pytestmark = pytest.mark.django_db(transaction=True)

LIST = [
    {"content": "Fix tests", "status": "completed", "activeForm": "Fixing tests"},
    {"content": "Update docs", "status": "in_progress", "activeForm": "Updating docs"},
    {"content": "Run build", "status": "pending", "activeForm": "Running build"},
]
CLOSED_UNAUTHENTICATED = {"type": "websocket.close", "code": 4401}


@pytest.fixture
async def agent_socket(open_socket, token):
    socket, accepted = await open_socket("/ws/agent/", {"Authorization": f"Bearer {token}"})
    assert accepted
    return socket


def write_frame(session_id: str = "sess-ws", todos: list[dict] = LIST, **extra) -> dict:
    return {
        "type": "todo_write",
        "session_id": session_id,
        "agent_id": session_id,
        "todos": todos,
        **extra,
    }


async def assert_still_answers(socket) -> None:
    await socket.send_json_to({"type": "ping", "id": "still-there"})
    assert await socket.receive_json_from(timeout=2) == {"type": "pong", "id": "still-there"}


# --- authentication ---------------------------------------------------------------------------


async def test_it_closes_a_socket_without_a_token_with_4401(open_socket):
    socket, _ = await open_socket("/ws/agent/")
    assert await socket.receive_output(timeout=2) == CLOSED_UNAUTHENTICATED


async def test_it_closes_a_socket_with_an_unknown_token_with_4401(open_socket):
    socket, _ = await open_socket("/ws/agent/", {"Authorization": "Bearer ab_made-up"})
    assert await socket.receive_output(timeout=2) == CLOSED_UNAUTHENTICATED


async def test_it_closes_a_socket_with_a_revoked_token_with_4401(open_socket, token):
    await database_sync_to_async(AgentToken.objects.update)(revoked_at=timezone.now())

    socket, _ = await open_socket("/ws/agent/", {"Authorization": f"Bearer {token}"})

    assert await socket.receive_output(timeout=2) == CLOSED_UNAUTHENTICATED


def revoke_in_the_admin() -> None:
    for token in AgentToken.objects.all():
        token.revoked_at = timezone.now()
        token.save()


async def test_revoking_a_token_closes_the_sockets_open_with_it(agent_socket):
    await assert_still_answers(agent_socket)
    await database_sync_to_async(revoke_in_the_admin)()
    assert await agent_socket.receive_output(timeout=2) == CLOSED_UNAUTHENTICATED


async def test_deactivating_the_user_closes_the_sockets_of_their_tokens(agent_socket, user):
    await assert_still_answers(agent_socket)
    user.is_active = False
    await database_sync_to_async(user.save)()
    assert await agent_socket.receive_output(timeout=2) == CLOSED_UNAUTHENTICATED


async def test_a_socket_whose_token_was_revoked_elsewhere_can_not_write_after_a_second(
    agent_socket, monkeypatch
):
    await assert_still_answers(agent_socket)
    # Revoked by another process whose push to this socket was lost.
    await database_sync_to_async(AgentToken.objects.update)(revoked_at=timezone.now())
    later = time.monotonic() + TOKEN_CACHE_SECONDS + 0.01
    monkeypatch.setattr(services, "monotonic", lambda: later)

    await agent_socket.send_json_to(write_frame(session_id="after-revoke"))

    assert await agent_socket.receive_output(timeout=2) == CLOSED_UNAUTHENTICATED
    assert not await database_sync_to_async(
        Session.objects.filter(session_id="after-revoke").exists
    )()


async def test_it_closes_a_socket_with_a_bad_token_in_the_query_with_4401(open_socket):
    socket, _ = await open_socket("/ws/agent/?token=ab_made-up")
    assert await socket.receive_output(timeout=2) == CLOSED_UNAUTHENTICATED


async def test_it_takes_the_token_from_the_authorization_header(agent_socket):
    await assert_still_answers(agent_socket)


async def test_it_takes_the_token_from_the_query_for_clients_without_headers(open_socket, token):
    socket, accepted = await open_socket(f"/ws/agent/?token={token}")

    assert accepted
    await assert_still_answers(socket)


# --- frames -----------------------------------------------------------------------------------


@pytest.mark.parametrize("frame_id", ["p-1", 42])
async def test_a_ping_is_answered_with_a_pong_echoing_its_id(agent_socket, frame_id):
    await agent_socket.send_json_to({"type": "ping", "id": frame_id})
    assert await agent_socket.receive_json_from(timeout=2) == {"type": "pong", "id": frame_id}


async def test_a_todo_write_is_acknowledged_with_the_same_result_as_a_put(agent_socket, agent_api):
    await agent_socket.send_json_to(write_frame("sess-ws", id="w-1"))
    ack = await agent_socket.receive_json_from(timeout=5)

    put = await sync_to_async(agent_api.put_todos)("sess-http", "sess-http", {"todos": LIST})

    assert put.status_code == 200
    assert ack == {"type": "ack", "id": "w-1", "result": put.json()}


async def test_a_todo_write_is_stored_and_read_back_over_http(agent_socket, agent_api):
    await agent_socket.send_json_to(write_frame("sess-ws", id=1))
    await agent_socket.receive_json_from(timeout=5)
    await agent_socket.send_json_to(write_frame("sess-ws", [todo("Ship it")], id=2))
    ack = await agent_socket.receive_json_from(timeout=5)

    read = (await sync_to_async(agent_api.get_todos)("sess-ws", "sess-ws")).json()

    assert (ack["result"]["revision"], ack["result"]["old_todos"]) == (2, LIST)
    assert read["todos"] == [todo("Ship it")]
    sources = await database_sync_to_async(
        lambda: set(TodoRevision.objects.values_list("source", flat=True))
    )()
    assert sources == {"socket"}


async def test_a_todo_write_can_name_the_subagents_type_and_the_project(agent_socket):
    await agent_socket.send_json_to(write_frame("sess-ws", cwd="/home/dana/shop"))
    await agent_socket.receive_json_from(timeout=5)
    await agent_socket.send_json_to(
        {**write_frame("sess-ws"), "agent_id": "agent-2", "agent_type": "Explore"}
    )
    await agent_socket.receive_json_from(timeout=5)

    session = await database_sync_to_async(Session.objects.get)(session_id="sess-ws")
    labels = await database_sync_to_async(
        lambda: {agent.agent_id: agent.label for agent in session.agents.all()}
    )()
    assert session.project == "shop"
    assert labels == {"sess-ws": "main", "agent-2": "Explore"}


async def session_exists(session_id: str) -> bool:
    return await database_sync_to_async(Session.objects.filter(session_id=session_id).exists)()


@pytest.mark.parametrize(
    ("raw", "code", "frame_id"),
    [
        ('{"type": "ping", "id": "x"', "malformed_json", None),
        ("[1, 2]", "malformed_json", None),
        ('"ping"', "malformed_json", None),
        (json.dumps({"type": "dance", "id": "f-1"}), "unknown_frame_type", "f-1"),
        (json.dumps({"id": "f-2", "session_id": "sess-ws"}), "unknown_frame_type", "f-2"),
        (
            json.dumps(write_frame(id="f-3", todos=[{"content": "x", "status": "done"}])),
            "validation_error",
            "f-3",
        ),
        (
            json.dumps(write_frame(id="f-4", todos=[{"content": "", "status": "pending"}])),
            "validation_error",
            "f-4",
        ),
        (
            json.dumps(write_frame(id="f-5", todos=[{"content": 1, "status": "pending"}])),
            "validation_error",
            "f-5",
        ),
        (json.dumps(write_frame(id="f-6", merge=True)), "validation_error", "f-6"),
        (json.dumps({"type": "todo_write", "id": "f-7", "todos": LIST}), "validation_error", "f-7"),
    ],
    ids=[
        "broken json",
        "array",
        "string",
        "unknown type",
        "no type",
        "unknown status",
        "empty content",
        "content as int",
        "unknown key",
        "no session id",
    ],
)
async def test_an_invalid_frame_gets_an_error_frame_and_the_socket_stays_open(
    agent_socket, raw, code, frame_id
):
    await agent_socket.send_to(text_data=raw)

    reply = await agent_socket.receive_json_from(timeout=2)

    assert reply["type"] == "error"
    assert reply["id"] == frame_id
    assert reply["error"]["code"] == code
    assert reply["error"]["message"].endswith(".")
    await assert_still_answers(agent_socket)
    assert not await session_exists("sess-ws")


async def test_an_invalid_todo_is_named_by_its_field_path(agent_socket):
    await agent_socket.send_json_to(
        write_frame(id="f", todos=[todo("Fine"), {"content": "Run build", "status": "done"}])
    )

    reply = await agent_socket.receive_json_from(timeout=2)

    assert [d["loc"] for d in reply["error"]["detail"]] == [["todos", 1, "status"]]
    assert reply["error"]["message"].startswith("todos.1.status: ")


async def test_a_binary_frame_gets_an_error_frame(agent_socket):
    await agent_socket.send_to(bytes_data=b'{"type": "ping"}')

    reply = await agent_socket.receive_json_from(timeout=2)

    assert reply["error"]["code"] == "malformed_json"
    await assert_still_answers(agent_socket)


async def test_an_oversize_frame_gets_an_error_frame(agent_socket, settings):
    settings.AGENTBOARD_MAX_BODY_BYTES = 1000

    await agent_socket.send_json_to(write_frame(todos=[todo(f"Task {n}") for n in range(40)]))

    reply = await agent_socket.receive_json_from(timeout=2)
    assert reply["error"]["code"] == "payload_too_large"
    await assert_still_answers(agent_socket)
    assert not await session_exists("sess-ws")


async def test_a_refused_write_gets_an_error_frame_with_the_service_reason(
    agent_socket, other_user
):
    await database_sync_to_async(write_todos)(other_user, "theirs", "theirs", [todo("Their task")])

    await agent_socket.send_json_to(write_frame("theirs", id="w"))

    reply = await agent_socket.receive_json_from(timeout=2)
    assert (reply["type"], reply["id"], reply["error"]["code"]) == (
        "error",
        "w",
        "session_forbidden",
    )
    await assert_still_answers(agent_socket)


async def test_a_write_in_plan_mode_gets_an_error_frame(agent_socket, user):
    await database_sync_to_async(write_todos)(user, "sess-ws", "sess-ws", [todo("Research")])
    await database_sync_to_async(Session.objects.update)(permission_mode="plan")

    await agent_socket.send_json_to(write_frame("sess-ws", id="w"))

    reply = await agent_socket.receive_json_from(timeout=2)
    assert reply["error"]["code"] == "plan_mode_active"


async def test_an_ack_of_a_list_in_any_script_stays_the_size_of_the_list(agent_socket):
    items = [{"content": "中文任务 ✓ жук 😀 " * 40, "status": "pending"} for _ in range(100)]
    frame = json.dumps(write_frame(session_id="wide-text", todos=items), ensure_ascii=False)

    await agent_socket.send_to(text_data=frame)
    ack = await agent_socket.receive_from(timeout=5)

    assert json.loads(ack)["type"] == "ack"
    # Old and new lists plus the rendered text: about three times the list, never six.
    assert len(ack.encode()) < 4 * len(frame.encode())
