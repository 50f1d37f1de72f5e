"""Steering a Gemini CLI agent through its own hooks (the in-process server, payloads as
Gemini CLI 0.61.0 sends them): a message reaches the model once as context, a stopping agent
is continued with it, a stop ends the agent's loop, a pause holds the call until a resume."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path

import pytest

from dashboard.core.writer import write
from dashboard.models import Agent, Client, Session
from dashboard.steering import services
from dashboard.steering.models import Directive
from tests.hooks.conftest import HookClient
from todos.models import Continuation

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("sync_thread_connections_closed"),
]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gemini"
SESSION_ID = "3f1c1a52-7a47-4c39-9d1b-1d0c2a5f3e11"
WAIT = 10
STOP = "Stopped by lead from Agentboard: Runaway loop."


def load_fixture(name: str, **changes) -> dict:
    return copy.deepcopy(json.loads((FIXTURES / name).read_text())) | changes


def before_tool(command: str = "npm test") -> dict:
    payload = load_fixture("before_tool_shell.json")
    payload["tool_input"]["command"] = command
    return payload


def after_tool(command: str = "npm test") -> dict:
    payload = load_fixture("after_tool_shell.json")
    payload["tool_input"]["command"] = command
    return payload


def todos_written(*items: tuple[str, str]) -> dict:
    return load_fixture(
        "after_tool_shell.json",
        tool_name="write_todos",
        tool_input={"todos": [{"description": d, "status": s} for d, s in items]},
        tool_response={"llmContent": "Successfully updated the todo list.", "returnDisplay": ""},
    )


class GeminiHooks(HookClient):
    async def hook(self, payload: dict):
        return await self.agent.post(
            "/hooks/gemini",
            payload,
            content_type="application/json",
            headers={"Authorization": f"Bearer {self.token}"},
        )


@pytest.fixture
def gemini(token) -> GeminiHooks:
    return GeminiHooks(token)


async def running(gemini: GeminiHooks) -> Agent:
    assert (await gemini.hook(load_fixture("session_start.json"))).status_code == 200
    assert (await gemini.hook(before_tool("ls"))).json() == {}
    assert (await gemini.hook(after_tool("ls"))).status_code == 200
    session = await Session.objects.aget(session_id=SESSION_ID)
    assert session.client == Client.GEMINI
    return await Agent.objects.aget(agent_id=SESSION_ID)


def target() -> services.Target:
    return services.Target(SESSION_ID, SESSION_ID)


async def test_a_message_is_context_on_the_next_after_tool_once(gemini, reviewer):
    await running(gemini)
    await write(services.message_send, user=reviewer, target=target(), text="Use staging.")

    assert (await gemini.hook(before_tool())).json() == {}
    carried = (await gemini.hook(after_tool())).json()

    assert carried == {
        "hookSpecificOutput": {
            "hookEventName": "AfterTool",
            "additionalContext": (
                "Message from lead, who oversees this session on Agentboard:\nUse staging."
            ),
        }
    }
    assert "Use staging." not in str((await gemini.hook(after_tool("ls -a"))).json())
    directive = await Directive.objects.aget()
    assert (directive.state, directive.delivered_via) == ("delivered", "PostToolUse (Gemini CLI)")


async def test_a_prompt_carries_the_message(gemini, reviewer):
    await running(gemini)
    await write(services.message_send, user=reviewer, target=target(), text="Skip e2e.")

    answer = (await gemini.hook(load_fixture("before_agent.json"))).json()

    assert answer["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "Skip e2e." in answer["hookSpecificOutput"]["additionalContext"]


async def test_a_stopping_agent_is_continued_with_the_message_not_by_the_enforcer(gemini, reviewer):
    await running(gemini)
    assert (await gemini.hook(todos_written(("Ship it", "in_progress")))).status_code == 200
    await write(services.message_send, user=reviewer, target=target(), text="Update CHANGELOG.")

    answer = (await gemini.hook(load_fixture("after_agent.json"))).json()

    assert answer == {
        "decision": "block",
        "reason": "Message from lead, who oversees this session on Agentboard:\nUpdate CHANGELOG.",
    }
    assert await Continuation.objects.acount() == 0


async def test_a_stop_ends_the_loop_at_the_next_tool_call_and_the_next_prompt_runs(
    gemini, reviewer
):
    await running(gemini)
    await write(services.stop_send, user=reviewer, target=target(), reason="Runaway loop.")

    assert (await gemini.hook(before_tool())).json() == {"continue": False, "stopReason": STOP}
    directive = await Directive.objects.aget()
    assert (directive.state, directive.delivered_via) == ("delivered", "PreToolUse (Gemini CLI)")
    assert (await gemini.hook(load_fixture("before_agent.json"))).json() == {}
    assert (await gemini.hook(before_tool("npm run lint"))).json() == {}


async def test_a_stop_sent_while_a_command_runs_ends_the_loop_with_its_result(gemini, reviewer):
    await running(gemini)
    assert (await gemini.hook(before_tool())).json() == {}
    await write(services.stop_send, user=reviewer, target=target(), reason="Runaway loop.")

    assert (await gemini.hook(after_tool())).json() == {"continue": False, "stopReason": STOP}


async def test_a_paused_call_is_held_until_a_resume_then_runs(gemini, reviewer):
    await running(gemini)
    await write(services.pause, user=reviewer, target=target(), reason="Deploy freeze.")
    services.forget()

    held = gemini.hold(before_tool())
    await asyncio.sleep(0.5)
    assert not held.done()
    await write(services.resume, user=reviewer, target=target())

    response = await asyncio.wait_for(held, WAIT)
    assert response.status_code == 200 and response.json() == {}


async def test_a_paused_call_is_refused_with_who_and_why_when_its_hook_can_wait_no_longer(
    gemini, reviewer
):
    await running(gemini)
    await write(services.pause, user=reviewer, target=target(), reason="Deploy freeze.")
    services.forget()

    response = await gemini.agent.post(
        "/hooks/gemini",
        before_tool(),
        content_type="application/json",
        headers={"Authorization": f"Bearer {gemini.token}", "X-Agentboard-Hook-Timeout": "3"},
    )

    assert response.json() == {
        "decision": "deny",
        "reason": "Paused by lead: Deploy freeze.; wait for a resume before going on.",
    }


async def test_a_stopping_paused_agent_is_not_continued_by_the_enforcer(gemini, reviewer):
    await running(gemini)
    assert (await gemini.hook(todos_written(("Ship it", "in_progress")))).status_code == 200
    await write(services.pause, user=reviewer, target=target(), reason="Hold on.")
    services.forget()

    assert (await gemini.hook(load_fixture("after_agent.json"))).json() == {}
    assert await Continuation.objects.acount() == 0
