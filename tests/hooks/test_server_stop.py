"""Stopping a real server (SIGTERM) while agents wait on it: quick, clean, and every held
request gets an answer, so agents fall back to their terminal instead of hanging."""

from __future__ import annotations

import asyncio
import json
import signal
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import websockets

from tests.hooks.conftest import load_fixture
from tests.hooks.test_held_requests_live import plan_status, post_hook, until_plan_exists

pytestmark = pytest.mark.timeout(300)

HELD = 30
SOCKETS = 20


def run(scenario) -> None:
    # Its own thread: the session's Playwright browser may hold this thread's event loop.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, scenario).result()


def terminate_and_time(server) -> tuple[float, int]:
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    code = server.process.wait(30)
    return time.monotonic() - started, code


def test_sigterm_answers_every_held_hook_and_closes_agent_sockets_for_a_reconnect(server_factory):
    # A long countdown, so that a Stop hook is still held when the server stops.
    server = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "120"})

    async def scenario() -> None:
        held = [
            asyncio.create_task(
                post_hook(
                    server,
                    load_fixture("permission_request_exit_plan_mode.json", session_id=f"stop-{n}"),
                )
            )
            for n in range(HELD)
        ]
        await until_plan_exists(server, HELD)
        # An agent with work left stops: its Stop hook is held for the countdown.
        todo = load_fixture("post_tool_use_todowrite.json", session_id="counting")
        assert (await post_hook(server, todo))[0] == 200
        counting = asyncio.create_task(
            post_hook(server, load_fixture("stop.json", session_id="counting"))
        )
        sockets = [
            await websockets.connect(
                f"{server.ws_url}/ws/agent/",
                additional_headers={"Authorization": f"Bearer {server.token}"},
            )
            for _ in range(SOCKETS)
        ]
        await asyncio.sleep(0.5)
        assert not any(task.done() for task in [*held, counting])

        took, code = await asyncio.to_thread(terminate_and_time, server)
        assert code == 0, f"the server ended with {code}:\n{server.log()[-3000:]}"
        assert took < 10
        answers = await asyncio.wait_for(asyncio.gather(*held, counting), 5)
        assert answers == [(200, {})] * (HELD + 1)
        for agent_socket in sockets:
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(agent_socket.recv(), 5)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1012

        # What the agents were told is what the board shows after a restart.
        await asyncio.to_thread(server.start)
        statuses = {await asyncio.to_thread(plan_status, server, n) for n in range(1, HELD + 1)}
        assert statuses == {"expired"}
        assert "Countdown cancelled by a server stop" in await asyncio.to_thread(
            board_history, server
        )

    run(scenario())
    assert "Traceback" not in server.log()


def board_history(server) -> str:
    """The counting session's page, as the lead sees it after logging in."""
    import http.cookiejar

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(f"{server.url}/accounts/login/") as response:
        response.read()
    token = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    form = f"username={server.username}&password={server.password}&csrfmiddlewaretoken={token}"
    login = urllib.request.Request(
        f"{server.url}/accounts/login/",
        data=form.encode(),
        headers={"Referer": f"{server.url}/accounts/login/"},
    )
    with opener.open(login) as response:
        response.read()
    with opener.open(f"{server.url}/sessions/counting/") as response:
        return response.read().decode()


def test_sigterm_under_write_load_stops_quickly_and_keeps_every_acknowledged_write(
    agentboard_server,
):
    server = agentboard_server
    acknowledged: list[int] = []

    async def writer(n: int, stop: asyncio.Event) -> None:
        revision = 0
        while not stop.is_set():
            revision += 1
            todos = [{"content": f"Step {revision}", "status": "in_progress"}]
            body = {"todos": todos}
            try:
                status = await put_todos(server, f"load-{n}", body)
            except (ConnectionError, OSError, ValueError, IndexError):
                return  # the server went away: this write got no answer
            if status == 200:
                acknowledged.append((n, revision))

    async def scenario() -> None:
        stop = asyncio.Event()
        writers = [asyncio.create_task(writer(n, stop)) for n in range(8)]
        await asyncio.sleep(1.5)
        took, code = await asyncio.to_thread(terminate_and_time, server)
        stop.set()
        await asyncio.wait_for(asyncio.gather(*writers), 10)
        assert code == 0, f"the server ended with {code}:\n{server.log()[-3000:]}"
        assert took < 10
        assert acknowledged
        await asyncio.to_thread(server.start)
        # The last acknowledged write of every agent is what the board has.
        last = {}
        for n, revision in acknowledged:
            last[n] = max(revision, last.get(n, 0))
        for n, revision in last.items():
            todos = await asyncio.to_thread(read_todos, server, f"load-{n}")
            assert todos[0]["content"] in {f"Step {revision}", f"Step {revision + 1}"}

    run(scenario())


async def put_todos(server, session_id: str, body: dict) -> int:
    data = json.dumps(body).encode()
    path = f"/api/v1/sessions/{session_id}/agents/{session_id}/todos"
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(
        f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Authorization: Bearer {server.token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
        + data
    )
    try:
        await writer.drain()
        response = await reader.read()
    finally:
        writer.close()
    return int(response.split(maxsplit=2)[1])


def read_todos(server, session_id: str) -> list[dict]:
    request = urllib.request.Request(
        f"{server.url}/api/v1/sessions/{session_id}/agents/{session_id}/todos",
        headers={"Authorization": f"Bearer {server.token}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["todos"]


def test_a_second_signal_exits_at_once_while_the_first_stop_still_waits(server_factory):
    # A long grace, so that only the second signal can make it quick.
    server = server_factory(env={"AGENTBOARD_STOP_GRACE_SECONDS": "60"})

    async def scenario() -> None:
        held = asyncio.create_task(
            post_hook(server, load_fixture("permission_request_exit_plan_mode.json"))
        )
        await until_plan_exists(server, 1)
        started = time.monotonic()
        server.process.send_signal(signal.SIGINT)
        server.process.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(server.process.wait, 30)
        took = time.monotonic() - started
        held.cancel()

        # The process may take the two in either order: the second one exits with its number.
        assert code in {128 + signal.SIGINT, 128 + signal.SIGTERM}, server.log()[-3000:]
        assert took < 5
        assert "Stopping at once (a second signal)" in server.log()

    run(scenario())
