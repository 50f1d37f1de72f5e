"""Codex's PermissionRequest on the inbox, answered with only the fields Codex accepts."""

from __future__ import annotations

import asyncio

import pytest
from django.contrib.auth.models import User

from dashboard.core.writer import write
from dashboard.models import Session
from planmode.models import PermissionRequest, TeamRule
from planmode.permissions import Answer, permission_decide
from tests.codex.conftest import SESSION_ID, CodexHooks, load_fixture, plan_update
from tests.hooks.conftest import answer
from todos.models import Continuation, EnforcerEvent

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("sync_thread_connections_closed"),
]

# Codex 0.169.0 fails closed on any other field of the decision (updatedInput,
# updatedPermissions, interrupt), so none may ever be sent.
ACCEPTED = {"behavior", "message"}


async def waiting(codex: CodexHooks, task: asyncio.Task) -> PermissionRequest:
    return await codex.pending(PermissionRequest, task, 1, "request")


async def decide(request: PermissionRequest, user: User, **answer_fields):
    return await write(
        permission_decide, request_id=request.pk, user=user, answer=Answer(**answer_fields)
    )


def decision_of(output: dict) -> dict:
    assert set(output) == {"hookSpecificOutput"}
    assert set(output["hookSpecificOutput"]) == {"hookEventName", "decision"}
    assert output["hookSpecificOutput"]["hookEventName"] == "PermissionRequest"
    decision = output["hookSpecificOutput"]["decision"]
    assert set(decision) <= ACCEPTED
    return decision


async def test_a_command_waits_on_the_inbox_and_allow_is_a_bare_allow(codex, reviewer):
    payload = load_fixture("permission_request_bash.json")
    held = codex.hold(payload)
    request = await waiting(codex, held)
    assert request.tool_name == "Bash"
    assert request.tool_input == payload["tool_input"]
    assert request.suggestions == []
    session = await Session.objects.aget(session_id=SESSION_ID)
    assert session.client == "codex"

    await decide(request, reviewer, allow=True)

    assert decision_of(await answer(held)) == {"behavior": "allow"}


async def test_allow_always_is_answered_as_an_allow_codex_keeps_no_rules(codex, reviewer):
    held = codex.hold(load_fixture("permission_request_bash.json"))
    request = await waiting(codex, held)

    await decide(request, reviewer, allow=True, remember="custom", pattern="npm install:*")

    assert decision_of(await answer(held)) == {"behavior": "allow"}


async def test_a_denial_hands_the_model_the_reviewers_message(codex, reviewer):
    held = codex.hold(load_fixture("permission_request_bash.json"))
    request = await waiting(codex, held)

    await decide(request, reviewer, allow=False, message="Use the vendored copy instead.")

    decision = decision_of(await answer(held))
    assert decision["behavior"] == "deny"
    assert decision["message"].startswith("The reviewer denied this Bash call on Agentboard")
    assert decision["message"].endswith("Their message:\nUse the vendored copy instead.")


async def test_deny_and_stop_asks_the_model_to_stop_and_is_not_told_twice(codex, reviewer):
    held = codex.hold(load_fixture("permission_request_bash.json"))
    request = await waiting(codex, held)

    await decide(request, reviewer, allow=False, interrupt=True, message="Wait for the freeze.")

    decision = decision_of(await answer(held))
    assert decision["behavior"] == "deny"
    assert "asked you to stop" in decision["message"]
    assert decision["message"].endswith("Their message:\nWait for the freeze.")
    # The model read the message with the denial: the next prompt does not repeat it.
    response = await codex.hook(load_fixture("user_prompt_submit.json"))
    assert response.json() == {}


async def test_after_deny_and_stop_the_enforcer_lets_the_agent_stop(codex, reviewer, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 0.2
    await codex.hook(plan_update(("Store the theme", "in_progress")))
    held = codex.hold(load_fixture("permission_request_bash.json"))
    request = await waiting(codex, held)
    await decide(request, reviewer, allow=False, interrupt=True, message="Stop for now.")
    await answer(held)

    # The model ends its turn as asked: no continuation brings it back.
    assert (await codex.hook(load_fixture("stop.json"))).json() == {}
    assert not await Continuation.objects.aexists()
    said = await EnforcerEvent.objects.aget()
    assert said.text == "Let it stop: a reviewer denied its command and asked it to stop."

    # A new prompt starts a new turn: its Stop with the step still open is continued again.
    await codex.hook(load_fixture("user_prompt_submit.json"))
    stopped = (await codex.hook(load_fixture("stop.json"))).json()
    assert stopped["decision"] == "block"


async def test_a_team_rule_answers_at_once(codex, reviewer):
    await TeamRule.objects.acreate(
        rule="Bash(npm install:*)", behavior="deny", project="", created_by=reviewer
    )

    response = await codex.hook(load_fixture("permission_request_bash.json"))

    decision = decision_of(response.json())
    assert decision["behavior"] == "deny"
    assert "team rule" in decision["message"]


async def test_nobody_deciding_in_time_lets_codex_ask_in_its_terminal(codex, settings):
    settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS = 0.2

    response = await codex.hook(load_fixture("permission_request_bash.json"))

    assert response.json() == {}
    request = await PermissionRequest.objects.aget()
    assert request.status == "expired"
