"""`agentboard hook` runs for every event Claude Code sends, a fresh process each time: it
imports only what forwarding needs, reads the command line the installers write without
argparse, and speaks HTTP over a bare socket. (Its wall time is a benchmark figure: `python -m
tests.bench --part hookcmd`.)"""

from __future__ import annotations

import io
import json
import os
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from dashboard.client.commands import build_parser
from dashboard.client.config import HookConfig, HookFailed
from dashboard.client.hook import forward, run_hook
from dashboard.client.hook_command import quick_hook_arguments
from dashboard.client.install import hook_command
from tests.capturing_server import CapturingServer
from tests.client.conftest import api_get
from tests.hooks.conftest import SESSION_ID, load_fixture
from tests.liveserver import ROOT, free_port

# What a forwarded event must never pull in: each costs a hook call milliseconds (asyncio,
# http.client with email and ssl, typing, dataclasses, argparse, threading, socket's enums), or
# is the server's (Django, pydantic) or another command's.
NEVER_FOR_AN_EVENT = {
    "argparse",
    "asyncio",
    "dataclasses",
    "email",
    "encodings.idna",
    "http.client",
    "pathlib",
    "selectors",
    "socket",
    "ssl",
    "threading",
    "typing",
    "urllib.request",
    "websockets",
    "django",
    "pydantic",
    "dashboard.client.codex",
    "dashboard.client.install",
    "dashboard.client.plans",
    "dashboard.core.waits",
}
# Which modules a hook call loads beyond a bare interpreter's (`-S`: no site, so nothing else
# is loaded already), written to the file named in argv[1].
LOADS = """
import json, sys
sys.path.insert(0, sys.argv[2])
before = set(sys.modules)
from dashboard.client.cli import main
code = main(sys.argv[3:])
open(sys.argv[1], "w").write(json.dumps(sorted(set(sys.modules) - before)))
sys.exit(code)
"""


