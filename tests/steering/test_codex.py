"""Steering a Codex agent through its own hooks (the in-process server, payloads as Codex
0.169.0 sends them): a message reaches the model once as context, a stopping agent is
continued with it, a stop is told and refuses each call until the turn ends (Codex ends no
turn for a hook), a pause holds the call until a resume."""

from __future__ import annotations

import asyncio

import pytest

from dashboard.core.writer import write
from dashboard.models import Agent
from dashboard.steering import services
from dashboard.steering.models import Directive, Pause
from tests.codex.conftest import SESSION_ID, CodexHooks, load_fixture, plan_update
from todos.models import Continuation

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("sync_thread_connections_closed"),
]

WAIT = 10
STOP = "Stopped by lead from Agentboard: Runaway loop."


def pre_tool_use(n: int) -> dict:
    payload = load_fixture("post_tool_use_bash.json", hook_event_name="PreToolUse")
    payload.pop("tool_response")
    return payload | {
        "tool_input": {"command": f"pytest tests/test_{n}.py"},
        "tool_use_id": f"call_{n}",
    }


def post_tool_use(n: int) -> dict:
    return pre_tool_use(n) | {"hook_event_name": "PostToolUse", "tool_response": "3 passed"}


@pytest.fixture
def codex(token) -> CodexHooks:
    return CodexHooks(token)


async def running(codex: CodexHooks) -> Agent:
    assert (await codex.hook(load_fixture("session_start.json"))).json() == {}
    assert (await codex.hook(pre_tool_use(0))).json() == {}
    return await Agent.objects.aget(agent_id=SESSION_ID)


def target() -> services.Target:
    return services.Target(SESSION_ID, SESSION_ID)


async def test_a_message_is_context_on_the_next_post_tool_use_once(codex, reviewer):
    await running(codex)
    await write(services.message_send, user=reviewer, target=target(), text="Use staging.")

    assert (await codex.hook(pre_tool_use(1))).json() == {}
    carried = (await codex.hook(post_tool_use(1))).json()

    assert carried["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert carried["hookSpecificOutput"]["additionalContext"] == (
        "Message from lead, who oversees this session on Agentboard:\nUse staging."
    )
    assert "Use staging." not in str((await codex.hook(post_tool_use(2))).json())
    directive = await Directive.objects.aget()
    assert (directive.state, directive.delivered_via) == ("delivered", "PostToolUse (Codex)")


async def test_a_prompt_carries_the_message(codex, reviewer):
    await running(codex)
    await write(services.message_send, user=reviewer, target=target(), text="Skip e2e.")

    answer = (await codex.hook(load_fixture("user_prompt_submit.json"))).json()

    assert "Skip e2e." in answer["hookSpecificOutput"]["additionalContext"]


async def test_a_stopping_agent_is_continued_with_the_message_not_by_the_enforcer(codex, reviewer):
    await running(codex)
    assert (await codex.hook(plan_update(("Ship it", "in_progress")))).status_code == 200
    await write(services.message_send, user=reviewer, target=target(), text="Update CHANGELOG.")

    answer = (await codex.hook(load_fixture("stop.json"))).json()

    assert answer == {
        "decision": "block",
        "reason": "Message from lead, who oversees this session on Agentboard:\nUpdate CHANGELOG.",
    }
    assert await Continuation.objects.acount() == 0


async def test_a_stop_refuses_the_next_call_and_every_one_after_until_the_turn_ends(
    codex, reviewer
):
    await running(codex)
    await write(services.stop_send, user=reviewer, target=target(), reason="Runaway loop.")

    for n in (1, 2):
        refused = (await codex.hook(pre_tool_use(n))).json()["hookSpecificOutput"]
        # Codex puts its own full stop after the reason.
        assert refused["permissionDecision"] == "deny"
        assert refused["permissionDecisionReason"] == STOP.removesuffix(".")
    assert (await Directive.objects.aget()).state == "queued"

    assert (await codex.hook(load_fixture("stop.json"))).json() == {}
    directive = await Directive.objects.aget()
    assert (directive.state, directive.delivered_via) == ("delivered", "Stop (Codex)")
    # The developer's next prompt runs normally.
    assert (await codex.hook(load_fixture("user_prompt_submit.json"))).json() == {}
    assert (await codex.hook(pre_tool_use(3))).json() == {}


async def test_a_stop_whose_turn_ended_without_a_stop_hook_leaves_the_next_prompt_alone(
    codex, reviewer
):
    """The developer interrupted the turn (no Stop hook): the stop is not carried into the
    turn their next prompt starts, and the board says why it was not delivered."""
    await running(codex)
    await write(services.stop_send, user=reviewer, target=target(), reason="Runaway loop.")
    assert (await codex.hook(pre_tool_use(1))).json()["hookSpecificOutput"]["permissionDecision"]

    assert (await codex.hook(load_fixture("user_prompt_submit.json"))).json() == {}
    assert (await codex.hook(pre_tool_use(2))).json() == {}
    assert "Runaway" not in str((await codex.hook(post_tool_use(2))).json())
    directive = await Directive.objects.aget()
    assert (directive.state, directive.delivered_via) == ("undelivered", "the turn ended first")


async def test_a_stop_sent_while_a_command_runs_is_told_with_its_result(codex, reviewer):
    await running(codex)
    await codex.hook(pre_tool_use(1))
    await write(services.stop_send, user=reviewer, target=target(), reason="Runaway loop.")

    answer = (await codex.hook(post_tool_use(1))).json()

    assert answer == {
        "continue": False,
        "stopReason": STOP,
        "reason": f"{STOP} End your turn now and wait for the user.",
    }


async def test_a_paused_call_is_held_until_a_resume_then_runs(codex, reviewer):
    await running(codex)
    await write(services.pause, user=reviewer, target=target(), reason="Deploy freeze.")
    services.forget()

    held = codex.hold(pre_tool_use(1))
    await asyncio.sleep(0.5)
    assert not held.done()
    await write(services.resume, user=reviewer, target=target())

    response = await asyncio.wait_for(held, WAIT)
    assert response.status_code == 200 and response.json() == {}
    assert (await Pause.objects.aget()).resumed_at is not None


async def test_a_paused_call_is_refused_with_who_and_why_when_its_hook_can_wait_no_longer(
    codex, reviewer
):
    await running(codex)
    await write(services.pause, user=reviewer, target=target(), reason="Deploy freeze")
    services.forget()

    response = await codex.agent.post(
        "/hooks/codex",
        pre_tool_use(1),
        content_type="application/json",
        headers={"Authorization": f"Bearer {codex.token}", "X-Agentboard-Hook-Timeout": "3"},
    )

    refused = response.json()["hookSpecificOutput"]
    assert refused["permissionDecision"] == "deny"
    assert refused["permissionDecisionReason"] == (
        "Paused by lead: Deploy freeze; wait for a resume before going on"
    )


async def test_a_stopping_paused_agent_is_not_continued_by_the_enforcer(codex, reviewer):
    await running(codex)
    assert (await codex.hook(plan_update(("Ship it", "in_progress")))).status_code == 200
    await write(services.pause, user=reviewer, target=target(), reason="Hold on.")
    services.forget()

    assert (await codex.hook(load_fixture("stop.json"))).json() == {}
    assert await Continuation.objects.acount() == 0
