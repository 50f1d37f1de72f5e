"""Hundreds of plan hooks held at once by one real server process."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import pytest

from tests.client.conftest import Reviewer
from tests.hooks.conftest import HOOK_URL, load_fixture

pytestmark = pytest.mark.timeout(600)

HELD = 200
WAVE = 10


async def post_hook(server, payload: dict) -> tuple[int, dict]:
    """One HTTP/1.1 request on its own connection, as Claude Code's HTTP hook makes it."""
    body = json.dumps(payload).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(
        f"POST {HOOK_URL} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Authorization: Bearer {server.token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    try:
        await writer.drain()
        response = await reader.read()
    finally:
        writer.close()
    head, _, content = response.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        content = dechunk(content)
    status = int(head.split()[1])
    return status, json.loads(content or b"{}")


def dechunk(data: bytes) -> bytes:
    body = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        body, data = body + data[:size], data[size + 2 :]
    return body


def settled(server) -> bool:
    """With PostgreSQL: only a few connections are open (the submissions' work is done and
    the held requests gave theirs back): one per long-lived thread and one the pool keeps for
    the pages. SQLite has no connections to count."""
    url = server.env.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        return True
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as connection:
        count = connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [name]
        ).fetchone()[0]
    return count <= 6


def test_hundreds_of_held_plans_do_not_block_the_server(agentboard_server):
    server = agentboard_server

    async def scenario() -> None:
        held = []
        # In waves, as agents submit plans over time; plan ids count up from 1 on a fresh
        # server, so the wave's last id shows that all of the wave are held.
        for first in range(0, HELD, WAVE):
            for n in range(first, first + WAVE):
                payload = load_fixture(
                    "permission_request_exit_plan_mode.json", session_id=f"held-{n}"
                )
                held.append(asyncio.create_task(post_hook(server, payload)))
            await until_plan_exists(server, first + WAVE)
            await until(lambda: settled(server))
        assert not any(task.done() for task in held)
        # While they all wait, the server answers other hooks promptly (a worker thread per
        # held request would have run out long ago)...
        started = time.monotonic()
        status, output = await post_hook(server, load_fixture("stop.json"))
        assert (status, output) == (200, {})
        assert time.monotonic() - started < 5
        # ...and the waiting requests hold no database connection.
        assert settled(server)
        # A decision wakes exactly the request that waits for it...
        decided = held.pop(int(plan_state(server, 1)["session_id"].removeprefix("held-")))
        await asyncio.to_thread(Reviewer(server).decide, 1, "approve")
        status, output = await asyncio.wait_for(decided, 30)
        assert output["hookSpecificOutput"]["decision"]["behavior"] == "allow"
        assert not any(task.done() for task in held)
        # ...and agents that stop waiting (connection closed) leave no plan pending.
        for task in held:
            task.cancel()
        await asyncio.gather(*held, return_exceptions=True)
        await until(lambda: {plan_status(server, n) for n in range(2, HELD + 1)} == {"expired"})

    # Its own thread: the session's Playwright browser may hold this thread's event loop.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, scenario()).result()


def plan_state(server, plan_id: int) -> dict | None:
    request = urllib.request.Request(
        f"{server.url}/api/v1/plans/{plan_id}",
        headers={"Authorization": f"Bearer {server.token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        assert error.code == 404
        return None


def plan_status(server, plan_id: int) -> str | None:
    state = plan_state(server, plan_id)
    return state and state["status"]


async def until(condition) -> None:
    deadline = time.monotonic() + 120
    while not await asyncio.to_thread(condition):
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.05)


async def until_plan_exists(server, plan_id: int) -> None:
    await until(lambda: plan_status(server, plan_id) is not None)
