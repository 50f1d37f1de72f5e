"""Steering the real Claude Code CLI from the board: a message reaches the model once, a pause
holds the next command until a resume, a stop ends the turn with its reason, and a message to
an agent that is stopping continues it.

Each test runs on both pinned versions: the oldest with HTTP hooks, the newest with
`agentboard hook` commands (`ClaudeCode.with_command_hooks`). The lead acts through the API
with the session owner's token while the scripted model holds a turn, so the action lands
while the agent is mid-work, exactly where it would from the board.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.claude_cli.conftest import RUN_TIMEOUT, WAIT, Project, wait_until
from tests.claude_cli.model_server import ModelServer, Request, say, tool

pytestmark = pytest.mark.claude_cli

QUIET = {"AGENTBOARD_ENFORCER_ENABLED": "false"}
MESSAGE = "Use the staging database, not production."
STOP_REASON = "Deploy freeze until 3 pm"
PAUSE_REASON = "Incident on the payment service"
# How long a paused call is watched not running before the lead resumes it: well inside the
# hold (the PreToolUse hook's 30 s timeout, less the server's margin).
PAUSED_FOR = 6.0


def bash(command: str) -> Any:
    return tool("Bash", {"command": command, "description": "Run it"})


def steer(project: Project, action: str, body: dict[str, str] | None = None) -> int:
    """POST to the agent API's steering endpoint for the session's main agent, as a reviewer's
    token would; the HTTP status."""
    board = project.board
    path = f"/api/v1/sessions/{project.session_id}/agents/{project.session_id}/{action}"
    request = urllib.request.Request(
        board.url + path,
        data=json.dumps(body or {}).encode(),
        headers={"Authorization": f"Bearer {board.token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=WAIT) as response:
            return response.status
    except urllib.error.HTTPError as error:
        raise AssertionError(
            f"POST {path} answered {error.code}: {error.read().decode()}\n{project.report()}"
        ) from None


def occurrences(request: Request, text: str) -> int:
    return sum(part.count(text) for part in request.texts())


def new_in(model: ModelServer, text: str) -> list[Request]:
    """The agent-loop requests that showed the model `text` for the first time (a request
    repeats the conversation so far, so what was said once shows in every later one)."""
    seen = 0
    first = []
    for request in model.loop_requests:
        count = occurrences(request, text)
        if count > seen:
            first.append(request)
        seen = max(seen, count)
    return first


def where_carried(request: Request, text: str) -> str:
    """The block of the request that carries `text`, for the record of what the model read."""
    for message in request.messages:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks or []:
            if text in json.dumps(block):
                return f"{message.get('role')}: {json.dumps(block)[:600]}"
    return ""


def directives(project: Project) -> list[tuple[str, str, str]]:
    return project.board.query(
        "SELECT d.kind, d.state, d.delivered_via FROM steering_directive d "
        "JOIN dashboard_session s ON s.id = d.session_id WHERE s.session_id = %s ORDER BY d.id",
        (project.session_id,),
    )


def finish(project: Project, started) -> tuple[str, str]:
    try:
        stdout, stderr = started.communicate(timeout=RUN_TIMEOUT)
    except Exception:
        started.kill()
        stdout, stderr = started.communicate()
        project.outputs.append(stdout + stderr)
        raise AssertionError(f"claude -p ran too long.\n{project.report()}") from None
    project.outputs.append(stdout + stderr)
    return stdout, stderr


@pytest.fixture
def project(server_factory, connect, claude_code) -> Project:
    board = server_factory(env=QUIET)
    return connect(board, command=claude_code.with_command_hooks)


def test_a_message_sent_while_the_agent_works_reaches_the_model_once(project, model):
    working = bash("echo working").hold()
    model.add(bash("echo first"), working, say("Noted, staging it is."))
    started = project.start("Check the database settings.")
    wait_until(working.taken.is_set, "the agent's second model request")
    assert steer(project, "messages", {"text": MESSAGE}) == 201
    working.release()
    stdout, _ = finish(project, started)

    assert started.returncode == 0, project.report()
    carried = new_in(model, MESSAGE)
    assert len(carried) == 1, project.report()
    assert occurrences(model.loop_requests[-1], MESSAGE) == 1, project.report()
    [(kind, state, via)] = directives(project)
    assert (kind, state) == ("message", "delivered")
    assert via.startswith(("PostToolUse", "PreToolUse")), via
    assert "Noted, staging it is." in stdout


def test_a_paused_agents_command_runs_only_after_resume(project, model):
    marker = project.directory / "ran-after-resume"
    paused_call = bash(f"touch {marker}").hold()
    model.add(paused_call, say("Resumed and done."))
    started = project.start("Make the marker file.")
    wait_until(paused_call.taken.is_set, "the agent's first model request")
    assert steer(project, "pause", {"reason": PAUSE_REASON}) == 200
    paused_call.release()

    # Time enough for the call to reach its PreToolUse hook and, were it not held, to run.
    time.sleep(PAUSED_FOR)
    assert started.poll() is None, project.report()
    assert not marker.exists(), f"The paused command ran.\n{project.report()}"

    assert steer(project, "resume") == 200
    wait_until(marker.exists, "the command to run after the resume", timeout=10)
    stdout, _ = finish(project, started)
    assert started.returncode == 0, project.report()
    assert "Resumed and done." in stdout
    result = project.result_of(paused_call)
    assert not result.is_error, result


def test_stop_ends_the_turn_and_the_terminal_shows_the_reason(project, model):
    """In the terminal: print mode (`claude -p`) of neither version prints a stop reason."""
    marker = project.directory / "should-not-run"
    stopped_call = bash(f"touch {marker}").hold()
    model.add(stopped_call)
    # `--allowedTools` takes every word after it: the mode option ends its list.
    window = project.terminal(
        "Deploy the service.", "--allowedTools", "Bash", "--permission-mode", "default"
    )
    wait_until(stopped_call.taken.is_set, "the agent's first model request")
    assert steer(project, "stop", {"reason": STOP_REASON}) == 200
    stopped_call.release()

    try:
        window.wait_for(STOP_REASON)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{project.report()}") from None
    time.sleep(1)
    assert not marker.exists(), f"The stopped command ran.\n{project.report()}"
    [(kind, state, via)] = directives(project)
    assert (kind, state) == ("stop", "delivered") and via.startswith("PreToolUse"), via

    # The developer's next prompt runs normally.
    model.add(say("Back to work."))
    window.type("Carry on.")
    try:
        window.wait_for("Back to work.")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{project.report()}") from None


def test_a_message_to_a_stopping_agent_continues_it(project, model):
    finishing = say("All finished.").hold()
    model.add(finishing, say("Ran the linter as asked."))
    started = project.start("Tidy up the module.")
    wait_until(finishing.taken.is_set, "the agent's last model request")
    assert steer(project, "messages", {"text": "Run the linter before you stop."}) == 201
    finishing.release()
    stdout, _ = finish(project, started)

    assert started.returncode == 0, project.report()
    carried = new_in(model, "Run the linter before you stop.")
    assert len(carried) == 1, project.report()
    assert "Ran the linter as asked." in stdout, project.report()
    [(kind, state, via)] = directives(project)
    assert (kind, state, via) == ("message", "delivered", "Stop (Claude Code)")
