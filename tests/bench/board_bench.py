"""Benchmark: write latency, page latency and write-to-browser latency on a real server.

Run it by hand (it is not part of the test suite; these machines are shared and noisy):

    python -m tests.bench.board_bench [--writes 200] [--agents 20] [--todos 20]

With DATABASE_URL / REDIS_URL set it measures against PostgreSQL and Redis.
"""

from __future__ import annotations

import argparse
import asyncio
import http.cookiejar
import json
import re
import statistics
import tempfile
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import websockets

from tests.liveserver import LiveServer, free_port, server_env


def put(server: LiveServer, session: str, agent: str, todos: list[dict]) -> float:
    request = urllib.request.Request(
        f"{server.url}/api/v1/sessions/{session}/agents/{agent}/todos",
        data=json.dumps({"todos": todos}).encode(),
        method="PUT",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
    return time.perf_counter() - started


def todos(count: int, done: int) -> list[dict]:
    return [
        {
            "content": f"Task number {n}",
            "activeForm": f"Working on task {n}",
            "status": "completed" if n < done else "in_progress" if n == done else "pending",
        }
        for n in range(count)
    ]


def summary(name: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[max(0, int(len(ms) * 0.95) - 1)]
    return f"{name:<44} n={len(ms):<5} p50={statistics.median(ms):7.1f} ms  p95={p95:7.1f} ms"


def logged_in_opener(server: LiveServer) -> tuple[urllib.request.OpenerDirector, str]:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{server.url}/accounts/login/").read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode(
        {"username": server.username, "password": server.password, "csrfmiddlewaretoken": csrf}
    ).encode()
    opener.open(
        urllib.request.Request(
            f"{server.url}/accounts/login/",
            data=form,
            headers={"Referer": f"{server.url}/accounts/login/"},
        )
    )
    cookies = "; ".join(f"{c.name}={c.value}" for c in jar)
    return opener, cookies


async def write_to_browser(
    server: LiveServer, cookies: str, session: str, rounds: int
) -> list[float]:
    """Seconds from sending a write to a board socket receiving the re-rendered card."""
    latencies = []
    async with websockets.connect(
        f"{server.ws_url}/ws/board/?session={session}",
        additional_headers={"Cookie": cookies, "Origin": server.url},
    ) as socket:
        await socket.recv()  # the snapshot
        for n in range(rounds):
            started = time.perf_counter()
            await asyncio.to_thread(put, server, session, session, todos(10, n % 10))
            while True:
                message = await socket.recv()
                if "agent-" in message and 'class="card' in message:
                    break
            latencies.append(time.perf_counter() - started)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--todos", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        server = LiveServer(
            url=f"http://127.0.0.1:{port}",
            port=port,
            env=server_env(Path(tmp), database_url=None),
            log_path=Path(tmp) / "server.log",
        )
        server.start()
        try:
            writes = [put(server, "bench", "bench", todos(10, n % 10)) for n in range(args.writes)]
            print(summary("PUT todos, one agent, sequential", writes))
            with ThreadPoolExecutor(4) as pool:
                parallel = list(
                    pool.map(
                        lambda n: put(server, "bench-par", f"agent-{n % 4}", todos(10, n % 10)),
                        range(args.writes),
                    )
                )
            print(summary("PUT todos, 4 agents, 4 concurrent clients", parallel))
            for a in range(args.agents):
                put(
                    server,
                    "bench-big",
                    "bench-big" if a == 0 else f"sub-{a}",
                    todos(args.todos, a % args.todos),
                )
            opener, cookies = logged_in_opener(server)
            pages = []
            for path in ["/", "/sessions/bench-big/"] * 20:
                started = time.perf_counter()
                opener.open(f"{server.url}{path}").read()
                pages.append((path, time.perf_counter() - started))
            print(summary("GET / (3 sessions)", [s for p, s in pages if p == "/"]))
            print(
                summary(
                    f"GET board ({args.agents} agents x {args.todos} todos)",
                    [s for p, s in pages if p != "/"],
                )
            )
            fanout = asyncio.run(write_to_browser(server, cookies, "bench", 50))
            print(summary("PUT -> card fragment on a board socket", fanout))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
