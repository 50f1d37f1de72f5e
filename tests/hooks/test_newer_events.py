"""Claude Code's newer events on the board: a refusal by auto mode's classifier
(PermissionDenied), a new working folder (CwdChanged), an idle teammate (TeammateIdle), and the
permission mode every hook carries."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from dashboard.board.selectors import session_history
from dashboard.integrations.claude_code import hooks
from dashboard.integrations.claude_code.schemas import HookInput
from dashboard.models import Agent, Session
from tests.activity.conftest import tool_event
from tests.conftest import parse_html
from tests.hooks.conftest import SESSION_ID, load_fixture

pytestmark = pytest.mark.django_db


# The call refused, with a secret in it (the sample payload holds none).
WITH_SECRET = {
    "command": "curl -X POST https://deploy.example.com/release "
    "-H 'Authorization: Bearer ghp_9fQx2LmN8pR4sT6vW1yZ3aB5cD7eF0gH2jK4'",
    "description": "Release the build",
}


def lines() -> list[str]:
    return [entry.text for entry in session_history(Session.objects.get(session_id=SESSION_ID))]


def test_a_refusal_by_auto_mode_is_a_line_of_history_without_its_secrets(hook):
    hook(load_fixture("session_start.json"))
    refused = load_fixture("permission_denied.json", tool_input=WITH_SECRET)

    assert hook(refused).json() == {}

    [line] = [line for line in lines() if line.startswith("auto mode refused")]
    assert "permission mode default → auto" in lines()
    assert line.startswith("auto mode refused: Bash curl -X POST https://deploy.example.com")
    assert "Deploying to production was not asked for by the user." in line
    assert "ghp_9fQx2LmN8pR4sT6vW1yZ3aB5cD7eF0gH2jK4" not in line
    session = Session.objects.get(session_id=SESSION_ID)
    assert session.permission_mode == "auto"
    assert session.steps.get().outcome == "denied"


def test_a_refusal_without_its_call_id_still_names_the_tool(hook):
    """No step can be made without the call's id; the line of history is still written."""
    refused = load_fixture("permission_denied.json")
    del refused["tool_use_id"]

    assert hook(refused).json() == {}

    [line] = [line for line in lines() if line.startswith("auto mode refused")]
    assert line.startswith("auto mode refused: Bash (")
    assert not Session.objects.get(session_id=SESSION_ID).steps.exists()


def test_a_new_folder_is_the_sessions_folder_and_a_line_of_history(hook):
    hook(load_fixture("session_start.json"))

    assert hook(load_fixture("cwd_changed.json")).json() == {}

    assert Session.objects.get(session_id=SESSION_ID).cwd == "/home/dev/shop/api"
    assert lines() == ["moved from /home/dev/shop to /home/dev/shop/api"]
    # Told again (another process's hook, a resumed session): nothing new.
    hook(load_fixture("cwd_changed.json"))
    assert len(lines()) == 1


# The teammate's agent id as its own hooks give it; 2.1.197's TeammateIdle does not.
TEAMMATE = "areviewer-a18936a3420b1662"


