"""The benchmark's history part (`python -m tests.bench --part history`): the pages a lead
opens (the audit log among them), five searches, a hook and a decision, measured on a year of
a team's history (`tests.bench.history`) and, in the same run, on a nearly empty database (the
same generator at a tiny scale, so that every page measured exists), on SQLite and, with
DATABASE_URL set, on PostgreSQL.

Server time is each request's round trip on a kept-alive local connection, one request at a
time after a warm-up. Goals (shown, not asserted): every page p95 ≤ 150 ms and search p95 ≤
300 ms on the year; the hook's and the decision's latency on the year within 10% of the
nearly empty database's.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import subprocess
import sys
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import websockets

from tests.bench.load import Connection, Run, http_request, open_loop
from tests.liveserver import ROOT, LiveServer, create_database, drop_database, free_port, server_env

Row = Callable[..., None]
PAGE_GOAL_MS = 150.0
SEARCH_GOAL_MS = 300.0
# The hook's and the decision's latency on the year, at most this much above the empty one's.
WRITE_MARGIN = 1.10
# The nearly empty database: enough of the generator for every page measured to exist.
EMPTY_SCALE = 0.0005
# The year of a smoke run: a few hundred sessions.
SMOKE_SCALE = 0.005
# What the servers run with: a year of steps kept (the default prunes after 30 days), and no
# session ended for its agents' silence while the history is made.
HISTORY_ENV = {"AGENTBOARD_ACTIVITY_DAYS": "400", "AGENTBOARD_SESSION_IDLE_MINUTES": "0"}


@dataclass
class Figures:
    """One database's figures: name → the run's latencies."""

    label: str
    rows: dict[str, int] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)


@dataclass(frozen=True)
class Target:
    name: str
    path: str
    kind: str  # "page" or "search"


def yes(ok: bool) -> str:
    return "✔" if ok else "✘"


def generate(env: dict[str, str], scale: float, log: Path) -> dict[str, int]:
    """The generator in a process of its own (its progress goes to the log and the screen)."""
    command = [sys.executable, "-m", "tests.bench.history", "--scale", str(scale)]
    started = time.monotonic()
    process = subprocess.run(
        ["nice", *command], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    log.write_text(process.stdout + process.stderr)
    if process.returncode:
        raise RuntimeError(f"the history generator failed:\n{process.stdout}\n{process.stderr}")
    counts = {
        name.strip(): int(number.replace(",", ""))
        for name, number in re.findall(r"^  ([a-z ]+?)\s+([\d,]+)$", process.stdout, re.M)
    }
    print(f"    made in {time.monotonic() - started:.0f} s: {counts}", flush=True)
    return counts


def stored_counts(env: dict[str, str]) -> dict[str, int]:
    """How many rows of each kind a database made before holds."""
    script = (
        "import django, json; django.setup()\n"
        "from tests.bench.history import stored\n"
        "print(json.dumps(stored()))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env | {"DJANGO_SETTINGS_MODULE": "dashboard.settings"},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(found.stdout.strip().splitlines()[-1])


def sign_in(env: dict[str, str]) -> tuple[str, str, str]:
    """A reviewer to browse as and a token for the agents, on the generated database."""
    password = secrets.token_urlsafe(12)
    script = (
        "import django, sys; django.setup()\n"
        "from django.contrib.auth import get_user_model\n"
        "from dashboard.models import AgentToken\n"
        "user, _ = get_user_model().objects.get_or_create(username='bench-lead')\n"
        "user.is_superuser = user.is_staff = True\n"
        "user.set_password(sys.argv[1]); user.save()\n"
        "print(AgentToken.issue(owner=user, label='bench')[1])\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script, password],
        cwd=ROOT,
        env=env | {"DJANGO_SETTINGS_MODULE": "dashboard.settings"},
        capture_output=True,
        text=True,
        check=True,
    )
    return "bench-lead", password, found.stdout.strip().splitlines()[-1]


@contextmanager
def history_server(env: dict[str, str], log: Path) -> Iterator[LiveServer]:
    port = free_port()
    username, password, token = sign_in(env)
    server = LiveServer(
        url=f"http://127.0.0.1:{port}", port=port, env=env, log_path=log,
        username=username, password=password, token=token,
    )  # fmt: skip
    server.start(timeout=120)
    try:
        yield server
    finally:
        server.stop()


def targets(server: LiveServer) -> list[Target]:
    """The pages and searches, with ids read from the database."""
    [(session_id,)] = server.query(
        "SELECT session_id FROM dashboard_session WHERE ended_at IS NULL "
        "AND session_id NOT LIKE 'bench-%%' ORDER BY id DESC LIMIT 1"
    )
    [(plan,)] = server.query(
        "SELECT max(id) FROM planmode_plan WHERE status = 'pending' OR revision > 1"
    )
    [(project,)] = server.query(
        "SELECT project_record_id FROM dashboard_session GROUP BY project_record_id "
        "ORDER BY count(*) DESC LIMIT 1"
    )
    [(person,)] = server.query(
        "SELECT u.username FROM dashboard_session s JOIN auth_user u ON u.id = s.owner_id "
        "GROUP BY u.username ORDER BY count(*) DESC, u.username LIMIT 1"
    )
    # The audit log filters by the names it kept: the project's, the person's user name.
    [(project_name,)] = server.query("SELECT name FROM dashboard_project WHERE id = %s", (project,))
    q = urllib.parse.quote_plus
    return [
        Target("overview: running first", "/", "page"),
        Target("overview: waiting on me", "/?state=waiting", "page"),
        Target("overview: grouped by project", "/?group=project", "page"),
        Target("overview: one project", f"/?project={project}", "page"),
        Target("a busy session's board", f"/sessions/{session_id}/", "page"),
        Target("its timeline (list view)", f"/sessions/{session_id}/timeline/?view=list", "page"),
        Target("inbox", "/inbox/", "page"),
        Target("a plan's review page", f"/plans/{plan}/", "page"),
        Target("plans queue", "/plans/", "page"),
        Target("a project's page", f"/projects/{project}/", "page"),
        Target("audit log: newest first", "/audit/", "page"),
        Target("audit log: one project", f"/audit/?project={q(project_name)}", "page"),
        Target("audit log: one person", f"/audit/?person={q(person)}", "page"),
        Target("search: a common word", f"/search/?q={q('pagination')}", "search"),
        Target("search: a phrase", f"/search/?q={q(chr(34) + 'cursor pagination' + chr(34))}",
               "search"),
        Target("search: a rare word", f"/search/?q={q('rollback')}", "search"),
        Target("search: a word in one project", f"/search/?q=retries&project={project}",
               "search"),
        Target("search: a person's tool steps", f"/search/?q=pytest&kind=step&person={person}",
               "search"),
    ]  # fmt: skip


async def measure_pages(servers: list[LiveServer], samples: int) -> list[dict[str, Run]]:
    """Each page and search on every server, request by request in turn (so that a busy
    moment of the machine falls on both databases alike)."""
    found = [targets(server) for server in servers]
    cookies = [server.log_in()["cookie"] for server in servers]
    connections = [await Connection.open(server.port) for server in servers]
    runs: list[dict[str, Run]] = [{} for _ in servers]
    try:
        for index in range(len(found[0])):
            for n in range(samples + 2):
                for number, connection in enumerate(connections):
                    target = found[number][index]
                    request = (
                        f"GET {target.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        f"Cookie: {cookies[number]}\r\n\r\n"
                    ).encode()
                    started = time.perf_counter()
                    response = await connection.send(request)
                    took = time.perf_counter() - started
                    if response.status != 200:
                        raise RuntimeError(f"{target.path} answered {response.status}")
                    run = runs[number].setdefault(target.name, Run())
                    if n >= 2:  # two to warm up
                        run.latencies.append(took)
                        run.statuses[200] = run.statuses.get(200, 0) + 1
    finally:
        for connection in connections:
            connection.close()
    return runs


async def measure_hooks(server: LiveServer, seconds: float) -> Run:
    """Hook PostToolUse steps at a steady 50 per second, over 8 sessions."""
    headers = {"Authorization": f"Bearer {server.token}"}
    tag = uuid.uuid4().hex[:6]

    def make(number: int) -> bytes:
        body = {
            "session_id": f"bench-history-{tag}-{number % 8}",
            "hook_event_name": "PostToolUse",
            "cwd": "/work/bench",
            "permission_mode": "default",
            "tool_use_id": f"toolu_{uuid.uuid4().hex}",
            "tool_name": "Bash",
            "tool_input": {"command": f"pytest tests/orders -k case_{number}"},
        }
        return http_request("POST", "/hooks/claude-code", body=body, headers=headers)

    await open_loop(server.port, make, rate=50, seconds=1.0)
    run = await open_loop(server.port, make, rate=50, seconds=seconds)
    await end_sessions(server, [f"bench-history-{tag}-{n}" for n in range(8)])
    return run


async def end_sessions(server: LiveServer, session_ids: list[str]) -> None:
    """End the sessions a measurement started, as their agents would (SessionEnd): a year
    measured again must list the running sessions it had, not the last run's as well."""
    connection = await Connection.open(server.port)
    try:
        for session_id in session_ids:
            body = {"session_id": session_id, "hook_event_name": "SessionEnd", "reason": "exit"}
            headers = {"Authorization": f"Bearer {server.token}"}
            await connection.send(
                http_request("POST", "/hooks/claude-code", body=body, headers=headers)
            )
    finally:
        connection.close()


