"""`agentboard hook`, `codex-hook` and `gemini-hook`, run as the agents run them, tell the server
the session's repository (without credentials) and this machine's name on every request: seen by
a small server here that records what arrives."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.capturing_server import CapturingServer
from tests.client.conftest import api_get, make_repository
from tests.liveserver import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
SECRET_ORIGIN = "https://x-access-token:ghp_s3cret@github.com/acme/shop.git"
SENT_ORIGIN = "https://github.com/acme/shop.git"
HOST = socket.gethostname()


@pytest.fixture
def board() -> Iterator[CapturingServer]:
    with CapturingServer() as server:
        yield server


def run(
    command: str, payload: dict, board: CapturingServer, *args: str, env: dict | None = None
) -> subprocess.CompletedProcess[str]:
    """The hook command as an agent runs it: a fresh process, the hook input on stdin."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO"))}
    environ.pop("AGENTBOARD_REPORT_ORIGIN", None)
    environ.update({"AGENTBOARD_URL": board.url, "AGENTBOARD_TOKEN": board.token, **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "dashboard.client", command, *args],
        cwd=ROOT,
        env=environ,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
    )


def payload(kind: str, name: str, cwd: Path) -> dict:
    return {**json.loads((FIXTURES / kind / name).read_text()), "cwd": str(cwd)}


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A folder deep in a repository whose origin holds a token."""
    repository = make_repository(tmp_path / "shop", SECRET_ORIGIN)
    (repository / "src").mkdir()
    return repository / "src"


@pytest.mark.parametrize(
    ("command", "kind", "name", "path"),
    [
        ("hook", "claude-code", "post_tool_use_todowrite.json", "/hooks/claude-code"),
        ("hook", "claude-code", "session_start.json", "/hooks/claude-code"),
        ("hook", "claude-code", "stop.json", "/hooks/claude-code"),  # held: sent from a thread
        ("hook", "claude-code", "permission_request_bash.json", "/hooks/claude-code"),
        ("codex-hook", "codex", "post_tool_use_bash.json", "/hooks/codex"),
        ("codex-hook", "codex", "stop.json", "/hooks/codex"),
        ("gemini-hook", "gemini", "after_tool_shell.json", "/hooks/gemini"),
        ("gemini-hook", "gemini", "after_agent.json", "/hooks/gemini"),  # held
    ],
)
def test_every_hook_request_names_the_repository_and_the_machine(
    board, shop, command, kind, name, path
):
    result = run(command, payload(kind, name, shop), board)

    assert (result.returncode, result.stderr) == (0, "")
    [seen] = board.requests
    assert (seen.method, seen.path) == ("POST", path)
    assert seen.headers["X-Agentboard-Repository"] == SENT_ORIGIN
    assert seen.headers["X-Agentboard-Host"] == HOST
    assert "ghp_s3cret" not in json.dumps(seen.headers)


def test_a_plans_socket_handshake_names_them_too(board, shop):
    plan = payload("claude-code", "permission_request_exit_plan_mode.json", shop)

    result = run("hook", plan, board)

    assert (result.returncode, result.stdout) == (0, "")  # refused: the terminal asks
    [handshake] = board.requests
    assert (handshake.method, handshake.path) == ("GET", "/ws/agent/")
    assert handshake.headers["X-Agentboard-Repository"] == SENT_ORIGIN
    assert handshake.headers["X-Agentboard-Host"] == HOST


def test_outside_a_repository_only_the_machine_is_named(board, tmp_path):
    run("hook", payload("claude-code", "stop.json", tmp_path), board)

    [seen] = board.requests
    assert "X-Agentboard-Repository" not in seen.headers
    assert seen.headers["X-Agentboard-Host"] == HOST


@pytest.mark.parametrize(
    ("args", "env"),
    [((), {"AGENTBOARD_REPORT_ORIGIN": "0"}), (("--no-origin",), {})],
)
def test_the_user_can_keep_both_to_themselves(board, shop, args, env):
    for command, kind, name in (
        ("hook", "claude-code", "stop.json"),
        ("codex-hook", "codex", "stop.json"),
        ("gemini-hook", "gemini", "after_agent.json"),
    ):
        run(command, payload(kind, name, shop), board, *args, env=env)

    assert len(board.requests) == 3
    for seen in board.requests:
        assert "X-Agentboard-Repository" not in seen.headers
        assert "X-Agentboard-Host" not in seen.headers


def test_the_board_shows_the_sessions_repository_and_machine(agentboard_server, run_hook, shop):
    start = payload("claude-code", "session_start.json", shop)

    hook = run_hook(start, url=agentboard_server.url, token=agentboard_server.token)

    assert hook.finish()[0] == 0
    session = api_get(agentboard_server, f"/api/v1/sessions/{start['session_id']}")
    assert (session["repository"], session["host"]) == ("github.com/acme/shop", HOST.lower())
