"""The undo window: a decision made in the browser reaches a held hook only when the window
closes, and an undo within it leaves the agent waiting as if nobody had decided."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import AsyncClient

from dashboard.core.visibility import EVERYONE
from dashboard.core.writer import write
from planmode.inbox import inbox_count
from planmode.models import PermissionRequest, Plan
from planmode.orphans import orphans_expire
from planmode.staged import staged_release_due
from tests.hooks.conftest import HookClient, answer, load_fixture

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("sync_thread_connections_closed"),
]

WINDOW = 1.0


@pytest.fixture
def undo_window(settings) -> float:
    settings.AGENTBOARD_UNDO_SECONDS = WINDOW
    return WINDOW


class Lead:
    """A reviewer's browser on the same in-process server."""

    def __init__(self, reviewer: User) -> None:
        self.browser = AsyncClient()
        self.reviewer = reviewer

    async def post(self, path: str, data: dict | None = None, *, status: int = 302):
        await self.browser.aforce_login(self.reviewer)
        response = await self.browser.post(path, data or {})
        assert response.status_code == status, response.content.decode()[:500]
        return response


@pytest.fixture
def lead(reviewer) -> Lead:
    return Lead(reviewer)


@pytest.fixture
def agent(token) -> HookClient:
    return HookClient(token)


async def held_plan(agent: HookClient) -> tuple[asyncio.Task, Plan]:
    held = agent.hold(load_fixture("permission_request_exit_plan_mode.json"))
    return held, await agent.pending(Plan, held, 1, "plan")


async def held_request(agent: HookClient) -> tuple[asyncio.Task, PermissionRequest]:
    held = agent.hold(load_fixture("permission_request_bash.json"))
    return held, await agent.pending(PermissionRequest, held, 1, "request")