@pytest.mark.parametrize("sample", ["teammate_idle.json", "teammate_idle_2.1.197.json"])
def test_an_idle_teammate_is_a_card_of_its_own_that_reads_idle(hook, client, user, sample):
    hook(load_fixture("session_start.json"))
    # As the real CLI sends them: the teammate starts, its turn ends, then it goes idle.
    hook(load_fixture("subagent_start.json", agent_id=TEAMMATE, agent_type="reviewer"))
    hook(
        load_fixture(
            "subagent_stop.json",
            agent_id=TEAMMATE,
            agent_type="reviewer",
            agent_transcript_path=None,
            last_assistant_message="The build passes.",
        )
    )

    assert hook(load_fixture(sample)).json() == {}

    teammate = Agent.objects.get(agent_id=TEAMMATE)
    assert teammate.agent_type == "reviewer"
    assert teammate.parent.agent_id == SESSION_ID
    # Idle, waiting for work: not stopped, as a subagent that handed back its report is.
    assert teammate.status == Agent.Status.RUNNING
    assert teammate.turn_ended_at is not None
    main = Agent.objects.get(agent_id=SESSION_ID)
    assert main.agent_type == "" and main.turn_ended_at is None
    assert Agent.objects.count() == 2
    # The team is the session's implicit one: naming it would tell a lead nothing.
    assert lines() == ["teammate reviewer is idle, waiting for work"]
    client.force_login(user)
    page = parse_html(client.get(f"/sessions/{SESSION_ID}/").content)
    [card] = [
        c for c in page.find_all("article", cls="card") if c.attrs["id"] == f"agent-{teammate.pk}"
    ]
    assert "reviewer" in card.text() and "Idle" in card.text()


def test_a_teammate_idle_before_any_of_its_own_hooks_still_gets_its_own_card(hook):
    hook(load_fixture("session_start.json"))

    hook(load_fixture("teammate_idle_2.1.197.json"))

    teammate = Agent.objects.get(agent_id="reviewer@session-175ea8ed")
    assert teammate.agent_type == "reviewer" and teammate.turn_ended_at is not None
    assert Agent.objects.get(agent_id=SESSION_ID).agent_type == ""


def test_a_team_a_lead_named_is_named_in_the_history(hook):
    hook(load_fixture("session_start.json"))

    hook(load_fixture("teammate_idle.json", team_name="shop-release"))

    assert lines() == ["teammate reviewer of team shop-release is idle, waiting for work"]


def test_a_new_permission_mode_shows_at_once_and_once_in_history(hook):
    hook(load_fixture("session_start.json"))
    hook(tool_event("PreToolUse", "toolu_1"))

    hook(tool_event("PreToolUse", "toolu_2", permission_mode="plan"))
    hook(tool_event("PostToolUse", "toolu_2", permission_mode="plan"))

    assert Session.objects.get(session_id=SESSION_ID).permission_mode == "plan"
    assert lines() == ["permission mode default → plan"]


def test_a_step_in_the_same_mode_reads_nothing_and_one_in_another_stores_it(hook, user):
    hook(load_fixture("session_start.json"))
    hook(tool_event("PreToolUse", "toolu_1"))

    def record(mode: str) -> list[str]:
        payload = tool_event("PreToolUse", f"toolu_{mode}", permission_mode=mode)
        step = hooks.hook_step(payload)
        with transaction.atomic(), CaptureQueriesContext(connection) as queries:
            hooks.step_record(owner=user, hook=HookInput.model_validate(payload), step=step)
        return [query["sql"] for query in queries.captured_queries]

    assert record("default") == []
    assert any("permission_mode" in sql for sql in record("acceptEdits"))
    assert Session.objects.get(session_id=SESSION_ID).permission_mode == "acceptEdits"

    # Another server process stores "plan" (a hook of the session went there). What this
    # process knows holds only a moment: then a step in acceptEdits stores its mode again.
    Session.objects.filter(session_id=SESSION_ID).update(permission_mode="plan")
    session_pk = Session.objects.get(session_id=SESSION_ID).pk
    mode, at = hooks._session_modes[session_pk]
    hooks._session_modes[session_pk] = (mode, at - hooks.MODE_KNOWN_SECONDS)
    assert record("acceptEdits") != []
    assert Session.objects.get(session_id=SESSION_ID).permission_mode == "acceptEdits"


def test_a_move_into_a_worktree_names_its_branch(hook):
    hook(load_fixture("session_start.json", git_branch="main"))

    hook(load_fixture("cwd_changed.json", new_cwd="/home/dev/shop-dark", git_branch="dark-mode"))

    session = Session.objects.get(session_id=SESSION_ID)
    assert (session.cwd, session.branch) == ("/home/dev/shop-dark", "dark-mode")
