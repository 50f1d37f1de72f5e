"""The benchmark's steering part: what messages, pauses and stops cost the agents' hooks.

- The hooks of agents with nothing queued keep their figures while others are steered (50
  messages queued, 100 agents paused): PostToolUse tool steps and PreToolUse + PostToolUse
  pairs, closed loop and at a steady 100/s, each next to the same before anything was steered.
- A message to the 50 agents of a session is one write: its answer next to a message to one.
- 100 paused agents' PreToolUse hooks held at once cost no thread: the server's threads while
  they wait, and the time from one resume until every one of them was let go.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path

from tests.bench.load import Connection, closed_loop, http_request, open_loop
from tests.liveserver import LiveServer

CLIENTS = 16
# A held hook says its client waits this long: the server holds it 5 s less at most.
HELD_HOOK_TIMEOUT = 60
Row = Callable[..., None]


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def _pre_tool_use(token: str, session_id: str, agent_id: str, n: int) -> bytes:
    body = {
        "session_id": session_id,
        "hook_event_name": "PreToolUse",
        "cwd": "/work/bench-steering",
        "permission_mode": "default",
        "tool_use_id": f"toolu_{uuid.uuid4().hex}",
        "tool_name": "Bash",
        "tool_input": {"command": f"make deploy-{n}"},
    }
    if agent_id != session_id:
        body |= {"agent_id": agent_id, "agent_type": "general-purpose"}
    headers = {
        "Authorization": f"Bearer {token}",
        "X-Agentboard-Hook-Timeout": str(HELD_HOOK_TIMEOUT),
    }
    return http_request("POST", "/hooks/claude-code", body=body, headers=headers)


async def _agents(server: LiveServer, session_id: str, count: int) -> list[str]:
    """A running session with `count` agents (its main agent and subagents), each known to the
    board by a first tool call."""
    agent_ids = [session_id] + [f"{session_id}-sub-{i}" for i in range(1, count)]
    connection = await Connection.open(server.port)
    try:
        for n, agent_id in enumerate(agent_ids):
            answer = await connection.send(_pre_tool_use(server.token, session_id, agent_id, n))
            assert answer.status == 200, answer
    finally:
        connection.close()
    return agent_ids


def _post(server: LiveServer, path: str, body: dict) -> tuple[int, float]:
    """POST to the agent API with the board's token; its status and seconds."""
    request = urllib.request.Request(
        server.url + "/api/v1" + path,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
        method="POST",
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, time.perf_counter() - started


async def _hook_figures(server: LiveServer, seconds: float, hook_maker) -> dict[str, float]:
    figures = {}
    for kind, label in (("step", "PostToolUse"), ("call", "Pre+Post")):
        make = hook_maker(server.token, kind, first_client=1000)
        await closed_loop(server.port, make, clients=CLIENTS, seconds=min(1.0, seconds / 3))
        figures[label] = (
            await closed_loop(server.port, make, clients=CLIENTS, seconds=seconds)
        ).rate
    call = hook_maker(server.token, "call", first_client=2000)
    steady = await open_loop(
        server.port, lambda number: call(number % CLIENTS), rate=100, seconds=seconds
    )
    figures["p99"] = steady.percentile(0.99)
    return figures


async def steering(server: LiveServer, seconds: float, row: Row, hook_maker, smoke: bool) -> None:
    print("\nSteering (messages, pauses, stops), embedded default (SQLite):")
    before = await _hook_figures(server, seconds, hook_maker)

    # A message to one agent, then to the 50 agents of a session: one statement for all.
    [one] = await _agents(server, "bench-steer-one", 1)
    await asyncio.to_thread(
        _post, server, f"/sessions/{one}/agents/{one}/messages", {"text": "Warm up."}
    )
    _, to_one = await asyncio.to_thread(
        _post, server, f"/sessions/{one}/agents/{one}/messages", {"text": "Use staging."}
    )
    await _agents(server, "bench-steer-fifty", 50)
    status, to_fifty = await asyncio.to_thread(
        _post, server, "/sessions/bench-steer-fifty/messages", {"text": "Use staging."}
    )
    row(
        "message to the 50 agents of a session (one write)",
        f"{to_fifty * 1000:8.1f} ms",
        f"to one agent: {to_one * 1000:.1f} ms; goal ≤ 3 x one; HTTP {status}",
        _check(to_fifty <= 3 * to_one and status == 201),
    )

    # 100 agents paused at once, their next tool calls held.
    held_count = 100
    paused_agents = await _agents(server, "bench-steer-paused", held_count)
    status, took = await asyncio.to_thread(
        _post, server, "/sessions/bench-steer-paused/pause", {"reason": "Deploy freeze"}
    )
    row("pause the 100 agents of a session", f"{took * 1000:8.1f} ms", f"HTTP {status}")

    # Nothing queued for these agents, while others have messages queued and are paused.
    after = await _hook_figures(server, seconds, hook_maker)
    for label, what in (
        ("PostToolUse", "hook PostToolUse, tool step"),
        ("Pre+Post", "hook PreToolUse + PostToolUse, tool call"),
    ):
        ratio = after[label] / before[label]
        row(
            f"{what}, others steered",
            f"{after[label]:8.0f} req/s",
            f"before any steering {before[label]:.0f} req/s: {ratio:.2f} (goal ≥ 0.90)",
            _check(ratio >= 0.9),
        )
    row(
        "hook Pre/PostToolUse pairs at 100/s, others steered: p99",
        f"{after['p99']:8.1f} ms",
        f"before any steering {before['p99']:.1f} ms; goal ≤ 20 ms",
        _check(after["p99"] <= 20),
    )

    pid = server.process.pid if server.process is not None else 0
    threads_before = _threads(pid)
    connections = [await Connection.open(server.port) for _ in paused_agents]
    answered_at: list[float] = []

    async def held_call(connection: Connection, agent_id: str, n: int) -> bytes:
        answer = await connection.send(
            _pre_tool_use(server.token, "bench-steer-paused", agent_id, 1000 + n)
        )
        answered_at.append(time.perf_counter())
        return answer.body

    calls = [
        asyncio.ensure_future(held_call(connection, agent_id, n))
        for n, (connection, agent_id) in enumerate(zip(connections, paused_agents, strict=True))
    ]
    await asyncio.sleep(1.0 if smoke else 2.0)
    still_held = sum(not call.done() for call in calls)
    threads_held = _threads(pid)
    row(
        f"{held_count} paused agents' tool calls held",
        f"{still_held:8d} held",
        f"server threads {threads_before} before, {threads_held} while held (goal: no more)",
        _check(still_held == held_count and threads_held <= threads_before),
    )
    resumed_at = time.perf_counter()
    status, _ = await asyncio.to_thread(_post, server, "/sessions/bench-steer-paused/resume", {})
    answers = await asyncio.wait_for(asyncio.gather(*calls), 30)
    released = max(answered_at) - resumed_at
    let_go = sum(json.loads(answer or b"{}") == {} for answer in answers)
    row(
        f"one resume lets all {held_count} held calls run",
        f"{released * 1000:8.1f} ms",
        f"{let_go} of {held_count} answered {{}} (run); goal ≤ 1,000 ms; HTTP {status}",
        _check(released <= 1.0 and let_go == held_count),
    )
    for connection in connections:
        connection.close()


def _check(ok: bool) -> str:
    return "ok" if ok else "MISSED"