async def test_an_approval_reaches_the_agent_when_the_window_closes_not_before(
    agent, lead, undo_window
):
    held, plan = await held_plan(agent)

    await lead.post(f"/plans/{plan.pk}/decide/", {"action": "approve"})

    await plan.arefresh_from_db()
    assert plan.status == "pending" and plan.staged_answer["by_name"] == "lead"
    # Decided, so no longer waiting on anyone; the agent still hears nothing.
    assert (await asyncio.to_thread(inbox_count, EVERYONE)).plans == 0
    await asyncio.sleep(undo_window / 2)
    assert not held.done()

    output = await answer(held)

    assert output["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    await plan.arefresh_from_db()
    assert plan.status == "approved" and plan.decided_by_id == lead.reviewer.pk
    assert plan.staged_answer is None and plan.sends_at is None
    assert plan.decided_at >= plan.submitted_at + timedelta(seconds=undo_window)


async def test_an_undo_within_the_window_sends_nothing_and_the_plan_waits_again(
    agent, lead, undo_window
):
    held, plan = await held_plan(agent)
    await lead.post(f"/plans/{plan.pk}/decide/", {"action": "reject", "text": "Smaller steps."})

    await lead.post(f"/plans/{plan.pk}/undo/")

    await asyncio.sleep(undo_window * 1.5)
    assert not held.done()
    await plan.arefresh_from_db()
    assert (plan.status, plan.staged_answer, plan.sends_at) == ("pending", None, None)
    assert (await asyncio.to_thread(inbox_count, EVERYONE)).plans == 1
    # Waiting exactly as before: a later decision is made and sent as usual.
    await lead.post(f"/plans/{plan.pk}/decide/", {"action": "approve"})
    assert (await answer(held))["hookSpecificOutput"]["decision"]["behavior"] == "allow"


async def test_an_undo_after_the_window_is_refused_and_changes_nothing(agent, lead, undo_window):
    held, plan = await held_plan(agent)
    await lead.post(f"/plans/{plan.pk}/decide/", {"action": "approve"})
    await answer(held)

    response = await lead.post(f"/plans/{plan.pk}/undo/", status=409)

    assert "nothing was changed" in response.content.decode()
    await plan.arefresh_from_db()
    assert plan.status == "approved"


async def test_a_second_decision_in_the_window_is_refused(agent, lead, undo_window):
    held, plan = await held_plan(agent)
    await lead.post(f"/plans/{plan.pk}/decide/", {"action": "approve"})

    response = await lead.post(
        f"/plans/{plan.pk}/decide/", {"action": "reject", "text": "No."}, status=409
    )

    assert "undo that first" in response.content.decode()
    assert (await answer(held))["hookSpecificOutput"]["decision"]["behavior"] == "allow"


async def test_a_rejection_with_only_comments_is_refused_and_nothing_is_staged(
    agent, lead, undo_window
):
    held, plan = await held_plan(agent)

    response = await lead.post(f"/plans/{plan.pk}/decide/", {"action": "reject"}, status=422)

    assert "feedback box" in response.content.decode()
    await plan.arefresh_from_db()
    assert (plan.status, plan.staged_answer) == ("pending", None)
    await lead.post(f"/plans/{plan.pk}/decide/", {"action": "approve"})
    await answer(held)


async def test_a_staged_decision_of_a_stopped_process_is_sent_by_the_sweep(agent, reviewer):
    """The process that staged it stopped before the window closed: nothing here schedules
    the release, and the periodic sweep of any process sends it."""
    from planmode.staged import plan_stage

    held, plan = await held_plan(agent)
    await write(plan_stage, plan_id=plan.pk, reviewer=reviewer, approve=True, seconds=0.2)
    assert (await write(staged_release_due)).value == 0
    assert not held.done()

    await asyncio.sleep(0.3)
    await write(orphans_expire)

    assert (await answer(held))["hookSpecificOutput"]["decision"]["behavior"] == "allow"


async def test_an_allow_in_the_inbox_reaches_the_agent_after_the_window(agent, lead, undo_window):
    held, request = await held_request(agent)

    await lead.post(f"/inbox/requests/{request.pk}/decide/", {"action": "allow"})

    await asyncio.sleep(undo_window / 2)
    assert not held.done()
    await request.arefresh_from_db()
    assert request.status == "pending" and request.staged_answer["allow"] is True
    assert (await asyncio.to_thread(inbox_count, EVERYONE)).permissions == 0
    assert (await answer(held))["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    await request.arefresh_from_db()
    assert request.status == "allowed" and request.decided_by_id == lead.reviewer.pk


async def test_an_undone_denial_in_the_inbox_sends_nothing(agent, lead, undo_window):
    held, request = await held_request(agent)
    await lead.post(
        f"/inbox/requests/{request.pk}/decide/", {"action": "deny", "message": "Not now."}
    )

    await lead.post(f"/inbox/requests/{request.pk}/undo/")

    await asyncio.sleep(undo_window * 1.5)
    assert not held.done()
    await request.arefresh_from_db()
    assert (request.status, request.staged_answer) == ("pending", None)
    assert (await asyncio.to_thread(inbox_count, EVERYONE)).permissions == 1
    await lead.post(f"/inbox/requests/{request.pk}/decide/", {"action": "allow"})
    assert (await answer(held))["hookSpecificOutput"]["decision"]["behavior"] == "allow"


async def test_a_bulk_answer_is_staged_for_every_request_then_sent(agent, lead, undo_window):
    first, one = await held_request(agent)
    second = agent.hold(load_fixture("permission_request_bash.json", agent_id="sub-bulk"))
    other = await agent.pending(PermissionRequest, second, 2, "request")

    await lead.post("/inbox/requests/decide/", {"action": "allow", "ids": [one.pk, other.pk]})

    assert not first.done() and not second.done()
    assert await PermissionRequest.objects.filter(sends_at__isnull=False).acount() == 2
    for held in (first, second):
        assert (await answer(held))["hookSpecificOutput"]["decision"]["behavior"] == "allow"
