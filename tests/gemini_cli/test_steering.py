"""The real Gemini CLI steered from the board: a message reaches the scripted model once, a
paused agent's command waits for Resume, and Stop ends the agent's loop with its reason shown."""

from __future__ import annotations

import time

import pytest

from tests.claude_cli.conftest import wait_until
from tests.gemini_cli.model_server import say, shell
from tests.steering.live import directive, only_session, steer, step_started

pytestmark = pytest.mark.gemini_cli

QUIET = {"AGENTBOARD_ENFORCER_ENABLED": "false"}


def finish(project, running, timeout: float = 120):
    try:
        stdout, stderr = running.communicate(timeout=timeout)
    finally:
        running.kill()
    return running.returncode, stdout, stderr


def test_a_message_reaches_the_model_once_with_the_next_tool_result(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    text = "Use the staging database, not production."
    model.add(shell("sleep 3"), shell("echo two"), say("Noted."))

    running = project.start("Migrate the orders table")
    session_id = only_session(board)
    wait_until(lambda: step_started(board, "sleep 3"), "the first command to start")
    assert steer(board, session_id, "messages", text=text) == {"agents": 1, "unchanged": 0}
    code, stdout, stderr = finish(project, running)

    assert code == 0, (stdout, stderr, model.log())
    told = [request for request in model.streamed() if text in request.text()]
    # Gemini adds AfterTool's context to the tool's result the model reads next; later
    # requests repeat the history with it once: it was carried once.
    assert told and told[0] is model.streamed()[1], model.log()
    assert model.streamed()[-1].text().count(text) == 1, model.log()
    assert directive(board) == ("delivered", "PostToolUse (Gemini CLI)")
    assert "Noted." in stdout


def test_a_paused_agents_command_waits_for_resume_then_runs(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    touch = shell("touch resumed.txt").hold()
    model.add(touch, say("The file is there."))

    running = project.start("Mark it")
    session_id = only_session(board)
    wait_until(touch.taken.is_set, "the model to be asked")
    assert steer(board, session_id, "pause", reason="Deploy freeze.")["agents"] == 1
    touch.release()

    wait_until(lambda: step_started(board, "touch resumed.txt"), "the command's hook")
    time.sleep(3)
    assert not (project.directory / "resumed.txt").exists(), model.log()
    assert running.poll() is None, model.log()
    assert steer(board, session_id, "resume") == {"agents": 1, "unchanged": 0}
    code, stdout, stderr = finish(project, running)

    assert code == 0, (stdout, stderr, model.log())
    assert (project.directory / "resumed.txt").exists(), (stdout, stderr, model.log())
    assert "The file is there." in stdout


def test_stop_ends_the_agents_loop_after_the_running_command_and_gemini_shows_why(
    server_factory, connect, model
):
    board = server_factory(env=QUIET)
    project = connect(board)
    model.add(shell("sleep 3"), shell("touch went-on.txt"), say("I went on."))

    running = project.start("Clean up the branch")
    session_id = only_session(board)
    wait_until(lambda: step_started(board, "sleep 3"), "the first command to start")
    steer(board, session_id, "stop", reason="Runaway loop.")
    code, stdout, stderr = finish(project, running)

    reason = f"Stopped by {board.username} from Agentboard: Runaway loop."
    assert reason in stdout + stderr, (code, stdout, stderr, model.log())
    assert not (project.directory / "went-on.txt").exists(), model.log()
    assert "I went on." not in stdout
    assert directive(board) == ("delivered", "PostToolUse (Gemini CLI)")
