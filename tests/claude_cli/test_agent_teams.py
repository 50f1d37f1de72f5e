"""Agent teams of the real Claude Code, on the board: the lead spawns a teammate, the teammate
does one small thing and goes idle (TeammateIdle), and the lead sees it as a card of its own
that reads idle, with a line of history saying it waits for work.

Both supported versions have agent teams, gated by `CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS` (or
`--agent-teams`) and a feature flag that is on unless the flag service says otherwise. The
session's one team is made at start-up only in the interactive CLI: in print mode (`-p`) an
Agent call with a `name` starts a plain named subagent, which never goes idle. So this runs in
tmux. An Agent call with a `name` (and no `subagent_type`, `isolation` or `cwd`) spawns the
teammate, in-process by default (`teammateMode`), with its name as its agent type. 2.1.332's
TeammateIdle names the teammate's agent id; 2.1.197's only its name.
"""

from __future__ import annotations

import json

import pytest

from tests.claude_cli.conftest import Lead, board_get, wait_until
from tests.claude_cli.install import NEWEST, OLDEST, VERSIONS
from tests.claude_cli.model_server import say, started_with, tool
from tests.conftest import parse_html
from tests.hooks.conftest import FIXTURES

pytestmark = [
    pytest.mark.claude_cli,
    pytest.mark.parametrize(
        "claude_code",
        [pytest.param(version, id=f"claude-{version}-terminal") for version in VERSIONS],
        indirect=True,
    ),
]
SAMPLES = {OLDEST: "teammate_idle_2.1.197.json", NEWEST: "teammate_idle.json"}

QUIET = {"AGENTBOARD_ENFORCER_ENABLED": "false"}
TEAMS = {"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1"}
IDLE_LINE = "teammate reviewer is idle, waiting for work"


def test_an_idle_teammate_is_a_card_of_its_own_that_reads_idle(
    server_factory, connect, model, claude_code
):
    board = server_factory(env=QUIET)
    # With command hooks (the newest version), TeammateIdle runs in the background and still
    # makes the card.
    command = claude_code.with_command_hooks
    project = connect(board, record=("TeammateIdle", "SubagentStart"), command=command)
    lead = Lead(board)
    spawn = tool(
        "Agent",
        {
            "description": "Check the build",
            "prompt": "TEAMMATE-TASK: check that the build passes, then wait for more work.",
            "name": "reviewer",
        },
    )
    spawn.when = started_with("Get a reviewer on the build")
    check = tool("Bash", {"command": "true", "description": "Check the build"})
    checked = say("The build passes.")
    for turn in (check, checked):
        turn.when = started_with("TEAMMATE-TASK")
        model.add(turn)
    model.add(spawn)

    # Manual mode: auto mode (the default) asks Anthropic's classifier, which is not here.
    project.terminal(
        "Get a reviewer on the build.",
        *("--permission-mode", "default", "--allowedTools", "Bash", "--"),
        env=TEAMS,
    )

    [idle] = project.recorded("TeammateIdle")
    assert idle["teammate_name"] == "reviewer", project.report()
    assert not project.result_of(check).is_error, project.report()
    [started] = project.recorded("SubagentStart")
    # The sample the hook tests use has what the real CLI sends, no more and no less.
    sample = json.loads((FIXTURES / SAMPLES[claude_code.version]).read_text())
    assert set(idle) == set(sample), project.report()

    def idle_in_history() -> list[str]:
        page = parse_html(lead.get(f"/sessions/{project.session_id}/"))
        lines = [entry.text() for entry in page.find_all("li", cls="history-entry")]
        return lines if any(IDLE_LINE in line for line in lines) else []

    wait_until(idle_in_history, "the idle teammate in the session's history")
    agents = board_get(board, f"/api/v1/sessions/{project.session_id}")["agents"]
    [teammate] = [agent for agent in agents if not agent["main"]]
    assert teammate["agent_id"] == started["agent_id"] and teammate["agent_type"] == "reviewer"
    [main] = [agent for agent in agents if agent["main"]]
    assert main["agent_type"] == "", project.report()
    # Waiting for work, not stopped as a subagent that handed back its report is.
    assert teammate["status"] == "running", project.report()
    page = parse_html(lead.get(f"/sessions/{project.session_id}/"))
    [card] = [
        card
        for card in page.find_all("article", cls="card")
        if card.attrs.get("data-collapse-key", "").endswith(f"/{started['agent_id']}")
    ]
    assert "reviewer" in card.text() and "Idle" in card.text(), card.text()
