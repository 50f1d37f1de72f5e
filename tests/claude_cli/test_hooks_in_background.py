"""Hooks installed to run in the background (`"async": true`: Claude Code does not wait for
them) still reach the board, with each supported Claude Code version: SessionStart, which every
session waited on before its first request to the model, and with command hooks SessionEnd
where the version lets it finish after exiting (2.1.330)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.claude_cli.conftest import wait_until
from tests.claude_cli.model_server import say
from tests.client.conftest import make_repository

pytestmark = pytest.mark.claude_cli


def background_events(settings_path) -> dict[str, list[str | None]]:
    settings = json.loads(settings_path.read_text())
    return {
        event: [group.get("matcher") for group in groups if group["hooks"][0].get("async")]
        for event, groups in settings["hooks"].items()
        if any(group["hooks"][0].get("async") for group in groups)
    }


def test_hooks_run_in_the_background_still_reach_the_board(
    server_factory, connect, model, claude_code
):
    board = server_factory()
    project = connect(board, command=True)
    make_repository(project.directory)
    subprocess.run(
        ["git", "checkout", "-q", "-b", "feature/quick-start"], cwd=project.directory, check=True
    )
    background = background_events(project.directory / ".claude" / "settings.json")
    assert background["SessionStart"] == ["startup|resume|clear"]
    assert ("SessionEnd" in background) == (claude_code.version != "2.1.197")
    model.add(say("Nothing to do."))

    project.run("Say hello.")

    def stored() -> tuple[str, bool] | None:
        rows = board.query(
            "SELECT branch, ended_at FROM dashboard_session WHERE session_id = %s",
            (project.session_id,),
        )
        return (rows[0][0], rows[0][1] is not None) if rows else None

    # The branch comes with SessionStart alone (`agentboard hook` reads it from .git/HEAD).
    assert wait_until(
        lambda: stored() == ("feature/quick-start", True), "the session's start and end"
    ), project.report()
