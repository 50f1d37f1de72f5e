"""Codex CLI's hooks on the board: sessions, the update_plan checklist, reminders, Stop."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from dashboard.activity.models import Concern, Step
from dashboard.integrations.claude_code import hooks as shared
from dashboard.integrations.codex.schemas import CodexToolInput
from dashboard.models import Agent, Client, Session
from tests.codex.conftest import SESSION_ID, load_fixture, plan_update
from tests.conftest import parse_html
from todos.models import AgentTracking, Todo, TodoRevision

pytestmark = pytest.mark.django_db

STEPS = (
    ("Read the settings page", "completed"),
    ("Store the theme", "in_progress"),
    ("Run the tests", "pending"),
)


def items() -> list[tuple[str, str]]:
    return list(
        Todo.objects.filter(agent__session__session_id=SESSION_ID)
        .order_by("position")
        .values_list("content", "status")
    )


def test_a_codex_session_shows_on_the_board_named_codex_with_its_folder_and_title(hook):
    assert hook(load_fixture("session_start.json")).json() == {}
    assert hook(load_fixture("user_prompt_submit.json")).json() == {}

    session = Session.objects.get(session_id=SESSION_ID)
    assert session.client == Client.CODEX
    assert session.cwd == "/home/dev/shop"
    assert session.title == "Add a dark theme to the settings page"
    main = Agent.objects.get(session=session)
    assert main.agent_id == SESSION_ID
    assert main.status == Agent.Status.RUNNING


def test_update_plan_becomes_the_agents_checklist_on_the_board(hook, client, reviewer):
    assert hook(plan_update(*STEPS)).json() == {}

    assert items() == list(STEPS)
    client.force_login(reviewer)
    page = parse_html(client.get(f"/sessions/{SESSION_ID}/").content)
    text = page.text()
    for step, _ in STEPS:
        assert step in text
    assert "1/3" in text
    assert "Codex hook" in text
    assert "Claude Code" not in text


def test_each_update_replaces_the_list_and_in_progress_is_read_in_both_spellings(hook):
    hook(plan_update(*STEPS, call_id="call_1"))
    hook(
        plan_update(
            ("Read the settings page", "completed"),
            ("Store the theme", "completed"),
            ("Run the tests", "inProgress"),
            call_id="call_2",
        )
    )

    assert items() == [
        ("Read the settings page", "completed"),
        ("Store the theme", "completed"),
        ("Run the tests", "in_progress"),
    ]
    assert TodoRevision.objects.count() == 2


def test_a_plan_codex_completed_reads_back_all_done_over_the_api(hook, agent_api):
    hook(plan_update(*STEPS, call_id="call_1"))
    done = [(step, "completed") for step, _ in STEPS]
    hook(plan_update(*done, call_id="call_2"))

    read = agent_api.get(f"/api/v1/sessions/{SESSION_ID}").json()

    (main,) = read["agents"]
    assert [(item["content"], item["status"]) for item in main["todos"]] == done
    assert (read["progress"]["completed"], read["progress"]["total"]) == (3, 3)
    todos = agent_api.get_todos(SESSION_ID, SESSION_ID).json()
    assert (todos["progress"]["completed"], todos["progress"]["total"]) == (3, 3)


def test_the_same_update_delivered_twice_is_one_revision(hook):
    hook(plan_update(*STEPS, call_id="call_same"))
    hook(plan_update(*STEPS, call_id="call_same"))

    assert TodoRevision.objects.count() == 1


def test_an_empty_plan_empties_the_list(hook):
    hook(plan_update(*STEPS, call_id="call_1"))
    hook(plan_update(call_id="call_2"))

    assert items() == []


def test_a_session_end_stops_the_agent(hook):
    hook(load_fixture("session_start.json"))
    assert hook(load_fixture("session_end.json")).json() == {}

    session = Session.objects.get(session_id=SESSION_ID)
    assert session.ended_at is not None
    assert Agent.objects.get(session=session).status == Agent.Status.STOPPED


def test_a_resumed_session_comes_back_to_life(hook):
    hook(load_fixture("session_start.json"))
    hook(load_fixture("session_end.json"))
    hook(load_fixture("session_start.json", source="resume"))

    session = Session.objects.get(session_id=SESSION_ID)
    assert session.ended_at is None
    assert Agent.objects.get(session=session).status == Agent.Status.RUNNING


def test_events_agentboard_does_not_use_change_nothing(hook):
    later = load_fixture("post_tool_use_bash.json", hook_event_name="SomeLaterEvent")
    del later["tool_response"]

    assert hook(later).json() == {}
    assert not Session.objects.exists()


def test_a_command_starting_puts_its_step_on_the_board(hook):
    pre = load_fixture("post_tool_use_bash.json", hook_event_name="PreToolUse")
    del pre["tool_response"]

    assert hook(pre).json() == {}
    step = Step.objects.get()
    assert (step.summary, step.outcome) == ("ls src", "running")


def test_the_seventh_command_without_a_plan_update_reminds_the_model(hook):
    hook(plan_update(*STEPS))
    answers = [
        hook(load_fixture("post_tool_use_bash.json", tool_use_id=f"call_ls_{n}")).json()
        for n in range(7)
    ]

    assert answers[:6] == [{}] * 6
    context = answers[6]["hookSpecificOutput"]
    assert context["hookEventName"] == "PostToolUse"
    assert "2. [in_progress] Store the theme" in context["additionalContext"]
    assert set(answers[6]) == {"hookSpecificOutput"}
    assert set(context) == {"hookEventName", "additionalContext"}


def test_a_stop_with_everything_done_lets_codex_stop(hook):
    hook(plan_update(("Store the theme", "completed")))

    assert hook(load_fixture("stop.json")).json() == {}


@pytest.mark.django_db(transaction=True)
def test_a_stop_with_open_steps_is_continued_after_the_countdown(hook, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 0.2
    hook(plan_update(*STEPS))

    answer = hook(load_fixture("stop.json")).json()

    # Exactly what Codex accepts from a Stop hook to continue: the reason is the next prompt.
    assert set(answer) == {"decision", "reason"}
    assert answer["decision"] == "block"
    assert "Status: 1/3 completed, 2 remaining" in answer["reason"]
    assert "Next: Store the theme" in answer["reason"]


@pytest.mark.django_db(transaction=True)
def test_a_stop_after_a_continuation_without_progress_lets_codex_stop(hook, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 0.2
    hook(plan_update(*STEPS))
    assert hook(load_fixture("stop.json")).json()["decision"] == "block"

    assert hook(load_fixture("stop.json", stop_hook_active=True)).json() == {}


def test_a_plan_update_costs_the_same_queries_for_3_or_30_steps(user):
    def cost(count: int, key: str) -> int:
        payload = plan_update(*[(f"Step {n}", "pending") for n in range(count)], call_id=key)
        hook = CodexToolInput.model_validate(payload)
        steps = payload["tool_input"]["plan"]
        items = [{"content": s["step"], "status": s["status"]} for s in steps]
        with CaptureQueriesContext(connection) as queries, transaction.atomic():
            shared.todos_change(
                owner=user,
                hook=hook,
                change=lambda current: items,
                idempotency_key=key,
                record_unchanged=True,
            )
        return len(queries.captured_queries)

    cost(3, "warm-up")  # the session and agent exist from here on
    few, many = cost(3, "few"), cost(30, "many")
    assert few == many
    assert many <= 25


def test_a_tool_whose_input_is_not_an_object_still_counts_as_a_step(hook):
    hook(plan_update(*STEPS))
    patch = load_fixture(
        "post_tool_use_bash.json",
        tool_name="apply_patch",
        tool_input="*** Begin Patch\n*** End Patch\n",
        tool_use_id="call_patch_1",
    )

    assert hook(patch).status_code == 200
    assert AgentTracking.objects.get().steps_since_write == 1


def test_a_command_that_exited_non_zero_failed_and_three_alike_are_a_loop(hook):
    for n in range(3):
        hook(load_fixture("post_tool_use_bash.json", tool_use_id=f"call_ls_{n}", exit_code=2))

    steps = list(Step.objects.order_by("pk").values_list("outcome", "error"))
    assert steps == [("failed", "Exit code 2")] * 3
    (concern,) = Concern.objects.all()
    assert concern.kind == "looping"
    assert concern.detail.startswith("“ls src” failed 3 times in ")

    hook(load_fixture("post_tool_use_bash.json", tool_use_id="call_ls_3", exit_code=0))
    assert Step.objects.order_by("pk").last().outcome == "ok"
    concern.refresh_from_db()
    assert concern.end_reason == "healthy step"
