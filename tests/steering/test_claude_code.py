"""Steering a Claude Code agent through its own hooks (the in-process server, real endpoints):
a message reaches the model once on the next hook that can carry it, a stop ends the turn, a
pause holds the tool call until a resume."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from dashboard.models import Agent, AuditAction, AuditEntry
from dashboard.steering import services
from dashboard.steering.models import Directive, Pause
from tests.hooks.conftest import SESSION_ID, HookClient, load_fixture

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("sync_thread_connections_closed"),
]

WAIT = 10


def pre_tool_use(n: int, **changes) -> dict:
    payload = load_fixture("post_tool_use_todowrite.json")
    payload.pop("tool_response", None)
    return payload | {
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"pytest tests/test_{n}.py"},
        "tool_use_id": f"toolu_steer_{n:03d}",
        **changes,
    }


def post_tool_use(n: int) -> dict:
    payload = pre_tool_use(n, hook_event_name="PostToolUse")
    payload["tool_response"] = {"stdout": "3 passed", "stderr": "", "interrupted": False}
    return payload


@pytest.fixture
def agent(token) -> HookClient:
    return HookClient(token)


@pytest.fixture
def lead(reviewer):
    return reviewer


async def running(agent: HookClient) -> Agent:
    """The session's main agent, once a first tool call made it known."""
    response = await agent.hook(pre_tool_use(0))
    assert response.status_code == 200 and response.json() == {}
    return await Agent.objects.select_related("session").aget(agent_id=SESSION_ID)


async def act(func, **kwargs):
    """A service as the board's views call it: through the writer."""
    from dashboard.core.writer import write

    return await write(func, **kwargs)


def target() -> services.Target:
    return services.Target(SESSION_ID, SESSION_ID)


async def test_a_message_reaches_the_model_once_on_the_next_hook_that_can_carry_it(agent, lead):
    await running(agent)
    await act(services.message_send, user=lead, target=target(), text="Use the staging DB.")

    # A tool call starting cannot carry context: the message waits for the call's end.
    assert (await agent.hook(pre_tool_use(1))).json() == {}
    carried = (await agent.hook(post_tool_use(1))).json()
    context = carried["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("Message from lead, who oversees this session on Agentboard:")
    assert "Use the staging DB." in context
    # Once only.
    again = (await agent.hook(post_tool_use(2))).json()
    assert "Use the staging DB." not in str(again)

    directive = await Directive.objects.aget()
    assert directive.state == "delivered"
    assert directive.delivered_via == "PostToolUse (Claude Code)"
    assert directive.delivered_at is not None
    entry = await AuditEntry.objects.aget(action=AuditAction.AGENT_MESSAGED)
    assert entry.actor_name == "lead" and "Use the staging DB." in entry.summary


async def test_a_message_is_redacted_before_it_is_stored_or_sent(agent, lead):
    await running(agent)
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    await act(services.message_send, user=lead, target=target(), text=f"Rotate {secret} today.")

    carried = (await agent.hook(post_tool_use(1))).json()
    assert secret not in str(carried)
    assert secret not in (await Directive.objects.aget()).text


async def test_a_message_to_an_agent_that_is_stopping_continues_it(agent, lead):
    await running(agent)
    await act(services.message_send, user=lead, target=target(), text="Also update CHANGELOG.md.")

    answer = (await agent.hook(load_fixture("stop.json", stop_hook_active=False))).json()

    assert answer["decision"] == "block"
    assert "Also update CHANGELOG.md." in answer["reason"]
    # Not the enforcer's doing: no continuation was counted.
    from todos.models import Continuation

    assert await Continuation.objects.acount() == 0


async def test_a_prompt_the_developer_types_carries_the_message(agent, lead):
    await running(agent)
    await act(services.message_send, user=lead, target=target(), text="Skip the e2e suite.")

    answer = (await agent.hook(load_fixture("user_prompt_submit.json"))).json()

    assert "Skip the e2e suite." in answer["hookSpecificOutput"]["additionalContext"]


async def test_a_stop_ends_the_turn_at_the_next_tool_call_with_the_reason(agent, lead):
    await running(agent)
    await act(services.stop_send, user=lead, target=target(), reason="Runaway loop.")

    answer = (await agent.hook(pre_tool_use(1))).json()

    # The call itself is refused too: Claude Code runs it before stopping otherwise.
    assert answer == {
        "continue": False,
        "stopReason": "Stopped by lead from Agentboard: Runaway loop.",
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Stopped by lead from Agentboard: Runaway loop.",
        },
    }
    # A model that tries another call in the same turn is refused the same way.
    assert (await agent.hook(pre_tool_use(2))).json() == answer
    # The developer's next prompt runs normally.
    assert (await agent.hook(load_fixture("user_prompt_submit.json"))).json() == {}
    assert (await agent.hook(pre_tool_use(3))).json() == {}
    directive = await Directive.objects.aget()
    assert directive.delivered_via == "PreToolUse (Claude Code)"
    assert directive.turn_ended_at is not None


