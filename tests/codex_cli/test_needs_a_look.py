"""The real Codex CLI caught in a loop: the model runs the same failing command three times.

Codex's hooks say only a command's output; `agentboard codex-hook` reads its exit code from
Codex's transcript, so the board can tell the failures apart from a healthy step. The model's
next turn is held while the test reads the board, as a lead would find the session.
"""

from __future__ import annotations

import pytest

from tests.claude_cli.conftest import Concern, Lead, board_get, concerns, wait_until
from tests.codex_cli.model_server import say, shell

pytestmark = pytest.mark.codex_cli

QUIET = {"AGENTBOARD_ENFORCER_ENABLED": "false"}


def test_the_same_failing_command_three_times_needs_a_look_until_a_healthy_step(
    server_factory, connect, model
):
    board = server_factory(env=QUIET)
    project = connect(board)
    lead = Lead(board)
    failures = [shell("ls /no/such/dir") for _ in range(3)]
    healthy = shell("echo fixed").hold()
    model.add(*failures, healthy, say("Fixed."))

    running = project.start("Find the build output.")
    try:
        wait_until(healthy.taken.is_set, "Codex to ask the model for the held turn")
        session_id = project.session_id()
        (looping,) = wait_until(
            lambda: [c for c in concerns(board, session_id) if not c.ended],
            "the looping concern",
        )
        assert looping.kind == "looping", project.report()
        assert looping.detail.startswith("“ls /no/such/dir” failed 3 times in "), project.report()
        looks = wait_until(
            lambda: (found := lead.looks(session_id)).count == 1 and found,
            "the header to count the loop",
        )
        assert "Needs a look · looping" in looks.row
        assert "The main agent needs a look — Looping" in looks.banner
        assert "Needs a look — Looping: “ls /no/such/dir” failed 3 times in " in looks.card
        assert "Looping: “ls /no/such/dir” failed 3 times in " in looks.inbox
    finally:
        healthy.release()
    result = project.finish(running)
    assert result.returncode == 0, project.report(result)

    # The model was told each failure by Codex itself; the different command then ran.
    for turn in failures:
        output = model.output_of(turn)
        assert output is not None and "Process exited with code 2" in output, project.report()
    assert "fixed" in (model.output_of(healthy) or ""), project.report()
    assert concerns(board, session_id) == [
        Concern("looping", looping.detail, True, "healthy step")
    ], project.report()
    failed = board_get(board, f"/api/v1/sessions/{session_id}/activity?failures=true")["steps"]
    assert [(s["summary"], s["error"]) for s in failed] == [("ls /no/such/dir", "Exit code 2")] * 3
    assert lead.looks(session_id).count == 0
