from __future__ import annotations

from datetime import timedelta

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
