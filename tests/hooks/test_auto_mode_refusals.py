"""A call auto mode's classifier refused (Claude Code's PermissionDenied), held in the inbox of
a lead who asked for such refusals: allowed once, Claude Code hears `retry` and the call's next
PreToolUse is allowed, once, in whichever server process it arrives (the allowance is the
request's row); kept refused, nothing changes for the agent."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import transaction

from dashboard.core.writer import write
from dashboard.costs import budgets
from dashboard.integrations.claude_code import hooks
from dashboard.integrations.claude_code.schemas import HookInput
from dashboard.models import Session
from planmode import allow_once
from planmode.models import InboxChoice, PermissionRequest, RequestStatus, RuleBehavior, TeamRule
from planmode.permissions import Answer, permission_decide
from tests.hooks.conftest import HookClient, answer, load_fixture

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("sync_thread_connections_closed"),
]

RETRY = {"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": True}}


# The call refused, with a secret in it (the sample payload holds none).
WITH_SECRET = {
    "command": "curl -X POST https://deploy.example.com/release "
    "-H 'Authorization: Bearer ghp_9fQx2LmN8pR4sT6vW1yZ3aB5cD7eF0gH2jK4'",
    "description": "Release the build",
}


@pytest.fixture
def agent(token) -> HookClient:
    return HookClient(token)


def pre_tool_use(refused: dict, **changes) -> dict:
    """The PreToolUse of the call `refused` names (made again), with `changes`."""
    call = {key: value for key, value in refused.items() if key != "reason"}
    return call | {
        "hook_event_name": "PreToolUse",
        "tool_use_id": "toolu_01RetriedAfterTheInbox01",
        **changes,
    }


def decision(response) -> str | None:
    return response.json().get("hookSpecificOutput", {}).get("permissionDecision")


async def allowed_by(agent: HookClient, reviewer, refused: dict) -> PermissionRequest:
    """`refused` held in the reviewer's inbox and allowed once there; Claude Code was told to
    retry. The request, as stored."""
    held = agent.hold(refused)
    request = await agent.pending(PermissionRequest, held, 1, "refusal")
    await write(permission_decide, request_id=request.pk, user=reviewer, answer=Answer(allow=True))
    assert await answer(held) == RETRY
    return await PermissionRequest.objects.aget(pk=request.pk)


@pytest.fixture
async def refusals_wanted(reviewer):
    await InboxChoice.objects.acreate(user=reviewer, auto_mode_refusals=True)


@pytest.fixture
def sessions_read_once(monkeypatch):
    """This process reads the sessions with a refusal open (and the budgets that hold
    sessions) once and keeps them, however long the test takes: as a process that last read
    them just before does."""
    monkeypatch.setattr(allow_once, "SESSIONS_TTL", 3600.0)
    monkeypatch.setattr(budgets, "HELD_TTL", 3600.0)


async def test_without_anyone_asking_a_refusal_is_answered_at_once(agent, reviewer):
    response = await agent.hook(load_fixture("permission_denied.json", tool_input=WITH_SECRET))

    assert response.json() == {}
    assert not await PermissionRequest.objects.aexists()


async def test_a_refusal_allowed_once_is_retried_and_its_next_call_allowed(agent, reviewer):
    await InboxChoice.objects.acreate(user=reviewer, auto_mode_refusals=True)
    refused = load_fixture("permission_denied.json", tool_input=WITH_SECRET)
    held = agent.hold(refused)
    request = await agent.pending(PermissionRequest, held, 1, "refusal")
    assert request.refused_by_auto_mode
    # Stored redacted, like any request's input.
    assert "ghp_9fQx2LmN8pR4sT6vW1yZ3aB5cD7eF0gH2jK4" not in str(request.tool_input)

    await write(permission_decide, request_id=request.pk, user=reviewer, answer=Answer(allow=True))

    assert await answer(held) == RETRY
    allowed = (await agent.hook(pre_tool_use(refused))).json()
    assert allowed["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert (
        "Allowed once from Agentboard" in allowed["hookSpecificOutput"]["permissionDecisionReason"]
    )
    # Once: the same call again goes through the classifier as usual.
    assert (await agent.hook(pre_tool_use(refused))).json() == {}
    request = await PermissionRequest.objects.aget(pk=request.pk)
    assert (request.status, request.once_used_at is not None) == (RequestStatus.ALLOWED, True)


async def test_a_process_that_knew_only_of_the_pending_refusal_lets_its_retry_through(
    agent, reviewer, refusals_wanted, sessions_read_once
):
    refused = load_fixture("permission_denied.json", tool_input=WITH_SECRET)
    held = agent.hold(refused)
    request = await agent.pending(PermissionRequest, held, 1, "refusal")
    # Another call of the session starts meanwhile: this process reads the sessions with a
    # refusal open, this one among them, and keeps what it read from here on.
    other_call = pre_tool_use(refused, tool_input={"command": "git status"})
    assert (await agent.hook(other_call)).json() == {}

    await write(permission_decide, request_id=request.pk, user=reviewer, answer=Answer(allow=True))
    assert await answer(held) == RETRY

    assert decision(await agent.hook(pre_tool_use(refused))) == "allow"
    assert (await agent.hook(pre_tool_use(refused))).json() == {}


async def test_a_process_that_never_heard_of_the_refusal_lets_its_retry_through(
    agent, reviewer, refusals_wanted
):
    refused = load_fixture("permission_denied.json", tool_input=WITH_SECRET)
    await allowed_by(agent, reviewer, refused)

    allow_once.forget()  # as a process that started after the decision

    assert decision(await agent.hook(pre_tool_use(refused))) == "allow"
    allow_once.forget()
    assert (await agent.hook(pre_tool_use(refused))).json() == {}


async def test_only_the_call_refused_is_allowed(agent, reviewer, refusals_wanted):
    refused = load_fixture("permission_denied.json", tool_input=WITH_SECRET)
    await allowed_by(agent, reviewer, refused)

    other_command = {**WITH_SECRET, "command": "curl -X POST https://deploy.example.com/rollback"}
    assert (await agent.hook(pre_tool_use(refused, tool_input=other_command))).json() == {}
    other_session = pre_tool_use(refused, session_id="0c6f3a2e-another-session-of-dana")
    assert (await agent.hook(other_session)).json() == {}

    assert decision(await agent.hook(pre_tool_use(refused))) == "allow"


async def test_an_allowance_not_used_in_time_lets_nothing_through(agent, reviewer, refusals_wanted):
    refused = load_fixture("permission_denied.json", tool_input=WITH_SECRET)
    request = await allowed_by(agent, reviewer, refused)
    too_long_ago = request.decided_at - timedelta(seconds=allow_once.ALLOWED_ONCE_SECONDS + 1)
    await PermissionRequest.objects.filter(pk=request.pk).aupdate(decided_at=too_long_ago)
    allow_once.forget()

    assert (await agent.hook(pre_tool_use(refused))).json() == {}
    assert (await PermissionRequest.objects.aget(pk=request.pk)).once_used_at is None


async def test_a_refusal_a_team_rule_allows_is_retried_once_every_process_knows_it(
    agent, reviewer, refusals_wanted
):
    refused = load_fixture("permission_denied.json", tool_input=WITH_SECRET)
    # An earlier call: this process (as any other) read the sessions with a refusal open
    # before this refusal existed.
    assert (await agent.hook(pre_tool_use(refused, tool_use_id="toolu_earlier"))).json() == {}
    await TeamRule.objects.acreate(rule="Bash(curl *)", behavior=RuleBehavior.ALLOW)

    assert (await agent.hook(refused)).json() == RETRY

    # The answer waited until what every process read is stale: the retry is let through.
    assert decision(await agent.hook(pre_tool_use(refused))) == "allow"
    request = await PermissionRequest.objects.aget()
    assert (request.status, request.rule_id is not None) == (RequestStatus.ALLOWED, True)


def test_a_tool_call_of_a_session_without_a_refusal_open_costs_no_query(
    hook, user, sessions_read_once, django_assert_num_queries
):
    refused = load_fixture("permission_denied.json", tool_input=WITH_SECRET)
    waiting = "0c6f3a2e-a-session-whose-refusal-waits"
    hook(pre_tool_use(refused, tool_use_id="toolu_first"))
    hook(pre_tool_use(refused, session_id=waiting, tool_use_id="toolu_first_there"))
    session = Session.objects.get(session_id=waiting)
    PermissionRequest.objects.create(
        session=session,
        agent=session.agents.get(),
        tool_name="Bash",
        tool_input=WITH_SECRET,
        input_key="refused-and-waiting-in-an-inbox",
        refused_by_auto_mode=True,
    )
    allow_once.forget()
    hook(pre_tool_use(refused, tool_use_id="toolu_reads_the_sessions"))

    def record(payload: dict) -> dict:
        return hooks.step_record(
            owner=user,
            hook=HookInput.model_validate(payload),
            step=hooks.hook_step(payload),
            tool_name=payload["tool_name"],
            tool_input=payload["tool_input"],
        ).value.output

    with transaction.atomic(), django_assert_num_queries(0):
        assert record(pre_tool_use(refused, tool_use_id="toolu_quiet")) == {}
    # The session whose refusal waits: its agent is locked and its allowance looked for.
    with transaction.atomic(), django_assert_num_queries(2):
        assert record(pre_tool_use(refused, session_id=waiting, tool_use_id="toolu_there")) == {}


async def test_a_refusal_kept_refused_leaves_the_agent_refused(agent, reviewer):
    await InboxChoice.objects.acreate(user=reviewer, auto_mode_refusals=True)
    refused = load_fixture("permission_denied.json", tool_input=WITH_SECRET)
    held = agent.hold(refused)
    request = await agent.pending(PermissionRequest, held, 1, "refusal")

    await write(
        permission_decide,
        request_id=request.pk,
        user=reviewer,
        answer=Answer(allow=False, message="Kept refused from the inbox."),
    )

    assert await answer(held) == {}
    assert (await agent.hook(pre_tool_use(refused))).json() == {}


async def test_the_inbox_shows_a_refusal_with_allow_once(agent, reviewer, client):
    await InboxChoice.objects.acreate(user=reviewer, auto_mode_refusals=True)
    held = agent.hold(load_fixture("permission_denied.json", tool_input=WITH_SECRET))
    await agent.pending(PermissionRequest, held, 1, "refusal")

    await sync_to_async(client.force_login)(reviewer)
    page = (await sync_to_async(client.get)("/inbox/")).content.decode()

    assert "auto mode refused:" in page
    assert "Allow once" in page and "Keep refused" in page
    assert "Always…" not in page
    held.cancel()
    await asyncio.gather(held, return_exceptions=True)


def test_the_setting_is_off_until_a_person_turns_it_on(client, reviewer):
    client.force_login(reviewer)
    assert "Refusals by auto mode in your inbox: <strong>off</strong>" in (
        client.get("/settings/").content.decode()
    )

    client.post("/settings/inbox/", {"auto_mode_refusals": "on"})

    assert InboxChoice.objects.get(user=reviewer).auto_mode_refusals
    assert "<strong>on</strong>" in client.get("/settings/").content.decode()
    assert client.post("/settings/inbox/", {"auto_mode_refusals": "maybe"}).status_code == 400
    assert InboxChoice.objects.get(user=reviewer).auto_mode_refusals