def modules_loaded(payload: dict, url: str, token: str, tmp_path) -> tuple[set[str], str]:
    """The top-level and full names of the modules a hook call loaded, and its output."""
    found = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO"))}
    command = ["hook", "--url", url, "--hook-timeout", "30"]
    done = subprocess.run(
        [sys.executable, "-S", "-c", LOADS, str(found), str(ROOT), *command],
        input=json.dumps(payload),
        env=env | {"AGENTBOARD_TOKEN": token},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stderr == ""
    names = set(json.loads(found.read_text()))
    return names | {name.split(".")[0] for name in names}, done.stdout


def test_a_forwarded_event_imports_only_what_forwarding_needs(agentboard_server, tmp_path):
    loaded, stdout = modules_loaded(
        load_fixture("post_tool_use_todowrite.json"),
        agentboard_server.url,
        agentboard_server.token,
        tmp_path,
    )

    assert json.loads(stdout) == {}
    assert not loaded & NEVER_FOR_AN_EVENT
    todos = api_get(agentboard_server, f"/api/v1/sessions/{SESSION_ID}/agents/{SESSION_ID}/todos")
    assert len(todos["todos"]) == 3


def test_a_stop_is_waited_on_without_asyncio(agentboard_server, tmp_path):
    loaded, stdout = modules_loaded(
        load_fixture("stop.json"), agentboard_server.url, agentboard_server.token, tmp_path
    )

    assert json.loads(stdout) == {}
    assert not loaded & {"asyncio", "http.client", "urllib.request", "websockets"}


INSTALLED = [
    shlex.split(hook_command("hook", url="http://127.0.0.1:8000", timeout=30, report_origin=True)),
    shlex.split(
        hook_command("hook", url="https://board.example", timeout=615, report_origin=False)
    ),
    shlex.split(
        hook_command("codex-hook", url="http://[::1]:8000", timeout=30, report_origin=True)
    ),
    shlex.split(
        hook_command("gemini-hook", url="http://127.0.0.1:8000", timeout=30, report_origin=True)
    ),
    [
        *shlex.split(
            hook_command(
                "gemini-hook", url="http://127.0.0.1:8000", timeout=615, report_origin=False
            )
        ),
        "--approvals",
    ],
]


def read_by_argparse(arguments: list[str]) -> str:
    """What argparse reads from a hook command line, as text (so that NaN equals NaN)."""
    parsed = vars(build_parser(arguments[0]).parse_args(arguments))
    del parsed["command"]
    return repr(dict(sorted(parsed.items())))


def read_quickly(arguments: list[str]) -> str:
    quick = quick_hook_arguments(arguments)
    assert quick is not None, "left to argparse"
    return repr(dict(sorted(quick.items())))


@pytest.mark.parametrize("line", INSTALLED, ids=lambda line: " ".join(line[1:]))
def test_the_command_lines_the_installers_write_are_read_without_argparse(line):
    arguments = line[1:]  # without the program's name

    assert read_quickly(arguments) == read_by_argparse(arguments)
    assert quick_hook_arguments(arguments)["url"] == arguments[2]


@pytest.mark.parametrize(
    "arguments",
    [
        ["hook"],
        ["hook", "--url=http://127.0.0.1:1", "--timeout", "2.5", "--plan-wait=60"],
        ["hook", "--no-origin", "--url", "http://h", "--hook-timeout", "1e2"],
        ["codex-hook", "--plan-wait", "nan"],
    ],
)
def test_what_both_read_they_read_alike(arguments, monkeypatch):
    monkeypatch.setenv("AGENTBOARD_URL", "http://from-the-environment:8000")
    monkeypatch.setenv("AGENTBOARD_HOOK_TIMEOUT", "7")

    assert read_quickly(arguments) == read_by_argparse(arguments)


@pytest.mark.parametrize(
    "arguments",
    [
        ["hook", "--help"],
        ["hook", "--hook-t", "30"],  # an abbreviation argparse accepts
        ["hook", "--hook-timeout", "-5"],  # a negative number argparse takes as a value
        ["hook", "--timeout", "soon"],
        ["hook", "--url"],
        ["hook", "--url", "http://a", "--url", "http://b"],
        ["hook", "--verbose"],
    ],
)
def test_anything_else_is_left_to_argparse(arguments):
    assert quick_hook_arguments(arguments) is None


def test_a_mistake_on_the_command_line_is_still_argparses_answer():
    done = subprocess.run(
        [sys.executable, "-m", "dashboard.client", "hook", "--timeout", "soon"],
        cwd=ROOT,
        input="{}",
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 2
    assert "agentboard hook: error: argument --timeout: invalid float value: 'soon'" in done.stderr


# --- HTTP over a bare socket ----------------------------------------------------------------


@contextmanager
def answering(answer: bytes) -> Iterator[str]:
    """A server on loopback that reads one request and sends `answer` as it is, then closes;
    yields its URL."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            request = b""
            while not request.endswith(b"}"):  # the hook's body: one JSON object, last
                request += connection.recv(65536)
            connection.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        thread.join(5)
        listener.close()


def config(url: str) -> HookConfig:
    return HookConfig(url=url, token="ab_token", timeout=5, report_origin=False)


EVENT = {"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Read"}


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n"
        b'{"ok": true}',
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'5\r\n{"ok"\r\n7;ext=1\r\n: true}\r\n0\r\n\r\n',
        b'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"ok": true}',
    ],
    ids=["content-length", "chunked", "until-closed"],
)
def test_every_way_an_answer_can_be_framed_is_read_whole(answer):
    with answering(answer) as url:
        assert forward(config(url), EVENT) == {"ok": True}


def test_the_request_is_the_one_an_http_hook_would_send():
    with CapturingServer() as board:
        forward(config(board.url + "/prefix"), EVENT)

    [seen] = board.requests
    assert (seen.method, seen.path) == ("POST", "/prefix/hooks/claude-code")
    assert json.loads(seen.body) == EVENT
    assert seen.headers["Authorization"] == "Bearer ab_token"
    assert seen.headers["Content-Type"] == "application/json"
    assert seen.headers["X-Agentboard-Hook-Timeout"] == "5"


def test_a_refusal_says_the_servers_reason():
    body = b'{"error": {"code": "validation_error", "message": "session_id is required."}}'
    answer = b"HTTP/1.1 400 Bad Request\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    with answering(answer) as url, pytest.raises(HookFailed) as failed:
        forward(config(url), EVENT)

    assert str(failed.value) == "Agentboard refused the hook input: session_id is required."


def test_something_else_on_the_port_is_no_answer():
    with answering(b"SSH-2.0-OpenSSH_9.2\r\n") as url, pytest.raises(HookFailed) as failed:
        forward(config(url), EVENT)

    assert str(failed.value).startswith(f"Agentboard at {url} is unreachable (the answer is not")


def test_nobody_listening_is_said_as_urllib_said_it():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(HookFailed) as failed:
        forward(config(url), EVENT)

    assert str(failed.value) == (
        f"Agentboard at {url} is unreachable ([Errno 111] Connection refused)."
    )


def test_a_proxy_in_the_environment_is_still_used():
    """With http_proxy set, the hook's request goes through it, as urllib sends it."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    with CapturingServer() as proxy:
        done = subprocess.run(
            [sys.executable, "-m", "dashboard.client", "hook", "--url", "http://board.example"],
            cwd=ROOT,
            env=env | {"http_proxy": proxy.url, "AGENTBOARD_TOKEN": "ab_token"},
            input=json.dumps(EVENT),
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "{}", "")
    [seen] = proxy.requests
    assert seen.path == "http://board.example/hooks/claude-code"
    assert json.loads(seen.body) == EVENT


def test_a_pre_tool_use_lets_the_server_hold_it_as_long_as_its_installed_timeout():
    """A paused agent's tool call is held at its PreToolUse until a resume: the command tells
    the server the hook's own timeout (less a second), not the short one of ordinary hooks."""
    pre_tool_use = {**EVENT, "hook_event_name": "PreToolUse", "tool_name": "Bash"}
    with CapturingServer() as board:
        held = HookConfig(
            url=board.url, token="ab_token", timeout=5, hook_timeout=30, report_origin=False
        )
        run_hook(held, io.StringIO(json.dumps(pre_tool_use)), io.StringIO(), io.StringIO())
        run_hook(held, io.StringIO(json.dumps(EVENT)), io.StringIO(), io.StringIO())

    assert [seen.headers["X-Agentboard-Hook-Timeout"] for seen in board.requests] == ["29", "5"]