async def test_a_stop_holds_until_the_agent_stops_and_the_enforcer_lets_it(agent, lead):
    await running(agent)
    # Unfinished tasks: the enforcer would continue an agent that stops on its own.
    assert (await agent.hook(load_fixture("post_tool_use_todowrite.json"))).status_code == 200
    await act(services.stop_send, user=lead, target=target(), reason="Enough.")
    assert (await agent.hook(pre_tool_use(1))).json()["continue"] is False

    assert (await agent.hook(load_fixture("stop.json", stop_hook_active=False))).json() == {}

    services.forget()
    assert (await agent.hook(pre_tool_use(2))).json() == {}


async def test_a_paused_call_is_held_until_a_resume_then_runs(agent, lead):
    await running(agent)
    await act(services.pause, user=lead, target=target(), reason="Deploy freeze.")
    services.forget()

    held = agent.hold(pre_tool_use(1))
    await asyncio.sleep(0.5)
    assert not held.done()
    await act(services.resume, user=lead, target=target())

    response = await asyncio.wait_for(held, WAIT)
    assert response.status_code == 200 and response.json() == {}
    pause = await Pause.objects.aget()
    assert pause.resumed_at is not None and pause.resumed_by_name == "lead"


async def test_a_paused_call_is_refused_with_who_and_why_when_its_hook_can_wait_no_longer(
    agent, lead
):
    await running(agent)
    await act(services.pause, user=lead, target=target(), reason="Deploy freeze.")
    services.forget()

    response = await agent.agent.post(
        "/hooks/claude-code",
        pre_tool_use(1),
        content_type="application/json",
        headers={"Authorization": f"Bearer {agent.token}", "X-Agentboard-Hook-Timeout": "3"},
    )

    output = response.json()["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert output["permissionDecisionReason"] == (
        "Paused by lead: Deploy freeze.; wait for a resume before going on."
    )


async def test_a_stopping_paused_agent_is_not_continued_by_the_enforcer(agent, lead, user):
    await running(agent)
    todo = load_fixture("post_tool_use_todowrite.json")
    assert (await agent.hook(todo)).status_code == 200
    await act(services.pause, user=lead, target=target(), reason="Hold on.")
    services.forget()

    answer = (await agent.hook(load_fixture("stop.json", stop_hook_active=False))).json()

    assert answer == {}


async def test_what_is_queued_for_an_ended_session_is_marked_not_delivered(agent, lead):
    await running(agent)
    await act(services.message_send, user=lead, target=target(), text="Check the logs.")

    assert (await agent.hook(load_fixture("session_end.json"))).status_code == 200

    directive = await Directive.objects.aget()
    assert (directive.state, directive.delivered_via) == ("undelivered", "the session ended")


async def test_nobody_else_may_steer_and_bad_text_queues_nothing(agent, lead, other_user):
    await running(agent)
    refused = []
    for user, text in [
        (other_user, "Hi."),
        (lead, ""),
        (lead, "x" * 4_001),
        (lead, "bell\x07"),
        (lead, "lone \ud800 surrogate"),
    ]:
        try:
            await act(services.message_send, user=user, target=target(), text=text)
        except Exception as error:
            refused.append((error.status, error.message))
    # Eve sees the session (it belongs to no team) but neither reviews it nor owns it.
    assert [status for status, _ in refused] == [403, 422, 422, 422, 422]
    assert refused[0][1] == (
        "Only the session's reviewers and its owner can message, pause or stop its agents."
    )
    assert refused[1][1] == "Write the message first; an empty one is not sent."
    assert await Directive.objects.acount() == 0


async def test_a_message_to_a_whole_session_reaches_each_of_its_running_agents(agent, lead):
    await running(agent)
    sub = load_fixture("subagent_start.json")
    assert (await agent.hook(sub)).status_code == 200

    steered = await act(
        services.message_send, user=lead, target=services.Target(SESSION_ID), text="Wrap up."
    )

    assert steered.agents == 2
    assert await Directive.objects.acount() == 2


