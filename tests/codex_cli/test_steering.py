"""The real Codex CLI steered from the board: a message reaches the scripted model once, a
paused agent's command waits for Resume, and Stop ends the turn with its reason shown."""

from __future__ import annotations

import time

import pytest

from tests.claude_cli.conftest import board_get, wait_until
from tests.codex_cli.model_server import say, shell
from tests.steering.live import directive, steer, step_started

pytestmark = pytest.mark.codex_cli

QUIET = {"AGENTBOARD_ENFORCER_ENABLED": "false"}


def test_a_message_reaches_the_model_once_with_the_next_tool_result(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    text = "Use the staging database, not production."
    model.add(shell("sleep 3"), shell("echo two"), say("Noted."))

    running = project.start("Migrate the orders table")
    session_id = project.session_id()
    wait_until(lambda: step_started(board, "sleep 3"), "the first command to start")
    assert steer(board, session_id, "messages", text=text) == {"agents": 1, "unchanged": 0}
    result = project.finish(running)

    assert result.returncode == 0, project.report(result)
    told = [r for r in model.requests if any(text in t for t in r.texts())]
    assert told, project.report(result)
    # Codex hands the PostToolUse hook's context to the model with the very next request, and
    # later requests repeat the history with it once: it was carried once.
    assert told[0] is model.requests[1], project.report(result)
    assert sum(text in t for t in model.requests[-1].texts()) == 1, project.report(result)
    assert directive(board) == ("delivered", "PostToolUse (Codex)")
    assert "Noted." in result.stdout


def test_a_paused_agents_command_waits_for_resume_then_runs(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    touch = shell("touch resumed.txt").hold()
    model.add(touch, say("The file is there."))

    running = project.start("Mark it")
    session_id = project.session_id()
    wait_until(touch.taken.is_set, "the model to be asked")
    wait_until(lambda: board_get(board, f"/api/v1/sessions/{session_id}")["agents"], "the agent")
    assert steer(board, session_id, "pause", reason="Deploy freeze.")["agents"] == 1
    touch.release()

    wait_until(lambda: step_started(board, "touch resumed.txt"), "the command's hook")
    time.sleep(3)
    assert not (project.directory / "resumed.txt").exists(), project.report()
    assert running.poll() is None, project.report()
    assert steer(board, session_id, "resume") == {"agents": 1, "unchanged": 0}
    result = project.finish(running)

    assert result.returncode == 0, project.report(result)
    assert (project.directory / "resumed.txt").exists(), project.report(result)
    assert "Process exited with code 0" in (model.output_of(touch) or ""), project.report(result)


def test_stop_is_told_after_the_running_command_and_no_command_runs_after_it(
    server_factory, connect, model
):
    """Codex ends no turn for a hook: the model reads the stop instead of the command's output,
    Codex shows the reason, each call after it is refused, and the turn's end claims it."""
    board = server_factory(env=QUIET)
    project = connect(board)
    running_command = shell("sleep 3")
    went_on = shell("touch went-on.txt")
    model.add(running_command, went_on, say("Stopping as asked."))

    running = project.start("Clean up the branch")
    session_id = project.session_id()
    wait_until(lambda: step_started(board, "sleep 3"), "the first command to start")
    steer(board, session_id, "stop", reason="Runaway loop.")
    result = project.finish(running)

    assert result.returncode == 0, project.report(result)
    reason = f"Stopped by {board.username} from Agentboard: Runaway loop."
    assert reason in result.stdout + result.stderr, project.report(result)
    assert model.output_of(running_command) == f"{reason} End your turn now and wait for the user."
    assert (model.output_of(went_on) or "").startswith(
        f"Command blocked by PreToolUse hook: {reason.removesuffix('.')}"
    ), project.report(result)
    assert not (project.directory / "went-on.txt").exists(), project.report(result)
    assert directive(board) == ("delivered", "Stop (Codex)")
