"""What Claude Code tells besides tool calls and todo lists, shown on the board, with each
supported version (the oldest through HTTP hooks, the newest through command hooks): the
folder it moves to (CwdChanged), the permission mode each hook carries as it changes, and a
refusal by auto mode (PermissionDenied) that a lead lets through once from the inbox."""

from __future__ import annotations

import pytest

from tests.claude_cli.conftest import Lead, wait_until
from tests.claude_cli.model_server import say, tool
from tests.conftest import parse_html

pytestmark = pytest.mark.claude_cli

QUIET = {"AGENTBOARD_ENFORCER_ENABLED": "false"}


def stored(board, session_id: str) -> tuple[str, str] | None:
    rows = board.query(
        "SELECT cwd, permission_mode FROM dashboard_session WHERE session_id = %s", (session_id,)
    )
    return (rows[0][0], rows[0][1]) if rows else None


def history(board, session_id: str) -> list[str]:
    page = parse_html(Lead(board).get(f"/sessions/{session_id}/"))
    return [entry.text() for entry in page.find_all("li", cls="history-entry")]


def test_a_cd_that_stays_moves_the_session_and_a_new_mode_shows_at_once(
    server_factory, connect, model, claude_code
):
    board = server_factory(env=QUIET)
    command = claude_code.with_command_hooks
    # As commands, CwdChanged runs in the background: Claude Code does not wait for it.
    project = connect(board, record=("CwdChanged",), command=command)
    (project.directory / "api").mkdir()
    model.add(
        tool("Bash", {"command": "cd api && pwd", "description": "Go to the API"}),
        say("In the API folder."),
    )

    project.run("Work in the API folder.", "--permission-mode", "acceptEdits")

    [moved] = project.recorded("CwdChanged")
    assert moved["new_cwd"].endswith("/api"), project.report()
    assert wait_until(
        lambda: stored(board, project.session_id) == (moved["new_cwd"], "acceptEdits"),
        "the session's new folder and its mode",
    ), project.report()

    model.add(tool("Bash", {"command": "true", "description": "Nothing"}), say("Done."))
    project.run("Carry on.", "--permission-mode", "default", resume=True)

    wait_until(
        lambda: stored(board, project.session_id)[1] == "default", "the mode back to default"
    )
    lines = history(board, project.session_id)
    assert any(f"to {moved['new_cwd']}" in line and "moved from" in line for line in lines), lines
    assert any("permission mode acceptEdits → default" in line for line in lines), lines
    page = parse_html(Lead(board).get(f"/sessions/{project.session_id}/"))
    [header] = page.find_all("div", id="session-header")
    assert "mode default" in header.text() and moved["new_cwd"] in header.text()


def test_a_refusal_by_auto_mode_shows_and_a_lead_lets_the_call_through_once(
    server_factory, connect, model, claude_code
):
    board = server_factory(env=QUIET)
    command = claude_code.with_command_hooks
    project = connect(board, record=("PermissionDenied",), command=command)
    lead = Lead(board)
    assert lead.post("/settings/inbox/", {"auto_mode_refusals": "on"})[0] in {200, 302}
    # Auto mode's classifier runs on Anthropic's side: through the scripted model it is
    # unavailable, so Claude Code refuses every call that needs it (with a PermissionDenied).
    fetch = f"curl -s -o fetched.html {board.url}/accounts/login/"
    call = {"command": fetch, "description": "Fetch the login page"}
    refused, again = tool("Bash", call), tool("Bash", call)
    model.add(refused, again, say("Fetched."))

    running = project.start("Fetch the page.", "--permission-mode", "auto", allowed_tools=())
    try:
        [request_id] = wait_until(lead.pending_request_ids, "the refusal in the inbox")
        inbox = lead.get("/inbox/")
        assert "auto mode refused:" in inbox and "Allow once" in inbox
        assert lead.decide_request(request_id, "allow") in {200, 302}
        running.communicate(timeout=90)
    finally:
        if running.poll() is None:
            running.kill()
    [denied] = project.recorded("PermissionDenied")
    assert denied["permission_mode"] == "auto" and denied["tool_input"] == call
    assert project.result_of(refused).is_error, project.report()
    # The same call made again is let through once, past the classifier.
    assert not project.result_of(again).is_error, project.report()
    assert (project.directory / "fetched.html").exists(), project.report()
    lines = history(board, project.session_id)
    refusal = f"auto mode refused: Bash {fetch} ("
    assert any(refusal in line for line in lines), lines
