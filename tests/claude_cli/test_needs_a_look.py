"""The real Claude Code CLI caught needing a look: a loop (the model runs the same failing
command again and again) and a stuck agent (a task in progress, and the model stops answering).

The model's next turn is held while the test reads the board, so the CLI is mid-session, as a
lead would find it; released, the agent's next step clears the concern.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta

import pytest

from tests.claude_cli.conftest import (
    RUN_TIMEOUT,
    Concern,
    Lead,
    Project,
    board_get,
    concerns,
    wait_until,
)
from tests.claude_cli.model_server import Turn, say, tool

pytestmark = pytest.mark.claude_cli

# Boards on which only the feature under test speaks to the model.
QUIET = {"AGENTBOARD_ENFORCER_ENABLED": "false"}
TODOWRITE_ENV = {"CLAUDE_CODE_ENABLE_TASKS": "0"}  # TodoWrite instead of the Task tools
STUCK_MINUTES = 0.05  # 3 s


def finish(project: Project, running: subprocess.Popen[str]) -> None:
    """The CLI, released, runs to its end."""
    try:
        stdout, stderr = running.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        running.kill()
        project.outputs.extend(running.communicate())
        raise AssertionError(f"claude -p did not finish.\n{project.report()}") from None
    project.outputs.extend([stdout, stderr])
    assert running.returncode == 0, project.report()


def last_step_ended(board, session_id: str) -> datetime:
    steps = board_get(board, f"/api/v1/sessions/{session_id}/activity")["steps"]
    return max(datetime.fromisoformat(step["ended_at"]) for step in steps)


def held_until_released(project: Project, held: Turn) -> None:
    """Wait until the CLI asked the model for `held` (and gets no answer)."""
    try:
        wait_until(held.taken.is_set, "the CLI to ask the model for the held turn")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{project.report()}") from None


def test_the_same_failing_command_three_times_needs_a_look_until_a_healthy_step(
    server_factory, connect, model
):
    board = server_factory(env=QUIET)
    project = connect(board)
    lead = Lead(board)
    failing = {"command": "ls /no/such/dir", "description": "List the build output"}
    failures = [tool("Bash", failing) for _ in range(3)]
    healthy = tool("Bash", {"command": "echo fixed", "description": "Check again"}).hold()
    model.add(*failures, healthy, say("Fixed."))

    running = project.start("Find the build output.")
    try:
        held_until_released(project, healthy)
        (looping,) = wait_until(
            lambda: [c for c in concerns(board, project.session_id) if not c.ended],
            "the looping concern",
        )
        assert looping.kind == "looping", project.report()
        assert looping.detail.startswith("“ls /no/such/dir” failed 3 times in "), project.report()
        looks = wait_until(
            lambda: (found := lead.looks(project.session_id)).count == 1 and found,
            "the header to count the loop",
        )
        assert "Needs a look · looping" in looks.row
        assert "failed 3 times in " in looks.row
        assert "The main agent needs a look — Looping" in looks.banner
        assert "Needs a look — Looping: “ls /no/such/dir” failed 3 times in " in looks.card
        assert "Looping: “ls /no/such/dir” failed 3 times in " in looks.inbox
    finally:
        healthy.release()
    finish(project, running)

    # Each failure reached the model as the error it was; the different command then ran.
    for turn in failures:
        result = model.tool_result(turn)
        assert result is not None and result.is_error, project.report()
        assert "No such file or directory" in result.text
    result = model.tool_result(healthy)
    assert result is not None and not result.is_error and "fixed" in result.text
    assert concerns(board, project.session_id) == [
        Concern("looping", looping.detail, True, "healthy step")
    ], project.report()
    cleared = lead.looks(project.session_id)
    assert cleared.count == 0 and "Needs a look" not in cleared.row
    assert cleared.banner == cleared.card == cleared.inbox == ""


def test_an_agent_whose_model_stops_answering_is_stuck_until_its_next_step(
    server_factory, connect, model
):
    board = server_factory(
        env=QUIET
        | {
            "AGENTBOARD_STUCK_MINUTES": str(STUCK_MINUTES),
            "AGENTBOARD_CONCERN_SWEEP_SECONDS": "0.2",
        }
    )
    project = connect(board)
    lead = Lead(board)
    working = [
        {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"},
        {"content": "Fix the parser", "status": "pending", "activeForm": "Fixing the parser"},
    ]
    next_step = tool("Bash", {"command": "true", "description": "Run the tests"}).hold()
    model.add(tool("TodoWrite", {"todos": working}), next_step, say("The tests pass."))

    running = project.start("Fix the parser bug.", env=TODOWRITE_ENV)
    try:
        held_until_released(project, next_step)
        (stuck,) = wait_until(
            lambda: [c for c in concerns(board, project.session_id) if not c.ended],
            "the stuck concern",
            timeout=15,
        )
        # Not at once: stuck takes AGENTBOARD_STUCK_MINUTES of silence after the last step.
        silent = datetime.now(UTC) - last_step_ended(board, project.session_id)
        assert silent >= timedelta(minutes=STUCK_MINUTES), silent
        assert (stuck.kind, stuck.detail) == (
            "stuck",
            "no step while 'Run the tests' is in progress",
        ), project.report()
        assert running.poll() is None, "The CLI is alive, waiting for its model."
        looks = wait_until(
            lambda: (found := lead.looks(project.session_id)).count == 1 and found,
            "the header to count the stuck agent",
        )
        assert "Needs a look · stuck" in looks.row
        assert "The main agent needs a look — Stuck" in looks.banner
        assert "Stuck: no step while 'Run the tests' is in progress" in looks.inbox
    finally:
        next_step.release()
    finish(project, running)

    assert concerns(board, project.session_id) == [
        Concern("stuck", stuck.detail, True, "healthy step")
    ], project.report()
    result = model.tool_result(next_step)
    assert result is not None and not result.is_error, project.report()
    assert lead.looks(project.session_id).count == 0
