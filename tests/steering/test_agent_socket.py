"""Agents of your own on the agent socket: after `watch_agent`, what the board says to the agent
is pushed as a `message` frame, once, whichever socket or process watches it."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from dashboard.core.writer import write
from dashboard.steering import services
from dashboard.steering.models import Directive
from tests.conftest import write_todos

pytestmark = pytest.mark.django_db(transaction=True)

SESSION_ID = "sess-own-agent"


@pytest.fixture
def open_agent_socket(open_socket, token):
    async def open_():
        socket, accepted = await open_socket("/ws/agent/", {"Authorization": f"Bearer {token}"})
        assert accepted
        return socket

    return open_


async def watching(socket, agent_id: str = SESSION_ID, frame_id: str = "w-1") -> None:
    await socket.send_json_to(
        {"type": "watch_agent", "id": frame_id, "session_id": SESSION_ID, "agent_id": agent_id}
    )
    ack = await socket.receive_json_from(timeout=5)
    assert ack == {
        "type": "ack",
        "id": frame_id,
        "result": {"session_id": SESSION_ID, "agent_id": agent_id},
    }


async def send_message(by, text: str, agent_id: str = SESSION_ID) -> None:
    await write(
        services.message_send,
        user=by,
        target=services.Target(SESSION_ID, agent_id),
        text=text,
    )


def delivered() -> list[tuple[str, str, str]]:
    return list(Directive.objects.order_by("pk").values_list("text", "state", "delivered_via"))


async def test_a_message_queued_for_a_watched_agent_is_pushed_once(open_agent_socket, user):
    socket = await open_agent_socket()
    await watching(socket)

    await send_message(user, "Use the staging database, not production.")

    frame = await socket.receive_json_from(timeout=5)
    [directive] = await database_sync_to_async(list)(Directive.objects.all())
    assert frame == {
        "type": "message",
        "id": directive.pk,
        "session_id": SESSION_ID,
        "agent_id": SESSION_ID,
        "text": "Use the staging database, not production.",
        "from": "dana",
        "sent_at": directive.created_at.isoformat(),
    }
    assert await socket.receive_nothing(timeout=0.3)
    assert await database_sync_to_async(delivered)() == [
        ("Use the staging database, not production.", "delivered", "agent socket")
    ]


async def test_what_was_queued_before_the_socket_watched_is_pushed_on_watch(
    open_agent_socket, user
):
    first = await open_agent_socket()
    await watching(first)
    await first.disconnect()
    await send_message(user, "First.")
    await send_message(user, "Second.")

    again = await open_agent_socket()
    await watching(again)

    texts = [(await again.receive_json_from(timeout=5))["text"] for _ in range(2)]
    assert texts == ["First.", "Second."]
    assert await again.receive_nothing(timeout=0.3)


async def test_a_client_that_reconnects_is_not_pushed_what_it_already_had(open_agent_socket, user):
    first = await open_agent_socket()
    await watching(first)
    await send_message(user, "Only once.")
    assert (await first.receive_json_from(timeout=5))["text"] == "Only once."
    await first.disconnect()

    again = await open_agent_socket()
    await watching(again)

    assert await again.receive_nothing(timeout=0.3)


async def test_of_two_sockets_watching_one_agent_only_one_gets_each_message(
    open_agent_socket, user
):
    one, two = await open_agent_socket(), await open_agent_socket()
    await watching(one)
    await watching(two)

    await send_message(user, "For whoever is listening.")

    frames = []
    for socket in (one, two):
        if not await socket.receive_nothing(timeout=0.5):
            frames.append(await socket.receive_json_from(timeout=1))
    assert [frame["text"] for frame in frames] == ["For whoever is listening."]


async def test_a_message_for_another_agent_is_not_pushed(open_agent_socket, user):
    socket = await open_agent_socket()
    await watching(socket)
    other = await open_agent_socket()
    await watching(other, agent_id="subagent-1", frame_id="w-2")

    await send_message(user, "Only for the subagent.", agent_id="subagent-1")

    assert (await other.receive_json_from(timeout=5))["text"] == "Only for the subagent."
    assert await socket.receive_nothing(timeout=0.3)


async def test_watching_another_users_session_is_refused_with_one_sentence(
    open_agent_socket, other_user
):
    await database_sync_to_async(write_todos)(
        other_user, SESSION_ID, SESSION_ID, [{"content": "A", "status": "pending"}]
    )
    socket = await open_agent_socket()

    await socket.send_json_to(
        {"type": "watch_agent", "id": "w-9", "session_id": SESSION_ID, "agent_id": SESSION_ID}
    )

    refused = await socket.receive_json_from(timeout=5)
    assert refused["type"] == "error" and refused["id"] == "w-9"
    assert refused["error"]["code"] == "session_forbidden"
