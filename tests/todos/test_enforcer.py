"""Reminders, the continuation enforcer and discipline flags, through their services."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.utils import timezone

from dashboard.core.writer import write as commit
from dashboard.live import publisher as live
from dashboard.models import Agent, Session
from tests.domain import enforcer
from todos import enforcer as enforcer_module
from todos.models import AgentTracking, Continuation, EnforcerEvent, TodoRevision
from todos.schemas import TodoItem
from todos.services import todo_list_replace

SESSION = "sess-enforcer"


def write(user, items, *, agent_id=SESSION, agent_type=""):
    todo_list_replace(
        owner=user,
        session_id=SESSION,
        agent_id=agent_id,
        todos=[TodoItem(**item) for item in items],
        source=TodoRevision.Source.API,
        agent_type=agent_type,
    )
    return Agent.objects.select_related("session").get(
        session__session_id=SESSION, agent_id=agent_id
    )


UNFINISHED = [
    {"content": "Fix tests", "status": "completed", "activeForm": "Fixing tests"},
    {"content": "Update docs", "status": "in_progress", "activeForm": "Updating docs"},
    {"content": "Run build", "status": "pending", "activeForm": "Running the build"},
]


def steps(agent, count, prefix="tool"):
    return [enforcer.on_step(agent=agent, key=f"{prefix}-{n}") for n in range(count)]


@pytest.fixture
def agent(user):
    return write(user, UNFINISHED)


@pytest.fixture
def quick(settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 0.3
    return settings


# --- reminders -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_reminder_comes_on_the_seventh_step_without_a_write_with_the_numbered_list(agent):
    results = steps(agent, 7)
    assert results[:6] == [None] * 6
    assert results[6] is not None
    assert (
        "1. [completed] Fix tests\n2. [in_progress] Update docs\n3. [pending] Run build"
        in (results[6])
    )
    assert EnforcerEvent.objects.filter(agent=agent, kind="reminder").count() == 1


@pytest.mark.django_db
def test_reminders_wait_three_steps_between_them(agent):
    results = steps(agent, 13)
    reminded_at = [n + 1 for n, text in enumerate(results) if text]
    assert reminded_at == [7, 10, 13]


@pytest.mark.django_db
def test_a_write_resets_the_count(user, agent):
    steps(agent, 6)
    write(user, UNFINISHED[:2])
    assert steps(agent, 6, prefix="after") == [None] * 6


@pytest.mark.django_db
def test_the_same_hook_delivered_twice_counts_as_one_step(agent):
    for _ in range(10):
        assert enforcer.on_step(agent=agent, key="toolu_same") is None
    assert AgentTracking.objects.get(agent=agent).steps_since_write == 1


@pytest.mark.django_db
def test_an_empty_list_gets_the_gentler_wording(user):
    agent = write(user, [])
    text = next(t for t in steps(agent, 7) if t)
    assert "not tracking this work in a todo list" in text
    assert "1." not in text


@pytest.mark.django_db
def test_thresholds_come_from_settings(settings, agent):
    settings.AGENTBOARD_REMINDER_STEPS_SINCE_WRITE = 2
    settings.AGENTBOARD_REMINDER_STEPS_BETWEEN = 1
    assert [bool(t) for t in steps(agent, 3)] == [False, True, True]


@pytest.mark.django_db
def test_a_due_reminder_rides_on_the_next_user_prompt(settings, agent):
    steps(agent, 6)
    assert enforcer.on_user_prompt(agent=agent) is None
    enforcer.on_step(agent=agent, key="seventh")  # due now, delivered on this step
    steps(agent, 3, prefix="more")
    tracking = AgentTracking.objects.get(agent=agent)
    tracking.steps_since_reminder = 5
    tracking.save()
    assert "has not changed" in enforcer.on_user_prompt(agent=agent)


@pytest.mark.django_db
def test_the_list_is_reinjected_once_after_compaction(agent):
    enforcer.on_pre_compact(agent=agent)
    text = enforcer.on_session_start(agent=agent, source="compact")
    assert "compacted" in text
    assert "2. [in_progress] Update docs" in text
    assert enforcer.on_session_start(agent=agent, source="resume") is None
    assert enforcer.on_user_prompt(agent=agent) is None


@pytest.mark.django_db
def test_a_stale_list_is_flagged_on_the_card(agent):
    steps(agent, 7)
    assert "stale_list" in AgentTracking.objects.get(agent=agent).current_flags


# --- discipline flags ----------------------------------------------------------------------


@pytest.mark.django_db
def test_batch_completion_is_flagged_and_kept_in_the_history(user):
    agent = write(user, [{"content": c, "status": "pending"} for c in "ABC"])
    write(
        user,
        [{"content": c, "status": "completed"} for c in "AB"]
        + [{"content": "C", "status": "in_progress"}],
    )
    tracking = AgentTracking.objects.get(agent=agent)
    assert "batch_completion" in tracking.current_flags
    assert EnforcerEvent.objects.filter(agent=agent, code="batch_completion").exists()


@pytest.mark.django_db
def test_one_item_completed_at_a_time_raises_no_batch_flag(user):
    agent = write(user, [{"content": c, "status": "pending"} for c in "AB"])
    write(
        user, [{"content": "A", "status": "completed"}, {"content": "B", "status": "in_progress"}]
    )
    assert AgentTracking.objects.get(agent=agent).current_flags == []


@pytest.mark.django_db
def test_a_flag_is_recorded_once_while_it_holds(user):
    pending_only = [{"content": "A", "status": "pending"}, {"content": "B", "status": "pending"}]
    agent = write(user, pending_only)
    steps(agent, 1, "first")
    write(user, pending_only)
    steps(agent, 2, "second")
    assert EnforcerEvent.objects.filter(agent=agent, code="no_in_progress").count() == 1


def flags_of(agent) -> list[str]:
    return AgentTracking.objects.get(agent=agent).current_flags


@pytest.mark.django_db
def test_a_burst_of_task_tool_calls_raises_no_flag_on_its_way(user):
    """Task tools add items one at a time, all pending, then start one: no flag for that."""
    agent = write(user, [{"content": "A", "status": "pending"}])
    write(user, [{"content": "A", "status": "pending"}, {"content": "B", "status": "pending"}])
    write(user, [{"content": "A", "status": "in_progress"}, {"content": "B", "status": "pending"}])
    steps(agent, 3)
    assert flags_of(agent) == []
    assert not EnforcerEvent.objects.filter(agent=agent, kind="flag").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("statuses", "flag"),
    [(["pending", "pending"], "no_in_progress"), (["in_progress"] * 2, "multiple_in_progress")],
)
def test_a_doubtful_list_is_flagged_when_the_agent_works_on_with_it(user, statuses, flag):
    agent = write(user, [{"content": f"T{n}", "status": s} for n, s in enumerate(statuses)])
    assert flags_of(agent) == []

    steps(agent, 1)

    assert flags_of(agent) == [flag]
    assert EnforcerEvent.objects.filter(agent=agent, code=flag).count() == 1
    # Fixed by the next write: the flag goes.
    write(
        user, [{"content": "T0", "status": "in_progress"}, {"content": "T1", "status": "pending"}]
    )
    assert flags_of(agent) == []


@pytest.mark.django_db
def test_a_raised_flag_stays_through_a_write_that_keeps_the_problem(user):
    pending_only = [{"content": "A", "status": "pending"}, {"content": "B", "status": "pending"}]
    agent = write(user, pending_only)
    steps(agent, 1)
    write(user, [*pending_only, {"content": "C", "status": "pending"}])
    assert flags_of(agent) == ["no_in_progress"]


# --- the continuation enforcer -------------------------------------------------------------


def begin(agent, stop_hook_active=False):
    return enforcer.continuation_begin(agent_pk=agent.pk, stop_hook_active=stop_hook_active)


@pytest.mark.django_db
def test_a_stop_with_unfinished_items_starts_a_countdown_and_flags_it(agent):
    continuation = begin(agent)
    assert continuation.status == Continuation.Status.COUNTING
    assert continuation.unfinished == 2
    assert "stopped_unfinished" in AgentTracking.objects.get(agent=agent).current_flags


@pytest.mark.django_db
def test_the_continuation_prompt_says_what_to_do_with_a_status_line(agent):
    continuation = enforcer.continuation_finish(continuation_pk=begin(agent).pk)
    assert continuation.status == Continuation.Status.SENT
    assert "no need to ask for permission" in continuation.prompt
    assert "Mark each task completed" in continuation.prompt
    assert "Status: 1/3 completed, 2 remaining" in continuation.prompt
    assert "Next: Update docs" in continuation.prompt


@pytest.mark.django_db
def test_a_continuation_is_sent_once_even_if_finished_twice(agent):
    pk = begin(agent).pk
    enforcer.continuation_finish(continuation_pk=pk)
    enforcer.continuation_finish(continuation_pk=pk)
    assert EnforcerEvent.objects.filter(agent=agent, text__startswith="Continued").count() == 1
    assert AgentTracking.objects.get(agent=agent).consecutive_continuations == 1


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        (
            lambda a, s: setattr(s, "AGENTBOARD_ENFORCER_ENABLED", False),
            "switched off on this server",
        ),
        (
            lambda a, s: Session.objects.filter(pk=a.session_id).update(enforcer_enabled=False),
            "switched off for this session",
        ),
        (
            lambda a, s: Session.objects.filter(pk=a.session_id).update(permission_mode="plan"),
            "plan mode",
        ),
        (
            lambda a, s: AgentTracking.objects.filter(agent=a).update(last_error_at=timezone.now()),
            "an error was reported",
        ),
    ],
    ids=["globally-off", "session-off", "plan-mode", "recent-error"],
)
@pytest.mark.django_db
def test_the_enforcer_lets_the_agent_stop_when(settings, agent, setup, reason):
    setup(agent, settings)
    agent = Agent.objects.select_related("session").get(pk=agent.pk)
    continuation = begin(agent)
    assert continuation.status == Continuation.Status.SKIPPED
    assert reason in continuation.reason
    assert EnforcerEvent.objects.filter(agent=agent, text__contains=reason).exists()


@pytest.mark.django_db
def test_it_lets_a_finished_agent_stop(user):
    agent = write(
        user, [{"content": "A", "status": "completed"}, {"content": "B", "status": "cancelled"}]
    )
    assert begin(agent).reason == "every task is done"


@pytest.mark.django_db
def test_it_lets_an_agent_without_a_list_stop(user):
    agent = write(user, [])
    assert begin(agent).reason == "there is no todo list"


@pytest.mark.django_db
def test_it_lets_a_read_only_subagent_stop(user):
    write(user, UNFINISHED)
    explorer = write(user, UNFINISHED, agent_id="explore-1", agent_type="Explore")
    assert "cannot edit" in begin(explorer).reason


@pytest.mark.django_db
def test_it_lets_the_main_agent_stop_while_its_subagents_run(user, agent):
    write(user, UNFINISHED, agent_id="worker-1", agent_type="general-purpose")
    assert begin(agent).reason == "its subagents are still running"
    Agent.objects.filter(agent_id="worker-1").update(status=Agent.Status.STOPPED)
    assert begin(agent).status == Continuation.Status.COUNTING


@pytest.mark.django_db
def test_the_consecutive_limit_lets_the_agent_stop(settings, user, agent):
    settings.AGENTBOARD_CONTINUATION_LIMIT = 2
    for round_number in range(2):
        enforcer.continuation_finish(continuation_pk=begin(agent, stop_hook_active=True).pk)
        # The agent makes progress each time, so only the limit can stop it.
        write(user, [*UNFINISHED, {"content": f"Step {round_number}", "status": "pending"}])
    continuation = begin(agent, stop_hook_active=True)
    assert "already continued 2 times in a row" in continuation.reason


@pytest.mark.django_db
def test_a_fresh_stop_resets_the_consecutive_count(settings, user, agent):
    settings.AGENTBOARD_CONTINUATION_LIMIT = 1
    enforcer.continuation_finish(continuation_pk=begin(agent, stop_hook_active=True).pk)
    write(user, [*UNFINISHED, {"content": "More", "status": "pending"}])
    assert begin(agent, stop_hook_active=False).status == Continuation.Status.COUNTING


@pytest.mark.django_db
def test_it_never_asks_twice_at_the_same_state(agent):
    enforcer.continuation_finish(continuation_pk=begin(agent).pk)
    continuation = begin(agent, stop_hook_active=True)
    assert "has not updated its list since" in continuation.reason


@pytest.mark.django_db
def test_a_user_prompt_clears_the_error_cooldown(agent):
    enforcer.on_error(agent=agent)
    assert "error" in begin(agent).reason
    enforcer.on_user_prompt(agent=agent)
    assert begin(agent).status == Continuation.Status.COUNTING


@pytest.mark.django_db
def test_the_error_cooldown_runs_out(settings, agent):
    AgentTracking.objects.get_or_create(agent=agent)
    AgentTracking.objects.filter(agent=agent).update(
        last_error_at=timezone.now()
        - timedelta(seconds=settings.AGENTBOARD_ERROR_COOLDOWN_SECONDS + 1)
    )
    assert begin(agent).status == Continuation.Status.COUNTING


@pytest.mark.parametrize(
    "activity",
    [
        lambda agent, user: enforcer.on_step(agent=agent, key="tool-during-countdown"),
        lambda agent, user: enforcer.on_user_prompt(agent=agent),
        lambda agent, user: write(user, UNFINISHED[1:]),
    ],
    ids=["tool-use", "prompt", "todo-write"],
)
@pytest.mark.django_db
def test_activity_during_the_countdown_cancels_it(agent, user, activity):
    pk = begin(agent).pk
    activity(agent, user)
    assert Continuation.objects.get(pk=pk).status == Continuation.Status.CANCELLED
    assert enforcer.continuation_finish(continuation_pk=pk).status == Continuation.Status.CANCELLED


@pytest.mark.django_db
def test_the_lead_can_cancel_a_countdown(agent):
    pk = begin(agent).pk
    assert enforcer.continuation_cancel(continuation_pk=pk, by="lead") is True
    assert enforcer.continuation_cancel(continuation_pk=pk, by="lead") is False
    assert EnforcerEvent.objects.filter(agent=agent, text="Countdown cancelled by lead.").exists()


# --- the held Stop hook, end to end through the channel layer ------------------------------


@pytest.mark.django_db(transaction=True)
async def test_the_stop_hook_answer_blocks_after_the_countdown(quick, user):
    agent = await sync_to_async(write)(user, UNFINISHED)
    answer = await enforcer.stop_hook_answer(agent_pk=agent.pk, stop_hook_active=False)
    assert answer["decision"] == "block"
    assert "Status: 1/3 completed, 2 remaining" in answer["reason"]


@pytest.mark.django_db(transaction=True)
async def test_a_cancel_during_the_countdown_lets_the_agent_stop_at_once(settings, user):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 30
    agent = await sync_to_async(write)(user, UNFINISHED)
    waiting = asyncio.create_task(
        enforcer.stop_hook_answer(agent_pk=agent.pk, stop_hook_active=False)
    )
    counting = Continuation.objects.filter(agent=agent, status=Continuation.Status.COUNTING)
    for _ in range(200):
        if await counting.aexists():
            break
        await asyncio.sleep(0.02)
    pk = (await counting.afirst()).pk
    await commit(enforcer_module.continuation_cancel, continuation_pk=pk, by="lead")
    assert await asyncio.wait_for(waiting, timeout=5) == {}


@pytest.mark.django_db(transaction=True)
async def test_the_stop_hook_answer_never_raises(user):
    assert await enforcer.stop_hook_answer(agent_pk=999_999, stop_hook_active=False) == {}


# --- socket agents -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_socket_agent_gets_a_reminder_frame_on_its_seventh_step(user, token):
    from channels.testing import WebsocketCommunicator

    from dashboard.asgi import application

    await sync_to_async(write)(user, UNFINISHED)
    socket = WebsocketCommunicator(application, f"/ws/agent/?token={token}")
    connected, _ = await socket.connect()
    assert connected
    try:
        for number in range(7):
            await socket.send_json_to(
                {
                    "type": "step",
                    "id": number,
                    "session_id": SESSION,
                    "agent_id": SESSION,
                    "key": f"turn-{number}",
                }
            )
            ack = await socket.receive_json_from(timeout=5)
            assert ack["type"] == "ack"
        assert ack["result"]["reminder"]
        reminder = await socket.receive_json_from(timeout=5)
        assert reminder["type"] == "reminder"
        assert "2. [in_progress] Update docs" in reminder["text"]
    finally:
        await socket.disconnect()


@pytest.mark.django_db
def test_it_lets_the_agent_stop_while_background_tasks_run(agent):
    continuation = enforcer.continuation_begin(
        agent_pk=agent.pk, stop_hook_active=False, background_tasks=2
    )
    assert continuation.reason == "its background tasks are still running"


@pytest.mark.django_db
def test_a_todo_tool_hook_does_not_count_as_a_step_but_other_tools_do(agent):
    for n in range(6):
        enforcer.on_hook(agent=agent, event="PostToolUse", tool_name="Bash", tool_use_id=f"b{n}")
    enforcer.on_hook(agent=agent, event="PostToolUse", tool_name="TodoWrite", tool_use_id="t1")
    assert AgentTracking.objects.get(agent=agent).steps_since_write == 6
    text = enforcer.on_hook(agent=agent, event="PostToolUse", tool_name="Read", tool_use_id="r1")
    assert enforcer.additional_context("PostToolUse", text)["hookSpecificOutput"][
        "additionalContext"
    ].startswith("A note from Agentboard")


@pytest.mark.django_db
def test_a_stop_failure_starts_the_error_cooldown(agent):
    enforcer.on_hook(agent=agent, event="StopFailure")
    assert "error" in begin(agent).reason


@pytest.mark.django_db
def test_imported_history_raises_no_flags(user):
    todo_list_replace(
        owner=user,
        session_id="imported",
        agent_id="imported",
        todos=[
            TodoItem(content="A", status="in_progress"),
            TodoItem(content="B", status="in_progress"),
        ],
        source=TodoRevision.Source.IMPORT,
    )
    assert not EnforcerEvent.objects.exists()


@pytest.mark.django_db(transaction=True)
async def test_a_step_that_flags_and_reminds_renders_the_card_once(user):
    from django.test.signals import template_rendered

    agent = await sync_to_async(write)(user, UNFINISHED)
    await sync_to_async(steps)(agent, 6)
    await live.settled()
    # A board is open on the session: nothing is rendered for sessions nobody watches.
    layer = get_channel_layer()
    board = await layer.new_channel()
    await layer.group_add(live.session_group(agent.session_id), board)
    cards = []

    def on_render(sender, template, **kwargs):
        if template.name == "dashboard/_agent_card.html":
            cards.append(template.name)

    template_rendered.connect(on_render)
    try:
        # The seventh step raises the stale flag, records a reminder and cancels nothing.
        step = await commit(enforcer_module.on_step, agent=agent, key="seventh")
        assert step.text
        await live.settled()
    finally:
        template_rendered.disconnect(on_render)
        await layer.group_discard(live.session_group(agent.session_id), board)
    assert len(cards) == 1
    assert "Reminded the agent" in (await layer.receive(board))["html"]
