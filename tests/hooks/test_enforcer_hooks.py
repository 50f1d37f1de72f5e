"""The enforcer through Claude Code's hooks: reminders as additionalContext, compaction, Stop."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from tests.hooks.conftest import SUBAGENT_ID, load_fixture
from todos.models import Continuation

pytestmark = pytest.mark.django_db

TODOS = [
    {"content": "Store the theme", "status": "completed", "activeForm": "Storing the theme"},
    {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"},
]


def todowrite(hook, **changes):
    payload = load_fixture("post_tool_use_todowrite.json", **changes)
    payload["tool_input"] = {"todos": TODOS}
    return hook(payload)


def bash(hook, n: int, **changes):
    payload = load_fixture(
        "post_tool_use_todowrite.json",
        tool_name="Bash",
        tool_input={"command": "ls"},
        tool_use_id=f"toolu_bash_{n}",
        **changes,
    )
    return hook(payload).json()


def test_the_seventh_tool_use_without_a_write_answers_with_a_reminder(hook):
    assert todowrite(hook).status_code == 200
    answers = [bash(hook, n) for n in range(7)]
    assert answers[:6] == [{}] * 6
    context = answers[6]["hookSpecificOutput"]
    assert context["hookEventName"] == "PostToolUse"
    assert (
        "1. [completed] Store the theme\n2. [in_progress] Run the tests"
        in (context["additionalContext"])
    )


def test_reminders_keep_their_rhythm_over_many_tool_uses_and_retries_count_once(hook):
    from todos.models import AgentTracking, EnforcerEvent

    assert todowrite(hook).status_code == 200
    answers = []
    for n in range(16):
        answers.append(bash(hook, n))
        bash(hook, n)  # the same hook delivered twice (a retry) is one step
    reminded = [n + 1 for n, answer in enumerate(answers) if answer]
    # Seven steps without a write, then every third step while the list stays stale.
    assert reminded == [7, 10, 13, 16]
    tracking = AgentTracking.objects.get()
    assert (tracking.steps_since_write, tracking.steps_since_reminder) == (16, 0)
    assert tracking.current_flags == ["stale_list"]
    assert EnforcerEvent.objects.filter(kind="reminder").count() == 4


def test_a_subagent_is_counted_on_its_own(hook):
    todowrite(hook)
    for n in range(6):
        bash(hook, n)
    answer = bash(hook, 99, agent_id=SUBAGENT_ID, agent_type="general-purpose")
    assert answer == {}


def test_a_reminder_due_on_a_failed_tool_rides_on_the_next_user_prompt(hook):
    todowrite(hook)
    for n in range(6):
        bash(hook, n)
    # PostToolUseFailure cannot carry context, so the reminder waits for the prompt.
    assert bash(hook, 6, hook_event_name="PostToolUseFailure") == {}
    answer = hook(load_fixture("user_prompt_submit.json")).json()
    context = answer["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    assert "has not changed in your last 7 steps" in context["additionalContext"]


def test_after_compaction_the_list_is_injected_again_on_session_start(hook):
    todowrite(hook)
    assert hook(load_fixture("pre_compact.json")).json() == {}
    answer = hook(load_fixture("session_start.json", source="compact")).json()
    context = answer["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert "2. [in_progress] Run the tests" in context["additionalContext"]
    assert hook(load_fixture("session_start.json", source="resume")).json() == {}


def test_a_stop_with_nothing_left_answers_at_once(hook):
    payload = load_fixture("post_tool_use_todowrite.json")
    payload["tool_input"] = {"todos": [{**TODOS[0]}]}
    hook(payload)
    assert hook(load_fixture("stop.json")).json() == {}


def test_a_stop_with_background_tasks_running_lets_the_agent_stop(hook, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 30
    todowrite(hook)
    stop = load_fixture("stop.json", background_tasks=[{"id": "bash_1", "status": "running"}])
    assert hook(stop).json() == {}


@pytest.mark.django_db(transaction=True)
def test_a_stop_with_unfinished_tasks_is_continued_after_the_countdown(hook, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 0.2
    todowrite(hook)
    answer = hook(load_fixture("stop.json")).json()
    assert answer["decision"] == "block"
    assert "Status: 1/2 completed, 1 remaining" in answer["reason"]


def test_task_tool_bursts_raise_no_flag_but_other_work_on_a_doubtful_list_does(hook):
    from todos.models import AgentTracking

    def create(n: int) -> None:
        hook(
            load_fixture(
                "post_tool_use_task_create.json",
                tool_use_id=f"toolu_create_{n}",
                tool_input={"subject": f"Task {n}", "activeForm": f"Doing task {n}"},
                tool_response={"task": {"id": str(n)}},
                permission_mode="acceptEdits",  # as in bash(): nothing new for the fast path
            )
        )

    bash(hook, 0)  # the agent is known: its steps take the fast path from here on
    for n in (1, 2, 3):
        create(n)
    assert AgentTracking.objects.get().current_flags == []
    # Three pending, none started, and the agent goes on with other work: now it is a flag.
    bash(hook, 1)
    assert AgentTracking.objects.get().current_flags == ["no_in_progress"]


@pytest.mark.django_db(transaction=True)
def test_a_hook_that_cannot_wait_the_whole_countdown_is_continued_before_it_gives_up(
    hook, settings
):
    # Installed for a 2-second countdown, its client gives up after 6.5 s: without the header
    # the server would hold it 60 s and the continuation would never arrive.
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 60
    todowrite(hook)
    started = time.monotonic()

    answer = hook(load_fixture("stop.json"), headers={"X-Agentboard-Hook-Timeout": "6.5"}).json()

    assert answer["decision"] == "block"
    assert 1.0 <= time.monotonic() - started < 6.5
    continuation = Continuation.objects.get()
    assert continuation.deadline - continuation.created_at < timedelta(seconds=2)


@pytest.mark.parametrize("header", ["", "soon", "-3", "0", "nan"])
def test_a_hook_timeout_that_is_not_a_positive_number_is_ignored(hook, settings, header):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 0.1
    todowrite(hook)

    answer = hook(load_fixture("stop.json"), headers={"X-Agentboard-Hook-Timeout": header})

    assert answer.status_code == 200
    assert Continuation.objects.get().deadline - Continuation.objects.get().created_at < timedelta(
        seconds=1
    )