@pytest.fixture
def other_user(db):
    from django.contrib.auth.models import User

    return User.objects.create_user("eve", password="a-long-password-7")


async def test_the_api_lets_a_reviewers_token_steer_and_an_owner_read_its_queue(agent, lead, token):
    await running(agent)
    reviewer_token = await sync_to_async(_token_of)(lead)
    api = TokenClient(reviewer_token)
    base = f"/api/v1/sessions/{SESSION_ID}/agents/{SESSION_ID}"

    sent = await api.post(f"{base}/messages", {"text": "Rebase first."}, "application/json")
    assert sent.status_code == 201, sent.content
    assert sent.json() == {"agents": 1, "unchanged": 0}
    peeked = await api.get(f"{base}/messages")
    assert [m["text"] for m in peeked.json()["messages"]] == ["Rebase first."]

    owner = TokenClient(token)
    taken = await owner.get(f"{base}/messages")
    assert [m["sent_by"] for m in taken.json()["messages"]] == ["lead"]
    assert (await owner.get(f"{base}/messages")).json() == {"messages": []}

    paused = await api.post(f"{base}/pause", {"reason": "Incident."}, "application/json")
    assert paused.json() == {"agents": 1, "unchanged": 0}
    again = await api.post(f"{base}/pause", {"reason": "Incident."}, "application/json")
    assert again.json() == {"agents": 0, "unchanged": 1}
    assert (await api.post(f"{base}/resume")).json() == {"agents": 1, "unchanged": 0}
    nothing = await api.post(f"{base}/resume")
    assert nothing.status_code == 409
    assert nothing.json()["error"]["message"] == (
        "Nothing there is paused, so nothing was resumed."
    )
    empty = await api.post(f"{base}/messages", {"text": "  "}, "application/json")
    assert empty.status_code == 422
    unknown = await api.post(
        f"/api/v1/sessions/{SESSION_ID}/agents/nope/stop", {}, "application/json"
    )
    assert unknown.status_code == 404


async def test_an_owners_read_retried_with_its_claim_name_gets_what_the_lost_answer_carried(
    agent, lead, token
):
    await running(agent)
    api = TokenClient(await sync_to_async(_token_of)(lead))
    owner = TokenClient(token)
    base = f"/api/v1/sessions/{SESSION_ID}/agents/{SESSION_ID}"
    await api.post(f"{base}/messages", {"text": "Rebase first."})
    first = await owner.get(f"{base}/messages?claim=read-1")
    await api.post(f"{base}/messages", {"text": "Then push."})

    retried = await owner.get(f"{base}/messages?claim=read-1")

    assert [m["text"] for m in first.json()["messages"]] == ["Rebase first."]
    assert [m["text"] for m in retried.json()["messages"]] == ["Rebase first.", "Then push."]
    assert (await owner.get(f"{base}/messages?claim=read-2")).json() == {"messages": []}
    hostile = await owner.get(f"{base}/messages?claim=%3Cscript%3E")
    assert hostile.status_code == 422
    assert hostile.json()["error"]["message"]


class TokenClient:
    """The agent API as a token's holder calls it."""

    def __init__(self, token: str) -> None:
        self.client = AsyncClient()
        self.headers = {"Authorization": f"Bearer {token}"}

    async def get(self, path: str):
        return await self.client.get(path, headers=self.headers)

    async def post(self, path: str, data: dict | None = None, content_type: str = ""):
        return await self.client.post(
            path, data or {}, content_type="application/json", headers=self.headers
        )


def _token_of(user) -> str:
    from dashboard.models import AgentToken

    return AgentToken.issue(owner=user, label="reviewer")[1]


async def test_a_message_queued_beside_a_stop_waits_for_the_next_turn(agent, lead):
    await running(agent)
    await act(services.message_send, user=lead, target=target(), text="Then rebase on main.")
    await act(services.stop_send, user=lead, target=target(), reason="Hold it.")

    # The agent stops on its own before any tool call: the stop is delivered, the turn ends.
    assert (await agent.hook(load_fixture("stop.json", stop_hook_active=False))).json() == {}

    services.forget()
    answer = (await agent.hook(load_fixture("user_prompt_submit.json"))).json()
    assert "Then rebase on main." in answer["hookSpecificOutput"]["additionalContext"]
    stop = await Directive.objects.aget(kind="stop")
    assert (stop.state, stop.delivered_via) == ("delivered", "Stop (Claude Code)")
    assert (await agent.hook(pre_tool_use(1))).json() == {}
