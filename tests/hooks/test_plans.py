from __future__ import annotations

import asyncio

import pytest
from django.contrib.auth.models import User
from django.test import AsyncClient

from dashboard.core.origin import HOST_HEADER, REPOSITORY_HEADER
from dashboard.models import Session
from planmode.models import PermissionRequest, Plan
from tests.hooks.conftest import (
    HOOK_URL,
    SESSION_ID,
    SUBAGENT_ID,
    WAIT,
    HookClient,
    answer,
    load_fixture,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("sync_thread_connections_closed"),
]


class Agentboard(HookClient):
    """An agent's hooks and a reviewer's browser against the same in-process server."""

    def __init__(self, token: str, reviewer: User) -> None:
        super().__init__(token)
        self.browser = AsyncClient()
        self.reviewer = reviewer

    async def plan_waiting(self, task: asyncio.Task, count: int = 1) -> Plan:
        return await self.pending(Plan, task, count, "plan")

    async def until(self, condition) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT
        while not await condition():
            assert loop.time() < deadline, "the condition never held"
            await asyncio.sleep(0.01)

    async def decide(self, plan: Plan, action: str, text: str = ""):
        await self.browser.aforce_login(self.reviewer)
        response = await self.browser.post(
            f"/plans/{plan.pk}/decide/", {"action": action, "text": text}
        )
        assert response.status_code == 302, response.content.decode()[:500]


@pytest.fixture
def board(token, reviewer) -> Agentboard:
    return Agentboard(token, reviewer)


async def test_an_approval_in_the_review_page_releases_the_held_request(board):
    payload = load_fixture("permission_request_exit_plan_mode.json")
    held = board.hold(payload)
    plan = await board.plan_waiting(held)
    assert plan.markdown.startswith("# Plan: dark mode")
    assert plan.plan_file_path == "/home/dev/.claude/plans/dark-mode-toggle-snug-otter.md"
    assert plan.source == "hook"

    await board.decide(plan, "approve")

    assert await answer(held) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow", "updatedInput": payload["tool_input"]},
        }
    }
    assert (await Plan.objects.aget(pk=plan.pk)).status == "approved"


