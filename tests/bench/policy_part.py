"""The benchmark's policy part (`python -m tests.bench --part policy`): team rules on a year of
a team's history (`tests.bench.history`, SQLite; PostgreSQL too with DATABASE_URL set).

- backtests: rules of each kind (shell, file, web, deny, broad) tested on the last 30 days, 90
  and the whole year, as an admin sees it, in the server's own code (`rule_backtest`), each
  call's wall time. Goal: p95 ≤ 2 s.
- a request a rule answers, with 500 rules in force: a Claude Code PermissionRequest hook's
  round trip on the running server, and the request path's own time in process
  (`permission_request_open`, from arrival to the rule's answer stored and committed). Goal:
  p50 ≤ 5 ms. Beside it, the rules' part of it alone (`rules_answer`: the check whether any
  rule changed, and the matching): on SQLite most of the rest is the commit.

The in-process figures are measured by this module run in the year's environment
(`python -m tests.bench.policy_part`), which prints them as JSON.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from tests.bench.history_part import (
    HISTORY_ENV,
    SMOKE_SCALE,
    Row,
    generate,
    history_server,
    sign_in,
    yes,
)
from tests.bench.load import Connection, Run, http_request
from tests.liveserver import ROOT, create_database, drop_database, server_env

BACKTEST_GOAL_MS = 2000.0
ANSWER_GOAL_MS = 5.0
RULES_IN_FORCE = 500
BACKTESTS = (
    ("Bash(npm test*)", "allow"),
    ("Bash(pytest *)", "allow"),
    ("Bash(rm -rf*)", "deny"),
    ("Edit(src/**)", "allow"),
    ("WebFetch(domain:docs.example.com)", "allow"),
    ("Bash(*)", "allow"),
)
WINDOWS = (30, 90, None)
ANSWERED_COMMAND = "npm run bench-answered"


def rules_in_force() -> None:
    """500 team rules of every shape over the projects, one of which answers the requests
    measured (`Bash(npm run bench-answered*)`, for every project, the newest)."""
    from planmode.models import TeamRule

    TeamRule.objects.filter(rule__startswith="Bash(bench-").delete()
    TeamRule.objects.filter(rule=f"Bash({ANSWERED_COMMAND}*)").delete()
    kept = TeamRule.objects.count()
    shapes = (
        "Bash(bench-{n} *)", "Read(bench-{n}/**)", "Edit(src/bench-{n}/**)",
        "mcp__bench{n}", "WebFetch(domain:bench-{n}.example.com)",
    )  # fmt: skip
    made = [
        TeamRule(
            rule=shapes[n % len(shapes)].format(n=n) if n % len(shapes) else f"Bash(bench-{n} *)",
            behavior="deny" if n % 7 == 0 else "allow",
            project="" if n % 3 else "shop",
        )
        for n in range(RULES_IN_FORCE - kept - 1)
    ]
    made.append(TeamRule(rule=f"Bash({ANSWERED_COMMAND}*)", behavior="allow"))
    TeamRule.objects.bulk_create(made)


def measure_in_process(samples: int) -> dict[str, list[float]]:
    """Backtests and the request path, timed here (seconds)."""
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    from dashboard.models import Agent, Session
    from dashboard.policy.backtest import rule_backtest
    from planmode.models import RequestStatus
    from planmode.permissions import permission_request_open
    from planmode.rulebook import rules_answer

    viewer = get_user_model().objects.get(username="bench-lead")
    figures: dict[str, list[float]] = {
        "backtest": [], "answered": [], "matched": [], "decided": []
    }  # fmt: skip
    for _ in range(samples):
        for rule, behavior in BACKTESTS:
            for days in WINDOWS:
                started = time.perf_counter()
                found = rule_backtest(
                    rule=rule, behavior=behavior, project="", days=days, viewer=viewer
                )
                figures["backtest"].append(time.perf_counter() - started)
                figures["matched"].append(found.matched)
    rules_in_force()
    session = Session.objects.create(
        session_id=f"bench-policy-{uuid.uuid4().hex[:8]}", owner=viewer, cwd="/work/shop"
    )
    agent = Agent.objects.create(session=session, agent_id=session.session_id)
    for n in range(samples * 50 + 5):
        started = time.perf_counter()
        with transaction.atomic():
            request = permission_request_open(
                agent=agent,
                tool_name="Bash",
                tool_input={"command": f"{ANSWERED_COMMAND} {n}"},
                suggestions=[],
            ).request
        took = time.perf_counter() - started
        if request.status != RequestStatus.ALLOWED:
            raise RuntimeError(f"the rule did not answer: {request.status}")
        if n >= 5:  # five to warm up
            figures["answered"].append(took)
    for n in range(samples * 50):
        started = time.perf_counter()
        with transaction.atomic():
            verdicts = rules_answer(
                project=session.project, tool_name="Bash", cwd=session.cwd, now=timezone.now(),
                tool_input={"command": f"{ANSWERED_COMMAND} {n}"},
            )  # fmt: skip
        figures["decided"].append(time.perf_counter() - started)
        if verdicts.answer is None:
            raise RuntimeError("the rule did not answer")
    return figures


def in_process(env: dict[str, str], samples: int) -> dict[str, list[float]]:
    found = subprocess.run(
        [sys.executable, "-m", "tests.bench.policy_part", "--samples", str(samples)],
        cwd=ROOT,
        env=env | {"DJANGO_SETTINGS_MODULE": "dashboard.settings"},
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode:
        raise RuntimeError(f"the policy measurement failed:\n{found.stdout}\n{found.stderr}")
    return json.loads(found.stdout.strip().splitlines()[-1])


async def hook_round_trips(env: dict[str, str], log: Path, count: int) -> Run:
    """A Claude Code PermissionRequest a rule answers, one at a time, on the running server."""
    run = Run()
    with history_server(env, log) as server:
        connection = await Connection.open(server.port)
        session_id = f"bench-policy-hook-{uuid.uuid4().hex[:8]}"
        headers = {"Authorization": f"Bearer {server.token}"}
        try:
            for n in range(count + 5):
                body = {
                    "session_id": session_id, "hook_event_name": "PermissionRequest",
                    "cwd": "/work/shop", "permission_mode": "default", "tool_name": "Bash",
                    "tool_input": {"command": f"{ANSWERED_COMMAND} hook-{n}"},
                    "permission_suggestions": [],
                }  # fmt: skip
                request = http_request("POST", "/hooks/claude-code", body=body, headers=headers)
                started = time.perf_counter()
                response = await connection.send(request)
                took = time.perf_counter() - started
                if response.status != 200 or b'"allow"' not in response.body:
                    raise RuntimeError(f"the hook was not answered by the rule: {response.body!r}")
                if n >= 5:
                    run.latencies.append(took)
        finally:
            connection.close()
    return run


def ms(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1000


async def one_engine(row: Row, tmp: Path, engine: str, scale: float, samples: int) -> None:
    base = os.environ.get("DATABASE_URL", "")
    folder = tmp / f"policy-{engine}"
    folder.mkdir()
    url, database = create_database(base) if engine == "postgresql" else (None, None)
    try:
        env = server_env(folder, database_url=url) | HISTORY_ENV
        print(f"  year ({engine}, scale {scale:g}): generating…", flush=True)
        counts = generate(env, scale, tmp / f"policy-{engine}-generate.log")
        sign_in(env)  # the admin the backtests see the history as
        figures = in_process(env, samples)
        hooks = await hook_round_trips(env, tmp / f"policy-{engine}.log", samples * 50)
    finally:
        if database is not None:
            drop_database(base, database)
    requests = counts.get("permission requests", 0)
    print(f"\nTeam rules on {engine}: a year of {requests:,} permission requests")
    backtest = figures["backtest"]
    row(
        f"{engine}: backtest ({len(BACKTESTS)} rules on 30, 90, all days)",
        f"{ms(backtest, 0.5):6.1f} / {ms(backtest, 0.95):6.1f} ms",
        f"p50 / p95; goal p95 ≤ {BACKTEST_GOAL_MS:.0f} ms; matched up to "
        f"{int(max(figures['matched'], default=0)):,}",
        yes(ms(backtest, 0.95) <= BACKTEST_GOAL_MS),
    )
    answered = figures["answered"]
    row(
        f"{engine}: request a rule answers, {RULES_IN_FORCE} rules (in process)",
        f"{statistics.median(answered) * 1000:6.2f} ms",
        f"p50; goal ≤ {ANSWER_GOAL_MS:.0f} ms",
        yes(statistics.median(answered) * 1000 <= ANSWER_GOAL_MS),
    )
    decided = figures["decided"]
    row(
        f"{engine}: of which the rules' answer (check + match)",
        f"{statistics.median(decided) * 1000:6.2f} ms",
        "p50; the rest is the request's writes and commit",
    )
    row(
        f"{engine}: its PermissionRequest hook's round trip",
        f"{hooks.p50:6.2f} / {hooks.percentile(0.95):6.2f} ms",
        "p50 / p95, HTTP included",
    )


async def policy(row: Row, tmp: Path, *, smoke: bool, scale: float | None) -> None:
    samples = 1 if smoke else 3
    print("\nTeam rules: backtests and rule-answered requests on a year of history")
    await one_engine(row, tmp, "sqlite", scale or (SMOKE_SCALE if smoke else 0.1), samples)
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        await one_engine(row, tmp, "postgresql", scale or (SMOKE_SCALE if smoke else 1.0), samples)
    else:
        print("\nTeam rules on PostgreSQL skipped: set DATABASE_URL to measure them.")


if __name__ == "__main__":
    import argparse

    import django

    parser = argparse.ArgumentParser(prog="python -m tests.bench.policy_part")
    parser.add_argument("--samples", type=int, default=3)
    arguments = parser.parse_args()
    django.setup()
    print(json.dumps(measure_in_process(arguments.samples)))
