from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard.activity.models import Step
from dashboard.activity.selectors import (
    IDLE_AFTER,
    latest_steps_by_agent,
    latest_steps_by_session,
    now_line,
)
from dashboard.board.selectors import board_cards, session_summaries
from dashboard.models import Agent, Session
from tests.activity.conftest import SESSION_ID, load_fixture, tool_event

pytestmark = pytest.mark.django_db

NOW = timezone.now()


def step(**fields) -> Step:
    fields = {"tool_name": "Bash", "summary": "pytest tests/api", "started_at": NOW, **fields}
    return Step(**fields)


def test_a_running_step_reads_as_what_it_does_since_it_started():
    line = now_line(step(outcome="running"), last_event=NOW, running=True, now=NOW)
    assert (line.state, line.text, line.since) == ("running", "Running pytest tests/api", NOW)
    edit = now_line(step(tool_name="Edit", summary="orders/views.py"), last_event=NOW, running=True)
    assert edit.text == "Editing orders/views.py"
    mcp = now_line(step(tool_name="mcp__github__create_issue"), last_event=NOW, running=True)
    assert mcp.text.startswith("Calling")


def test_between_two_steps_the_agent_is_thinking_since_the_last_one_ended():
    ended = NOW - timedelta(seconds=12)
    done = step(outcome="ok", started_at=ended - timedelta(seconds=3), ended_at=ended)
    line = now_line(done, last_event=ended, running=True, now=NOW)
    assert (line.state, line.since, line.idle_at) == ("thinking", ended, ended + IDLE_AFTER)


def test_with_no_event_for_a_while_the_agent_is_idle():
    ended = NOW - timedelta(minutes=9)
    line = now_line(step(outcome="ok", ended_at=ended), last_event=ended, running=True, now=NOW)
    assert (line.state, line.text) == ("idle", "Idle")


def test_a_stopped_agent_or_one_without_steps_has_no_line():
    assert now_line(step(outcome="running"), last_event=NOW, running=False) is None
    assert now_line(None, last_event=NOW, running=True) is None


def test_the_latest_step_of_every_agent_and_session_is_one_query_each(hook):
    hook(load_fixture("session_start.json"))
    sub = load_fixture("subagent_start.json")
    hook(sub)
    for n in range(5):
        hook(tool_event("PreToolUse", f"main-{n}"))
        hook(tool_event("PostToolUse", f"main-{n}"))
    hook(tool_event("PreToolUse", "sub-1", agent_id=sub["agent_id"], agent_type="Explore"))
    agents = {agent.agent_id: agent.pk for agent in Agent.objects.all()}
    session = Session.objects.get()

    with CaptureQueriesContext(connection) as queries:
        by_agent = latest_steps_by_agent(list(agents.values()))
        by_session = latest_steps_by_session([session.pk])

    assert len(queries.captured_queries) == 2
    assert by_agent[agents[SESSION_ID]].tool_use_id == "main-4"
    assert by_agent[agents[sub["agent_id"]]].tool_use_id == "sub-1"
    assert by_session[session.pk].tool_use_id == "sub-1"
    # Compiled once per number of agents: another agent of the same number answers its own.
    for agent_id, latest in ((SESSION_ID, "main-4"), (sub["agent_id"], "sub-1")):
        [step] = latest_steps_by_agent([agents[agent_id]]).values()
        assert step.tool_use_id == latest
    assert latest_steps_by_session([session.pk + 1000]) == {}


def test_cards_and_rows_say_what_each_agent_is_doing(hook):
    hook(load_fixture("session_start.json"))
    edit = {"file_path": "/home/dev/shop/orders/views.py", "old_string": "a", "new_string": "b"}
    hook(tool_event("PreToolUse", "e-1", tool_name="Edit", tool_input=edit))
    session = Session.objects.get()

    [card] = board_cards(session)
    [summary] = session_summaries([session])

    assert card.now.text == "Editing orders/views.py"
    assert card.now.detail == "+1 \N{MINUS SIGN}1"
    assert summary.now.text == "Editing orders/views.py"


def test_the_overview_and_board_pages_show_the_line_escaped(hook, client, user):
    hook(load_fixture("session_start.json"))
    hook(tool_event("PreToolUse", "h-1", tool_input={"command": "echo <b>hi</b>"}))
    client.force_login(user)

    overview = client.get("/").content.decode()
    board = client.get(f"/sessions/{SESSION_ID}/").content.decode()

    for page in (overview, board):
        assert 'Running <code class="now-subject">echo &lt;b&gt;hi&lt;/b&gt;</code>' in page


# --- the turn's end -------------------------------------------------------------------------


def test_once_its_turn_ended_the_agent_is_idle_since_then_at_once():
    ended = NOW - timedelta(seconds=20)
    done = step(outcome="ok", started_at=ended - timedelta(seconds=3), ended_at=ended)
    stop = NOW - timedelta(seconds=12)

    line = now_line(done, last_event=stop, running=True, turn_ended_at=stop, now=NOW)

    assert (line.state, line.text, line.since, line.idle_at) == ("idle", "Idle", stop, None)
    assert line.since_title.startswith("Its turn ended ")


def test_a_step_after_the_turn_ended_is_a_new_turn():
    stop = NOW - timedelta(seconds=30)
    later = step(outcome="ok", started_at=stop + timedelta(seconds=5), ended_at=NOW)
    running = step(outcome="running", started_at=stop + timedelta(seconds=5))

    assert now_line(later, last_event=stop, running=True, turn_ended_at=stop).state == "thinking"
    assert now_line(running, last_event=stop, running=True, turn_ended_at=stop).state == "running"


