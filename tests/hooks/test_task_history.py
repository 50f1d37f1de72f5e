"""The session history of Task tool hooks, replayed in the order the real Claude Code sent them.

The `task_tools_*.jsonl` fixtures are what Claude Code 2.1.197 and 2.1.330 sent the hooks (one
input a line, in order), driven by a scripted model: `main` makes three tasks and starts and
completes each (9 tool calls); `subagent` has a foreground subagent make two tasks and update
them (4 tool calls). Both versions send TaskCreated before the TaskCreate's own PostToolUse (with
the spinner text) and TaskCompleted before the TaskUpdate's; 2.1.197 names no agent in a
subagent's TaskCreated or TaskCompleted.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.layers import get_channel_layer

from dashboard.board.selectors import session_history
from dashboard.live import publisher as live
from dashboard.models import Agent, Session
from tests.hooks.conftest import FIXTURES, SESSION_ID, SUBAGENT_ID, load_fixture
from tests.hooks.test_lifecycle_and_todos import AsyncHook, fragment_with
from todos.models import AgentTracking, TodoRevision

pytestmark = pytest.mark.django_db

VERSIONS = ["2.1.197", "2.1.330"]


def recorded(name: str, version: str) -> list[dict]:
    path = FIXTURES / f"task_tools_{name}_{version}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def replay(hook, payloads: list[dict]) -> None:
    for payload in payloads:
        response = hook(payload)
        assert response.status_code == 200, (payload["hook_event_name"], response.content)


def history() -> list[str]:
    """The session's history lines of its todo lists, oldest first (the enforcer's own lines,
    such as a flag raised when a step runs with nothing in progress, left out)."""
    session = Session.objects.get(session_id=SESSION_ID)
    entries = reversed(session_history(session))
    return [entry.text for entry in entries if entry.kind == "revision"]


def card(agent_id: str = SESSION_ID) -> list[tuple[str, str, str]]:
    agent = Agent.objects.get(session__session_id=SESSION_ID, agent_id=agent_id)
    return [(todo.content, todo.status, todo.active_form) for todo in agent.todos.all()]


def revisions_of(agent_id: str) -> int:
    return TodoRevision.objects.filter(
        agent__session__session_id=SESSION_ID, agent__agent_id=agent_id
    ).count()


@pytest.mark.parametrize("version", VERSIONS)
def test_nine_task_tool_calls_make_nine_lines_of_history_and_none_unchanged(hook, version):
    replay(hook, recorded("main", version))

    assert history() == [
        "wrote a list of 1 item",
        "added 1 item",
        "added 1 item",
        "started “Run the tests”",
        "completed “Run the tests”",
        "started “Fix the parser”",
        "completed “Fix the parser”",
        "started “Update the docs”",
        "completed “Update the docs”; all done",
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_spinner_text_sent_after_the_task_shows_on_the_card(hook, version):
    payloads = recorded("main", version)
    *_, last_create = (i for i, p in enumerate(payloads) if p.get("tool_name") == "TaskCreate")

    replay(hook, payloads[: last_create + 1])  # up to the third TaskCreate's own hook

    assert card() == [
        ("Run the tests", "pending", "Running the tests"),
        ("Fix the parser", "pending", "Fixing the parser"),
        ("Update the docs", "pending", "Updating the docs"),
    ]
    # Each revision holds the list as the card shows it, spinner texts included.
    latest = TodoRevision.objects.latest("number")
    assert [item.get("activeForm") for item in latest.new_todos] == [
        "Running the tests",
        "Fixing the parser",
        "Updating the docs",
    ]
    # Using the list's tool is a write for the reminders, as every todo tool call is.
    assert AgentTracking.objects.get(agent__agent_id=SESSION_ID).steps_since_write == 0


def test_a_spinner_text_delivered_again_changes_nothing(hook):
    payloads = [p for p in recorded("main", "2.1.197") if p["hook_event_name"] != "PreToolUse"]
    created, post_tool_use = payloads[:2]
    replay(hook, [created, post_tool_use])
    first = TodoRevision.objects.get()

    replay(hook, [post_tool_use, created])

    assert TodoRevision.objects.get() == first
    assert first.idempotency_key == post_tool_use["tool_use_id"]
    assert card() == [("Run the tests", "pending", "Running the tests")]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_subagents_first_task_never_shows_on_the_main_card(hook, settings, version):
    # The subagent stops with a task in progress: no countdown holds its SubagentStop here.
    settings.AGENTBOARD_ENFORCER_ENABLED = False
    replay(hook, recorded("subagent", version))

    assert revisions_of(SESSION_ID) == 0
    assert card(SUBAGENT_ID) == [
        ("Read the parser", "completed", "Reading the parser"),
        ("Write the report", "in_progress", "Writing the report"),
    ]
    # Four tool calls of the subagent, four lines.
    assert history() == [
        "wrote a list of 1 item",
        "added 1 item",
        "completed “Read the parser”",
        "started “Write the report”",
    ]


def _pre_tool_use(agent_id: str | None) -> dict:
    payload = load_fixture(
        "post_tool_use_task_create.json",
        hook_event_name="PreToolUse",
        tool_use_id=f"toolu_pre_{agent_id or 'main'}",
    )
    payload.pop("tool_response")
    if agent_id:
        payload.update(agent_id=agent_id, agent_type="general-purpose")
    return payload


def test_the_main_agents_task_stays_on_its_card_while_a_background_subagent_runs(hook):
    hook(load_fixture("subagent_start.json", agent_id=SUBAGENT_ID))
    hook(_pre_tool_use(None))

    hook(load_fixture("task_completed.json", hook_event_name="TaskCreated"))

    assert [content for content, *_ in card()] == ["Wire the toggle into the header"]
    assert revisions_of(SUBAGENT_ID) == 0


def test_a_task_of_one_of_two_subagents_making_tasks_at_once_lands_on_the_main_card_first(hook):
    other = "b5e3d9f2a1c4b308"
    hook(_pre_tool_use(SUBAGENT_ID))
    hook(_pre_tool_use(other))

    hook(load_fixture("task_completed.json", hook_event_name="TaskCreated"))

    # Which of the two made it, nothing says yet: its own TaskCreate hook moves it.
    assert [content for content, *_ in card()] == ["Wire the toggle into the header"]


async def fragments_for(channel: str, seconds: float) -> list[str]:
    """Every fragment the board receives within `seconds`."""
    layer = get_channel_layer()
    received = []
    try:
        async with asyncio.timeout(seconds):
            while True:
                received.append((await layer.receive(channel))["html"])
    except TimeoutError:
        return received


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("sync_thread_connections_closed")
async def test_the_spinner_text_reaches_the_open_board_without_a_line_of_history(token):
    client = AsyncHook(token)
    await client.post(load_fixture("session_start.json"))
    session = await Session.objects.aget(session_id=SESSION_ID)
    layer = get_channel_layer()
    board = await layer.new_channel()
    await layer.group_add(live.session_group(session.pk), board)
    await client.post(load_fixture("task_completed.json", hook_event_name="TaskCreated"))
    await fragment_with(board, "wrote a list of 1 item")

    await client.post(load_fixture("post_tool_use_task_create.json"))

    fragments = await fragments_for(board, 0.5)
    assert fragments, "The card was not drawn again."
    assert not any("#history" in html for html in fragments)
    await layer.group_discard(live.session_group(session.pk), board)
