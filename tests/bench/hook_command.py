"""The benchmark's `hookcmd` part: what one `agentboard hook` call costs Claude Code.

Claude Code starts the command for a hook event and waits for it to exit, so what counts is
the wall time from process start to exit, forwarding one event to the running server. Most of
it is the interpreter's own start-up, which no change of ours can take away: `python -c pass`
is measured in the same run, interleaved with the hook, as the reference.

The hook runs as `python -m dashboard.client hook` from this checkout (the installed
`agentboard` script runs the same `main`), first with bytecode files as `pip install` leaves
them (written to a private cache folder, so the tree is left alone), then with
PYTHONDONTWRITEBYTECODE=1 and no cache folder, as in an editable checkout that never wrote
any: there each of our modules is compiled on every call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.liveserver import ROOT, LiveServer

# An ordinary event whose answer is printed: a tool step, forwarded as it comes.
EVENT = {
    "session_id": "bench-hookcmd",
    "hook_event_name": "PostToolUse",
    "cwd": str(ROOT),
    "permission_mode": "default",
    "tool_name": "Read",
    "tool_input": {"file_path": "/work/a.py"},
    "tool_response": {"type": "text"},
}
GOAL_P50_MS = 20.0  # above `python -c pass`'s p50
GOAL_P99_MS = 100.0  # above its p99


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def timed(command: list[str], env: dict[str, str], stdin: str) -> tuple[float, bool]:
    """Wall milliseconds from start to exit, and whether it answered as a hook should."""
    started = time.perf_counter()
    done = subprocess.run(
        command, input=stdin, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, done.returncode == 0 and not done.stderr and answer_of(done.stdout)


def answer_of(stdout: str) -> bool:
    """Whether the command printed a hook answer: one JSON object (or nothing)."""
    try:
        return not stdout.strip() or isinstance(json.loads(stdout), dict)
    except ValueError:
        return False


def server_share(server: LiveServer, rounds: int) -> float:
    """The p50 of the same POST sent from a running process, a new connection each: the part
    of a hook call the server and the loopback take."""
    body = json.dumps(EVENT).encode()
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        request = urllib.request.Request(server.url + "/hooks/claude-code", body, headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
        times.append((time.perf_counter() - started) * 1000)
    return percentile(times, 0.5)


def measure(server: LiveServer, env: dict[str, str], rounds: int) -> tuple[list, list, int]:
    """`rounds` of `python -c pass` and of the hook, one after the other (so both meet the
    same moments of a noisy machine); their times and the hook's failures."""
    hook = [sys.executable, "-m", "dashboard.client", "hook", "--url", server.url]
    hook += ["--hook-timeout", "30"]
    reference = [sys.executable, "-c", "pass"]
    payload = json.dumps(EVENT)
    for _ in range(3):  # warm-up: the server's first request, the file cache, bytecode
        timed(reference, env, "")
        timed(hook, env, payload)
    passes, hooks, failures = [], [], 0
    for _ in range(rounds):
        elapsed, _ = timed(reference, env, "")
        passes.append(elapsed)
        elapsed, answered = timed(hook, env, payload)
        hooks.append(elapsed)
        failures += not answered
    return passes, hooks, failures


def hook_command(
    server: LiveServer, tmp: Path, rounds: int, row: Callable[[str, str, str, str], None]
) -> None:
    print(f"\nThe hook command, a fresh process per event ({rounds} calls, forwarded PostToolUse):")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO"))}
    base |= {"AGENTBOARD_TOKEN": server.token, "PYTHONPATH": str(ROOT)}
    with_bytecode = {k: v for k, v in base.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with_bytecode["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    without_bytecode = {k: v for k, v in base.items() if k != "PYTHONPYCACHEPREFIX"}
    without_bytecode["PYTHONDONTWRITEBYTECODE"] = "1"
    for what, env in [
        ("agentboard hook, bytecode as installed: p50 / p99", with_bytecode),
        ("agentboard hook, no bytecode written: p50 / p99", without_bytecode),
    ]:
        passes, hooks, failures = measure(server, env, rounds)
        answering = server_share(server, rounds)
        p50, p99 = percentile(hooks, 0.5), percentile(hooks, 0.99)
        ref50, ref99 = percentile(passes, 0.5), percentile(passes, 0.99)
        row(
            what,
            f"{p50:5.1f} / {p99:5.1f} ms",
            f"python -c pass {ref50:.1f} / {ref99:.1f} ms: +{p50 - ref50:.1f} / "
            f"+{p99 - ref99:.1f} (goal ≤ +{GOAL_P50_MS:g} / +{GOAL_P99_MS:g}); "
            f"the server's answer {answering:.1f} ms of it; {failures} failed",
            "ok"
            if p50 - ref50 <= GOAL_P50_MS and p99 - ref99 <= GOAL_P99_MS and not failures
            else "MISSED",
        )