async def measure_decisions(server: LiveServer, rounds: int) -> Run:
    """A reviewer's approve, from the POST leaving to the waiting agent's socket hearing it."""
    browser = server.log_in()
    reviewer = await Connection.open(server.port)
    run = Run()
    tag = uuid.uuid4().hex[:6]
    try:
        async with websockets.connect(f"{server.ws_url}/ws/agent/?token={server.token}") as agent:
            for n in range(rounds + 1):
                session = f"bench-history-plan-{tag}-{n}"
                frame = {"type": "exit_plan_mode", "id": n, "session_id": session}
                await agent.send(json.dumps(frame | {"agent_id": session, "plan": "# Plan\n"}))
                reply = json.loads(await agent.recv())
                while reply.get("type") != "ack":
                    reply = json.loads(await agent.recv())
                plan_id = reply["result"]["id"]
                await asyncio.sleep(0.1)
                form = urllib.parse.urlencode({"action": "approve", "text": ""})
                request = (
                    f"POST /plans/{plan_id}/decide/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    f"Cookie: {browser['cookie']}\r\nX-CSRFToken: {browser['csrf']}\r\n"
                    "Content-Type: application/x-www-form-urlencoded\r\n"
                    f"Content-Length: {len(form)}\r\n\r\n{form}"
                ).encode()
                started = time.perf_counter()
                answer = asyncio.ensure_future(reviewer.send(request))
                while json.loads(await agent.recv()).get("type") != "plan_decided":
                    pass
                arrived = time.perf_counter()
                await answer
                if n:  # the first warms up
                    run.latencies.append(arrived - started)
    finally:
        reviewer.close()
    await end_sessions(server, [f"bench-history-plan-{tag}-{n}" for n in range(rounds + 1)])
    return run


