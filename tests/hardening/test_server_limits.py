"""The limits of the real server, started as the README starts it (`manage.py serve`): slow
requests are cut off, and a socket message too big to read is refused with a close code."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.hardening.conftest import run_async
from tests.hooks.conftest import HOOK_URL, load_fixture

pytestmark = pytest.mark.timeout(120)

ARRIVAL_SECONDS = 2
SLOW_CLIENTS = 200


@pytest.fixture
def server(server_factory):
    return server_factory(
        env={
            "AGENTBOARD_REQUEST_ARRIVAL_SECONDS": str(ARRIVAL_SECONDS),
            "AGENTBOARD_PLAN_HOOK_WAIT_SECONDS": str(ARRIVAL_SECONDS * 2),
        }
    )


async def trickle_headers(port: int, seconds: float) -> tuple[bytes, float]:
    """Send a request's headers a byte at a time; return what the server answered and when
    it closed the connection (or `seconds` if it never did)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    answer = b""
    try:
        while time.monotonic() - started < seconds:
            writer.write(b"X")  # a header name that never ends
            await writer.drain()
            try:
                chunk = await asyncio.wait_for(reader.read(1024), 0.5)
            except TimeoutError:
                continue
            answer += chunk
            if not chunk:
                break
    except ConnectionError:
        pass
    finally:
        writer.close()
    return answer, time.monotonic() - started


async def request(port: int, writer_reader=None) -> tuple[int, tuple]:
    reader, writer = writer_reader or await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    await reader.readexactly(length)
    return int(head.split()[1]), (reader, writer)


def test_connections_that_trickle_their_headers_are_answered_408_and_closed(server):
    async def scenario() -> None:
        slow = [trickle_headers(server.port, 4 * ARRIVAL_SECONDS) for _ in range(SLOW_CLIENTS)]
        results = asyncio.gather(*slow)
        await asyncio.sleep(0.5)
        # Meanwhile the server answers everyone else.
        status, (_, writer) = await request(server.port)
        writer.close()
        assert status == 200
        for answer, closed_after in await results:
            assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
            assert b"send it again, whole" in answer
            assert closed_after < ARRIVAL_SECONDS + 1.5

    run_async(scenario())


def test_a_burst_of_connections_waits_in_the_backlog_while_the_server_is_busy(server):
    """A thousand agents reconnecting after a restart arrive at once. While the server cannot
    accept them (here: paused), the kernel holds them in the listen backlog; one too short
    (Twisted's default is 50) drops the rest, and each of those waits a second or more to retry."""
    burst = 300

    async def scenario() -> list[bool]:
        async def connect() -> bool:
            try:
                # Long enough for a busy test machine; a connection the kernel dropped waits
                # 1, 3, 7 s for its retries, and finds the backlog as full each time.
                _, writer = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", server.port), 10
                )
            except TimeoutError:
                return False
            writer.close()
            return True

        return await asyncio.gather(*(connect() for _ in range(burst)))

    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        connected = run_async(scenario())
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    assert sum(connected) == burst


def test_an_idle_keep_alive_connection_is_not_cut_by_the_arrival_deadline(server):
    async def scenario() -> None:
        status, connection = await request(server.port)
        await asyncio.sleep(ARRIVAL_SECONDS + 1)
        again, (_, writer) = await request(server.port, connection)
        writer.close()
        assert (status, again) == (200, 200)

    run_async(scenario())


def test_a_held_hook_request_outlives_the_arrival_deadline(server):
    """The deadline is for a request to arrive; once it has, the server may take its time
    (here a plan waits for a reviewer until AGENTBOARD_PLAN_HOOK_WAIT_SECONDS ends it)."""
    import urllib.request

    body = json.dumps(load_fixture("permission_request_exit_plan_mode.json")).encode()
    held = urllib.request.Request(
        server.url + HOOK_URL,
        data=body,
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    started = time.monotonic()
    with urllib.request.urlopen(held, timeout=30) as response:
        assert response.status == 200
        assert json.loads(response.read()) == {}
    assert time.monotonic() - started >= ARRIVAL_SECONDS * 2 - 0.5


def agent_socket(server):
    return connect(
        server.ws_url + "/ws/agent/",
        additional_headers={"Authorization": f"Bearer {server.token}"},
        open_timeout=10,
    )


def test_a_socket_message_over_1_mib_is_refused_with_close_code_1009_and_a_reason(server):
    with agent_socket(server) as socket:
        socket.send("x" * (1024 * 1024 + 1))
        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=10)

    assert closed.value.rcvd is not None, "the server dropped the connection without a close"
    assert closed.value.rcvd.code == 1009
    assert "exceeds payload limit" in closed.value.rcvd.reason


def test_a_frame_over_the_body_limit_but_under_1_mib_gets_an_error_and_the_socket_stays(server):
    with agent_socket(server) as socket:
        socket.send(json.dumps({"type": "ping", "id": "big", "pad": "x" * 300_000}))
        reply = json.loads(socket.recv(timeout=10))
        socket.send(json.dumps({"type": "ping", "id": "after"}))
        pong = json.loads(socket.recv(timeout=10))

    assert reply["error"]["code"] == "payload_too_large"
    assert pong == {"type": "pong", "id": "after"}