async def test_auto_accept_switches_claude_code_to_accept_edits(board):
    payload = load_fixture("permission_request_exit_plan_mode.json")
    held = board.hold(payload)
    plan = await board.plan_waiting(held)

    await board.decide(plan, "approve_auto")

    decision = (await answer(held))["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "allow"
    assert decision["updatedInput"] == payload["tool_input"]
    assert decision["updatedPermissions"] == [
        {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
    ]
    session = await Session.objects.aget(session_id=SESSION_ID)
    assert session.permission_mode == "acceptEdits"


async def test_a_rejection_denies_with_the_reviewers_feedback(board):
    held = board.hold(load_fixture("permission_request_exit_plan_mode.json"))
    plan = await board.plan_waiting(held)

    await board.decide(plan, "reject", "Use CSS variables instead of a context.")

    output = await answer(held)
    assert output["hookSpecificOutput"]["hookEventName"] == "PermissionRequest"
    decision = output["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"
    # The model reads that the plan was rejected, then the feedback, then what to do next.
    message = decision["message"]
    assert message.startswith("The reviewer did not approve the plan")
    assert "Their feedback:\nUse CSS variables instead of a context.\n" in message
    assert message.endswith("Rework the plan with this in mind and submit it again.")
    session = await Session.objects.aget(session_id=SESSION_ID)
    assert session.permission_mode == "plan"


async def test_a_decision_made_through_the_service_releases_it_too(board, reviewer):
    held = board.hold(
        load_fixture(
            "permission_request_exit_plan_mode.json", agent_id=SUBAGENT_ID, agent_type="Plan"
        )
    )
    plan = await board.plan_waiting(held)
    assert plan.agent.agent_id == SUBAGENT_ID

    from dashboard.core.writer import write
    from planmode import services

    await write(services.plan_decide, plan_id=plan.pk, reviewer=reviewer, approve=True)

    assert (await answer(held))["hookSpecificOutput"]["decision"]["behavior"] == "allow"


async def test_nobody_deciding_in_time_answers_nothing_and_expires_the_plan(board, settings):
    settings.AGENTBOARD_PLAN_HOOK_WAIT_SECONDS = 0.3

    result = await answer(board.hold(load_fixture("permission_request_exit_plan_mode.json")))

    assert result == {}
    plan = await Plan.objects.aget()
    assert plan.status == "expired"


async def test_an_agent_that_stops_waiting_leaves_no_plan_pending(board):
    held = board.hold(load_fixture("permission_request_exit_plan_mode.json"))
    plan = await board.plan_waiting(held)

    held.cancel()
    with pytest.raises(asyncio.CancelledError):
        await held

    await board.until(lambda: Plan.objects.filter(pk=plan.pk, status="expired").aexists())


async def test_the_same_request_delivered_twice_waits_on_one_plan(board):
    payload = load_fixture("permission_request_exit_plan_mode.json")
    first = board.hold(payload)
    plan = await board.plan_waiting(first)
    seen = (await Session.objects.aget(session_id=SESSION_ID)).last_seen_at
    second = board.hold(payload)
    await board.until(
        lambda: Session.objects.filter(session_id=SESSION_ID, last_seen_at__gt=seen).aexists()
    )

    await board.decide(plan, "reject", "Too big; split it.")

    for held in (first, second):
        message = (await answer(held))["hookSpecificOutput"]["decision"]["message"]
        assert "Their feedback:\nToo big; split it.\n" in message
    assert await Plan.objects.acount() == 1


async def test_a_revised_plan_replaces_the_waiting_one(board, settings):
    settings.AGENTBOARD_PLAN_HOOK_WAIT_SECONDS = 0.3
    first = board.hold(load_fixture("permission_request_exit_plan_mode.json"))
    await board.plan_waiting(first)
    revised = load_fixture("permission_request_exit_plan_mode.json")
    revised["tool_input"]["plan"] = "# Plan: dark mode, smaller\n\n1. Only the toggle.\n"

    second = board.hold(revised)

    assert await answer(first) == {}
    assert await answer(second) == {}
    statuses = [p.status async for p in Plan.objects.order_by("pk")]
    assert statuses == ["withdrawn", "expired"]


async def test_a_decided_plan_is_answered_at_once_when_its_tool_use_comes_again(board):
    payload = load_fixture("permission_request_exit_plan_mode.json", tool_use_id="toolu_plan_1")
    held = board.hold(payload)
    plan = await board.plan_waiting(held)
    await board.decide(plan, "approve")
    await answer(held)

    again = await answer(board.hold(payload))

    assert again["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    assert await Plan.objects.acount() == 1


async def test_other_tools_permission_requests_are_held_as_requests_not_plans(board, settings):
    settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS = 0.3
    payload = load_fixture(
        "permission_request_exit_plan_mode.json",
        tool_name="Bash",
        tool_input={"command": "rm -rf build"},
    )
    assert await answer(board.hold(payload)) == {}
    assert await Plan.objects.acount() == 0
    request = await PermissionRequest.objects.aget()
    assert (request.tool_name, request.status) == ("Bash", "expired")


@pytest.mark.parametrize(
    ("tool_name", "tool_input"),
    [("ExitPlanMode", None), ("Bash", {"command": "rm -rf build"})],
)
async def test_a_session_held_from_its_first_hook_shows_where_it_runs_while_it_waits(
    board, tool_name, tool_input
):
    """A session whose first request is held for a person (after a restart, say) shows its
    repository and machine while it waits, not once it is answered; the answer then waits
    behind nothing."""
    payload = load_fixture("permission_request_exit_plan_mode.json", tool_name=tool_name)
    if tool_input is not None:
        payload["tool_input"] = tool_input
    held = asyncio.create_task(
        board.agent.post(
            HOOK_URL,
            payload,
            content_type="application/json",
            headers={
                "Authorization": f"Bearer {board.token}",
                REPOSITORY_HEADER: "git@github.com:acme/shop.git",
                HOST_HEADER: "dana-laptop",
            },
        )
    )
    model = Plan if tool_name == "ExitPlanMode" else PermissionRequest
    waiting = await board.pending(model, held, 1, tool_name)

    async def placed() -> bool:
        session = await Session.objects.select_related("project_record").aget(pk=waiting.session_id)
        return (session.repository, session.host, session.project_name) == (
            "github.com/acme/shop",
            "dana-laptop",
            "shop",
        )

    await board.until(placed)
    assert not held.done()
    if model is Plan:
        await board.decide(waiting, "approve")
    else:
        await board.browser.aforce_login(board.reviewer)
        decided = await board.browser.post(
            f"/inbox/requests/{waiting.pk}/decide/", {"action": "allow"}
        )
        assert decided.status_code in (200, 302), decided.content.decode()[:300]
    assert (await answer(held))["hookSpecificOutput"]["decision"]["behavior"] == "allow"


@pytest.mark.parametrize("tool_input", [{"plan": ""}, {"plan": "  \n"}, {}])
async def test_a_request_without_plan_text_is_left_to_the_terminal(board, tool_input):
    """Claude Code 2.1.330 sends `tool_input: {}` when the model wrote no plan file."""
    payload = load_fixture("permission_request_exit_plan_mode.json", tool_input=tool_input)

    response = await board.hook(payload)

    assert (response.status_code, response.json()) == (200, {})
    assert await Plan.objects.acount() == 0


async def test_approval_notes_reach_the_model_after_exit_plan_mode(board):
    held = board.hold(load_fixture("permission_request_exit_plan_mode.json"))
    plan = await board.plan_waiting(held)
    await board.decide(plan, "approve", "Keep the toggle keyboard accessible.")
    await answer(held)

    result = await answer(board.hold(load_fixture("post_tool_use_exit_plan_mode.json")))

    context = result["hookSpecificOutput"]
    assert context["hookEventName"] == "PostToolUse"
    assert "Keep the toggle keyboard accessible." in context["additionalContext"]
    session = await Session.objects.aget(session_id=SESSION_ID)
    assert session.permission_mode == "default"


async def test_an_approval_without_notes_adds_no_context(board):
    held = board.hold(load_fixture("permission_request_exit_plan_mode.json"))
    await board.decide(await board.plan_waiting(held), "approve")
    await answer(held)

    assert await answer(board.hold(load_fixture("post_tool_use_exit_plan_mode.json"))) == {}


async def test_exit_plan_mode_approved_elsewhere_adds_no_context(board):
    assert await answer(board.hold(load_fixture("post_tool_use_exit_plan_mode.json"))) == {}


async def test_a_plan_of_another_users_session_is_refused(board, other_user):
    await Session.objects.acreate(session_id=SESSION_ID, owner=other_user)

    response = await board.hook(load_fixture("permission_request_exit_plan_mode.json"))

    assert response.status_code == 403
    assert await Plan.objects.acount() == 0


async def test_many_held_requests_wait_at_once_and_each_gets_its_own_answer(board):
    count = 40
    held = []
    for n in range(count):
        payload = load_fixture("permission_request_exit_plan_mode.json", session_id=f"sess-{n}")
        payload["tool_input"]["plan"] = f"# Plan {n}\n\nDo step {n}.\n"
        held.append(board.hold(payload))
    await board.plan_waiting(held[-1], count=count)

    plans = [p async for p in Plan.objects.select_related("session").order_by("pk")]
    for plan in plans:
        number = int(plan.session.session_id.removeprefix("sess-"))
        if number % 2:
            await board.decide(plan, "reject", f"No to {number}.")
        else:
            await board.decide(plan, "approve")

    for n, task in enumerate(held):
        decision = (await answer(task))["hookSpecificOutput"]["decision"]
        if n % 2:
            assert decision["behavior"] == "deny"
            assert f"Their feedback:\nNo to {n}.\n" in decision["message"]
        else:
            assert decision["updatedInput"]["plan"] == f"# Plan {n}\n\nDo step {n}.\n"


# --- answered in the terminal ----------------------------------------------------------------


def bash_step(**changes) -> dict:
    return load_fixture(
        "post_tool_use_todowrite.json",
        tool_name="Bash",
        tool_input={"command": "ls"},
        tool_use_id="toolu_after_terminal",
        **changes,
    )


@pytest.mark.parametrize(
    "moved_on",
    [
        pytest.param(bash_step(permission_mode="default"), id="a tool use"),
        pytest.param(
            load_fixture("post_tool_use_exit_plan_mode.json"), id="ExitPlanMode ran anyway"
        ),
        pytest.param(load_fixture("user_prompt_submit.json"), id="a prompt"),
        pytest.param(load_fixture("stop.json"), id="Stop"),
    ],
)
async def test_an_agent_that_moved_on_answered_its_plan_in_the_terminal(board, moved_on):
    """Claude Code shows its own prompt beside the held hook; answered there first, the agent
    goes on and never closes the held request."""
    held = board.hold(load_fixture("permission_request_exit_plan_mode.json"))
    plan = await board.plan_waiting(held)

    response = await board.hook(moved_on)

    assert response.status_code == 200
    assert await answer(held) == {}  # released, with nothing to say
    await plan.arefresh_from_db()
    assert plan.status == "answered_in_terminal"
    assert plan.decided_by is None
    # A late click on the board changes nothing, least of all the session's mode.
    await board.browser.aforce_login(board.reviewer)
    late = await board.browser.post(
        f"/plans/{plan.pk}/decide/", {"action": "approve_auto"}, headers={"HX-Request": "true"}
    )
    assert late.status_code == 409
    assert "answered in the agent&#x27;s terminal" in late.content.decode()
    assert "Answered in the terminal" in late.content.decode()  # the plan's own status
    await plan.arefresh_from_db()
    assert plan.status == "answered_in_terminal"
    session = await Session.objects.aget(session_id=SESSION_ID)
    assert session.permission_mode != "acceptEdits"


async def test_a_notification_while_the_plan_waits_is_not_moving_on(board):
    held = board.hold(load_fixture("permission_request_exit_plan_mode.json"))
    plan = await board.plan_waiting(held)
    notification = load_fixture(
        "stop.json", hook_event_name="Notification", message="Claude needs your permission"
    )

    assert (await board.hook(notification)).status_code == 200

    await asyncio.sleep(0.2)
    assert not held.done()
    await board.decide(plan, "approve")
    assert (await answer(held))["hookSpecificOutput"]["decision"]["behavior"] == "allow"


async def test_after_a_board_decision_the_agents_next_steps_leave_the_plan_alone(board):
    held = board.hold(load_fixture("permission_request_exit_plan_mode.json"))
    plan = await board.plan_waiting(held)
    await board.decide(plan, "approve")
    await answer(held)

    await board.hook(load_fixture("post_tool_use_exit_plan_mode.json"))
    await board.hook(bash_step())

    await plan.arefresh_from_db()
    assert plan.status == "approved"