def test_after_a_new_prompt_it_thinks_since_the_prompt_not_since_its_last_step():
    long_ago = NOW - timedelta(hours=2)
    prompt = NOW - timedelta(seconds=4)
    done = step(outcome="ok", started_at=long_ago, ended_at=long_ago)

    line = now_line(done, last_event=prompt, running=True, now=NOW)

    assert (line.state, line.since) == ("thinking", prompt)


def lines(session: Session) -> tuple[str, str]:
    """What the main agent's card and the session's row say."""
    [card, *_] = board_cards(session)
    [summary] = session_summaries([session])
    return card.now.state, summary.now.state


def test_a_stop_makes_the_card_and_the_row_idle_until_the_next_prompt(hook):
    hook(load_fixture("session_start.json"))
    hook(tool_event("PreToolUse", "t-1"))
    hook(tool_event("PostToolUse", "t-1", tool_response={}))
    session = Session.objects.get()
    assert lines(session) == ("thinking", "thinking")

    hook(load_fixture("stop.json"))

    agent = Agent.objects.get()
    assert agent.turn_ended_at is not None
    assert lines(session) == ("idle", "idle")
    [card] = board_cards(session)
    assert card.now.since == agent.turn_ended_at

    hook(load_fixture("user_prompt_submit.json"))
    assert Agent.objects.get().turn_ended_at is None
    assert lines(session) == ("thinking", "thinking")

    hook(load_fixture("stop.json"))
    hook(tool_event("PreToolUse", "t-2"))  # a step of a new turn, without a prompt
    assert lines(session) == ("running", "running")
    hook(tool_event("PostToolUse", "t-2", tool_response={}))
    assert lines(session) == ("thinking", "thinking")


def test_a_subagents_stop_does_not_end_the_sessions_turn(hook):
    hook(load_fixture("session_start.json"))
    hook(tool_event("PreToolUse", "t-1"))
    hook(tool_event("PostToolUse", "t-1", tool_response={}))
    hook(load_fixture("subagent_start.json"))
    hook(load_fixture("subagent_stop.json"))

    [summary] = session_summaries([Session.objects.get()])
    assert summary.now.state == "thinking"


def test_codex_and_opencode_turn_ends_make_the_line_idle(agent_api):
    codex = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
    for name in ("session_start.json", "post_tool_use_bash.json", "stop.json"):
        payload = json.loads((codex / name).read_text())
        assert agent_api.post("/hooks/codex", payload).status_code == 200, name

    created = {"info": {"id": "ses_idle", "directory": "/work/shop", "title": ""}}
    agent_api.post("/hooks/opencode", {"type": "session.created", "properties": created})
    call = {"sessionID": "ses_idle", "callID": "call_1", "tool": "bash"}
    for state in ("running", "completed"):
        props = {**call, "input": {"command": "pytest -q"}, "status": state}
        agent_api.post("/hooks/opencode", {"type": "agentboard.tool", "properties": props})
    idle = {"type": "session.idle", "properties": {"sessionID": "ses_idle"}}
    assert agent_api.post("/hooks/opencode", idle).status_code == 200

    summaries = session_summaries(list(Session.objects.all()))
    assert {s.session.client: s.now.state for s in summaries} == {
        "codex": "idle",
        "opencode": "idle",
    }

    prompt = {
        "type": "agentboard.activity",
        "properties": {"sessionID": "ses_idle", "kind": "prompt"},
    }
    agent_api.post("/hooks/opencode", prompt)
    assert session_summaries([Session.objects.get(client="opencode")])[0].now.state == "thinking"


def _stop_statements(user, event: str) -> list[str]:
    """The statements of a write of `event` (as its hook makes it), in a batch of its own."""
    from dashboard.core.writer import Writer, _Job
    from dashboard.integrations.claude_code import hooks
    from dashboard.integrations.claude_code.schemas import HookInput

    name = {"Stop": "stop.json", "UserPromptSubmit": "user_prompt_submit.json"}[event]
    hook_input = HookInput.model_validate(load_fixture(name))
    if event == "Stop":
        job = _Job(func=hooks.record_event, kwargs={"owner": user, "hook": hook_input}, loop=None)
    else:
        payload = load_fixture(name)
        kwargs = {"owner": user, "hook": hook_input, "payload": payload}
        job = _Job(func=hooks.record_and_enforce, kwargs=kwargs, loop=None)
    job.future.set_running_or_notify_cancel()
    with CaptureQueriesContext(connection) as queries:
        outcomes, _ = Writer()._transaction([job])
    assert outcomes[0][2] is None
    return [q["sql"] for q in queries.captured_queries]


@pytest.mark.parametrize("event", ["Stop", "UserPromptSubmit"])
def test_the_turns_end_and_start_are_saved_with_the_agents_touch_not_by_a_query_of_their_own(
    hook, user, event
):
    hook(load_fixture("session_start.json"))
    hook(tool_event("PreToolUse", "t-1"))

    statements = _stop_statements(user, event)

    agent_updates = [sql for sql in statements if sql.startswith('UPDATE "dashboard_agent"')]
    assert len(agent_updates) == 1
    assert "turn_ended_at" in agent_updates[0] and "last_seen_at" in agent_updates[0]


def test_an_agent_the_enforcer_continues_after_its_countdown_is_thinking_again(hook, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 0.2
    hook(load_fixture("session_start.json"))
    hook(load_fixture("post_tool_use_todowrite.json"))  # a task in progress
    session = Session.objects.get()

    assert hook(load_fixture("stop.json")).json()["decision"] == "block"

    assert Agent.objects.get().turn_ended_at is None
    assert lines(session) == ("thinking", "thinking")