ROUNDS = 3
# A decision's p50 on each database is read from this many decisions for each page's sample:
# a decision varies by a few milliseconds from one to the next on a shared machine, so the 20
# a page gets left its p50 a millisecond either way, the whole of the 10% margin.
DECISIONS_PER_SAMPLE = 3


async def measure(servers: list[LiveServer], seconds: float, samples: int) -> list[dict[str, Run]]:
    """Pages, searches, hooks and decisions on every server, taking turns."""
    runs = await measure_pages(servers, samples)
    hooks, decisions = "hook PostToolUse at 50/s", "approve → waiting agent socket"
    for _ in range(ROUNDS):
        for server, found in zip(servers, runs, strict=True):
            run = await measure_hooks(server, seconds / ROUNDS)
            found.setdefault(hooks, Run()).latencies.extend(run.latencies)
        for server, found in zip(servers, runs, strict=True):
            run = await measure_decisions(server, max(1, samples * DECISIONS_PER_SAMPLE // ROUNDS))
            found.setdefault(decisions, Run()).latencies.extend(run.latencies)
    return runs


async def one_engine(
    row: Row,
    tmp: Path,
    engine: str,
    scale: float,
    seconds: float,
    samples: int,
    year: str | None = None,
) -> None:
    """The nearly empty database, then the year (made now, or `year`: a data folder or a
    database URL made before by `tests.bench.history`), on one engine; then the table."""
    base = os.environ.get("DATABASE_URL", "")
    prepared: list[tuple[str, dict[str, str], dict[str, int]]] = []
    databases: list[str] = []
    try:
        for label, chosen in (("nearly empty", EMPTY_SCALE), ("year", scale)):
            folder = tmp / f"history-{engine}-{label.replace(' ', '-')}"
            folder.mkdir()
            url = None
            made = label == "year" and year is not None
            if made and engine == "sqlite":
                folder = Path(year)
            elif made:
                url = year
            elif engine == "postgresql":
                url, database = create_database(base)
                databases.append(database)
            env = server_env(folder, database_url=url) | HISTORY_ENV
            if made:
                print(f"  {label} ({engine}): made before, {year}", flush=True)
                counts = stored_counts(env)
            else:
                print(f"  {label} ({engine}, scale {chosen:g}): generating…", flush=True)
                counts = generate(env, chosen, tmp / f"history-{engine}-{label}-generate.log")
            prepared.append((label, env, counts))
        print("  measuring both, taking turns…", flush=True)
        with ExitStack() as stack:
            servers = [
                stack.enter_context(history_server(env, tmp / f"history-{engine}-{label}.log"))
                for label, env, _ in prepared
            ]
            runs = await measure(servers, seconds, samples)
    finally:
        for database in databases:
            drop_database(base, database)
    empty, year_figures = (
        Figures(label, counts, found)
        for (label, _, counts), found in zip(prepared, runs, strict=True)
    )
    report(row, engine, empty, year_figures)


def report(row: Row, engine: str, empty: Figures, year: Figures) -> None:
    sessions, steps = year.rows.get("sessions", 0), year.rows.get("tool steps", 0)
    print(
        f"\nHistory on {engine}: a year of {sessions:,} sessions, {steps:,} tool steps "
        f"(p50 / p95 server time, year; nearly empty: {empty.rows.get('sessions', 0)} sessions):"
    )
    for name, run in year.runs.items():
        before = empty.runs[name]
        figure = f"{run.p50:6.1f} / {run.percentile(0.95):6.1f} ms"
        reference = f"empty {before.p50:.1f} / {before.percentile(0.95):.1f} ms"
        if name.startswith("search"):
            goal = SEARCH_GOAL_MS
            ok = run.percentile(0.95) <= goal
            reference += f"; goal p95 ≤ {goal:.0f} ms"
        elif name.startswith(("hook", "approve")):
            ok = run.p50 <= before.p50 * WRITE_MARGIN
            reference += "; goal p50 within 10% of empty"
        else:
            goal = PAGE_GOAL_MS
            ok = run.percentile(0.95) <= goal
            reference += f"; goal p95 ≤ {goal:.0f} ms"
        row(f"{engine}: {name}", figure, reference, yes(ok))


async def history(
    row: Row,
    tmp: Path,
    *,
    smoke: bool,
    seconds: float,
    scale: float | None,
    years: list[str] | None = None,
) -> None:
    samples = 3 if smoke else 20
    print("\nHistory: pages, searches, a hook and a decision on a year of a team's history")
    made = {("postgresql" if y.startswith("postgres") else "sqlite"): y for y in years or []}
    await one_engine(row, tmp, "sqlite", scale or (SMOKE_SCALE if smoke else 0.1), seconds,
                     samples, made.get("sqlite"))  # fmt: skip
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pg_scale = scale or (SMOKE_SCALE if smoke else 1.0)
        await one_engine(row, tmp, "postgresql", pg_scale, seconds, samples, made.get("postgresql"))
    else:
        print("\nHistory on PostgreSQL skipped: set DATABASE_URL to measure it.")
