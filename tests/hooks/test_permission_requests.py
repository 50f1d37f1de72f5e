"""Any tool's PermissionRequest, held until someone answers on the board, a team rule answers,
the developer answers in the terminal, or the wait runs out."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from dashboard.core.errors import ServiceError
from dashboard.core.writer import write
from dashboard.live.watch import watch_for
from dashboard.models import Agent, Session
from planmode.models import PermissionDecision, PermissionRequest, TeamRule, TerminalWait
from planmode.permissions import Answer, permission_decide
from tests.hooks.conftest import (
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


class Agent_(HookClient):
    """Claude Code's hooks against the in-process server."""

    async def waiting(
        self, task: asyncio.Task, count: int = 1, wait: float = WAIT
    ) -> PermissionRequest:
        return await self.pending(PermissionRequest, task, count, "request", wait)


@pytest.fixture
def agent(token) -> Agent_:
    return Agent_(token)


async def decide(request: PermissionRequest, user: User, **answer_fields):
    return await write(
        permission_decide, request_id=request.pk, user=user, answer=Answer(**answer_fields)
    )


def decision_of(output: dict) -> dict:
    assert output["hookSpecificOutput"]["hookEventName"] == "PermissionRequest"
    return output["hookSpecificOutput"]["decision"]


# --- held and answered ------------------------------------------------------------------------


async def test_a_bash_request_waits_and_allow_once_echoes_the_input(agent, reviewer):
    payload = load_fixture("permission_request_bash.json")
    held = agent.hold(payload)
    request = await agent.waiting(held)
    assert request.tool_name == "Bash"
    assert request.tool_input == payload["tool_input"]
    assert request.suggestions == payload["permission_suggestions"]

    await decide(request, reviewer, allow=True)

    assert decision_of(await answer(held)) == {
        "behavior": "allow",
        "updatedInput": payload["tool_input"],
    }
    await request.arefresh_from_db()
    assert request.status == "allowed"


async def test_a_denial_hands_the_model_the_reviewers_message(agent, reviewer):
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)

    await decide(request, reviewer, allow=False, message="Run only the changed test file.")

    decision = decision_of(await answer(held))
    assert decision["behavior"] == "deny"
    assert "interrupt" not in decision
    assert decision["message"].startswith("The reviewer denied this Bash call on Agentboard")
    assert decision["message"].endswith("Their message:\nRun only the changed test file.")


async def test_deny_and_stop_interrupts_the_agent(agent, reviewer):
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)

    await decide(request, reviewer, allow=False, interrupt=True)

    decision = decision_of(await answer(held))
    assert decision["behavior"] == "deny"
    assert decision["interrupt"] is True
    assert "stopped you" in decision["message"]


async def test_deny_and_stop_hands_the_message_over_with_the_next_prompt_once(agent, reviewer):
    """Claude Code drops the message of a denial that interrupts (the model reads its own
    refusal): the reviewer's words come with the session's next prompt instead, once."""
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)
    await decide(request, reviewer, allow=False, interrupt=True, message="Wait for the freeze.")
    await answer(held)

    response = await agent.hook(load_fixture("user_prompt_submit.json"))

    assert response.status_code == 200
    output = response.json()["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    context = output["additionalContext"]
    assert "denied your Bash call (npm run test -- --watch=false) and stopped you" in context
    assert context.endswith("Their message, which you have not seen yet:\nWait for the freeze.")
    await request.arefresh_from_db()
    assert request.message_told_at is not None
    again = await agent.hook(load_fixture("user_prompt_submit.json"))
    assert "Wait for the freeze." not in again.content.decode()


@pytest.mark.parametrize(
    "answer_fields",
    [
        pytest.param({"interrupt": True}, id="deny and stop without a message"),
        pytest.param({"message": "Not now."}, id="deny without stopping"),
    ],
)
async def test_only_an_unread_stop_message_comes_with_the_next_prompt(
    agent, reviewer, answer_fields
):
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)
    await decide(request, reviewer, allow=False, **answer_fields)
    await answer(held)

    response = await agent.hook(load_fixture("user_prompt_submit.json"))

    assert response.status_code == 200
    assert "additionalContext" not in response.content.decode()


async def test_allow_and_remember_a_suggestion_hands_it_back(agent, reviewer):
    payload = load_fixture("permission_request_bash.json")
    held = agent.hold(payload)
    request = await agent.waiting(held)

    await decide(request, reviewer, allow=True, remember="suggestion:0")

    decision = decision_of(await answer(held))
    assert decision["updatedInput"] == payload["tool_input"]
    assert decision["updatedPermissions"] == payload["permission_suggestions"]


async def test_allow_and_remember_an_edited_pattern_for_the_session(agent, reviewer):
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)

    await decide(request, reviewer, allow=True, remember="custom", pattern="npm run test *")

    assert decision_of(await answer(held))["updatedPermissions"] == [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "npm run test *"}],
            "behavior": "allow",
            "destination": "session",
        }
    ]


async def test_allow_and_remember_for_the_project_goes_to_local_settings(agent, reviewer):
    held = agent.hold(load_fixture("permission_request_web_fetch.json"))
    request = await agent.waiting(held)

    await decide(
        request, reviewer, allow=True, remember="custom", pattern="domain:docs.*", where="project"
    )

    [remembered] = decision_of(await answer(held))["updatedPermissions"]
    assert remembered["destination"] == "localSettings"
    assert remembered["rules"] == [{"toolName": "WebFetch", "ruleContent": "domain:docs.*"}]


@pytest.mark.parametrize(
    "fixture",
    [
        "permission_request_edit.json",
        "permission_request_web_fetch.json",
        "permission_request_mcp.json",
    ],
)
async def test_every_tool_is_held_the_same_way(agent, reviewer, fixture):
    payload = load_fixture(fixture)
    held = agent.hold(payload)
    request = await agent.waiting(held)

    await decide(request, reviewer, allow=True)

    assert decision_of(await answer(held))["updatedInput"] == payload["tool_input"]


# --- exactly once, and only by those allowed --------------------------------------------------


async def test_the_second_decision_is_refused_and_says_who_was_first(agent, reviewer, user):
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)
    await decide(request, reviewer, allow=True)

    with pytest.raises(ServiceError) as refused:
        await decide(request, user, allow=False, message="No.")

    assert refused.value.status == 409
    assert refused.value.message.startswith("lead already allowed this request at ")
    await request.arefresh_from_db()
    assert request.status == "allowed"
    assert await PermissionDecision.objects.acount() == 1
    await answer(held)


async def test_someone_else_without_the_review_permission_cannot_answer(agent, other_user, user):
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)

    with pytest.raises(ServiceError) as refused:
        await decide(request, other_user, allow=True)

    assert refused.value.status == 403
    await request.arefresh_from_db()
    assert request.status == "pending"
    # The session's own user may answer their agent, as in their terminal.
    await decide(request, user, allow=True)
    assert decision_of(await answer(held))["behavior"] == "allow"


async def test_a_denial_without_a_message_is_refused(agent, reviewer):
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)

    with pytest.raises(ServiceError) as refused:
        await decide(request, reviewer, allow=False, message="  ")

    assert refused.value.code == "message_required"
    await request.arefresh_from_db()
    assert request.status == "pending"
    held.cancel()


async def test_a_decision_is_recorded_once_and_cannot_be_changed(agent, reviewer):
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)
    await decide(request, reviewer, allow=False, message="Not now.")
    await answer(held)

    decision = await PermissionDecision.objects.select_related("decided_by").aget()
    assert (decision.outcome, decision.decided_by_name, decision.message) == (
        "denied",
        "lead",
        "Not now.",
    )
    decision.message = "Changed"
    with pytest.raises(ValueError):
        await sync_to_async(decision.save)()


# --- waiting ends -----------------------------------------------------------------------------


async def test_nobody_deciding_in_time_answers_nothing_and_expires(agent, settings):
    settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS = 0.3

    assert await answer(agent.hold(load_fixture("permission_request_bash.json"))) == {}

    request = await PermissionRequest.objects.aget()
    assert request.status == "expired"
    with pytest.raises(ServiceError) as late:
        await decide(request, await User.objects.aget(username="dana"), allow=True)
    assert late.value.status == 409
    assert "terminal asked instead" in late.value.message


async def test_an_agent_that_stops_waiting_leaves_no_request_pending(agent):
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)

    held.cancel()
    with pytest.raises(asyncio.CancelledError):
        await held

    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not await PermissionRequest.objects.filter(pk=request.pk, status="expired").aexists():
        assert loop.time() < deadline
        await asyncio.sleep(0.01)


async def test_the_same_request_delivered_twice_waits_on_one_request(agent, reviewer):
    payload = load_fixture("permission_request_bash.json")
    first = agent.hold(payload)
    request = await agent.waiting(first)
    second = agent.hold(payload)
    await asyncio.sleep(0.2)

    await decide(request, reviewer, allow=True)

    for held in (first, second):
        assert decision_of(await answer(held))["behavior"] == "allow"
    assert await PermissionRequest.objects.acount() == 1


async def test_a_held_request_hears_a_decision_whose_push_was_lost(agent, reviewer, settings):
    settings.AGENTBOARD_DECISION_RESYNC_SECONDS = 0.2
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)

    # Decided by "another process" that died before it published: straight to the database.
    def decide_without_push() -> None:
        permission_decide(request_id=request.pk, user=reviewer, answer=Answer(allow=True))

    await sync_to_async(decide_without_push)()

    assert decision_of(await answer(held))["behavior"] == "allow"


async def test_a_stopping_server_lets_held_requests_go(agent):
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)
    watch = watch_for()
    try:
        watch.stop()
        assert await answer(held) == {}
    finally:
        watch.stopping.clear()
    await request.arefresh_from_db()
    assert request.status == "expired"


async def test_hundreds_of_held_requests_cost_no_thread_each(agent, reviewer):
    import threading

    count = 150
    before = threading.active_count()
    held = []
    for n in range(count):
        payload = load_fixture("permission_request_bash.json", session_id=f"sess-{n}")
        held.append(agent.hold(payload))
    # What is measured is threads, not time: 150 new sessions arriving a few at a time take
    # longer than one request's wait on a loaded machine (CI runs two suites side by side).
    await agent.waiting(held[-1], count=count, wait=90)
    assert threading.active_count() <= before + 2

    async for request in PermissionRequest.objects.all():
        await decide(request, reviewer, allow=True)
    for task in held:
        assert decision_of(await answer(task))["behavior"] == "allow"


async def test_a_request_of_another_users_session_is_refused(agent, other_user):
    await Session.objects.acreate(session_id=SESSION_ID, owner=other_user)

    response = await agent.hook(load_fixture("permission_request_bash.json"))

    assert response.status_code == 403
    assert await PermissionRequest.objects.acount() == 0


# --- answered in the terminal -----------------------------------------------------------------


def bash_ran(**changes) -> dict:
    fields = {
        "tool_name": "Bash",
        # The same call as the request: PostToolUse carries its input unchanged.
        "tool_input": load_fixture("permission_request_bash.json")["tool_input"],
        "tool_response": {"stdout": "ok"},
        "tool_use_id": "toolu_after_terminal",
        **changes,
    }
    return load_fixture("post_tool_use_todowrite.json", **fields)


@pytest.mark.parametrize(
    "moved_on",
    [
        pytest.param(bash_ran(), id="the tool ran"),
        pytest.param(load_fixture("user_prompt_submit.json"), id="a prompt"),
        pytest.param(load_fixture("stop.json"), id="Stop"),
    ],
)
async def test_an_agent_that_moved_on_answered_in_the_terminal(agent, reviewer, moved_on):
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)

    assert (await agent.hook(moved_on)).status_code == 200

    assert await answer(held) == {}
    await request.arefresh_from_db()
    assert request.status == "answered_in_terminal"
    with pytest.raises(ServiceError) as late:
        await decide(request, reviewer, allow=True)
    assert late.value.status == 409
    assert "answered in the agent's terminal" in late.value.message
    await request.arefresh_from_db()
    assert request.status == "answered_in_terminal"


async def test_another_agents_step_leaves_the_request_waiting(agent, reviewer):
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)

    await agent.hook(bash_ran(agent_id=SUBAGENT_ID, agent_type="Explore"))
    await agent.hook(load_fixture("notification_idle.json", message="Claude needs permission"))

    await asyncio.sleep(0.2)
    assert not held.done()
    await decide(request, reviewer, allow=True)
    assert decision_of(await answer(held))["behavior"] == "allow"


# --- team rules -------------------------------------------------------------------------------


async def test_a_matching_allow_rule_answers_at_once_and_is_recorded(agent, reviewer):
    rule = await TeamRule.objects.acreate(rule="Bash(npm run test*)", behavior="allow")
    payload = load_fixture("permission_request_bash.json")

    decision = decision_of(await answer(agent.hold(payload)))

    assert decision == {"behavior": "allow", "updatedInput": payload["tool_input"]}
    request = await PermissionRequest.objects.select_related("rule").aget()
    assert (request.status, request.rule, request.decided_by_id) == ("allowed", rule, None)
    record = await PermissionDecision.objects.aget()
    assert record.rule_text == "allow Bash(npm run test*)"


async def test_a_deny_rule_of_the_project_wins_over_a_global_allow(agent):
    await TeamRule.objects.acreate(rule="Bash(*)", behavior="allow")
    await TeamRule.objects.acreate(project="shop", rule="Bash(npm *)", behavior="deny")

    decision = decision_of(await answer(agent.hold(load_fixture("permission_request_bash.json"))))

    assert decision["behavior"] == "deny"
    assert "team rule on Agentboard (Bash(npm *))" in decision["message"]


async def test_a_rule_of_another_project_does_not_apply(agent, settings):
    settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS = 0.2
    await TeamRule.objects.acreate(project="api", rule="Bash(*)", behavior="allow")

    assert await answer(agent.hold(load_fixture("permission_request_bash.json"))) == {}


# --- waiting in the terminal ------------------------------------------------------------------


async def test_a_notification_says_the_agent_waits_in_its_terminal_until_it_moves_on(agent):
    response = await agent.hook(load_fixture("notification_idle.json"))

    assert response.status_code == 200
    wait = await TerminalWait.objects.aget()
    assert (wait.notification_type, wait.message) == (
        "idle_prompt",
        "Claude is waiting for your input",
    )
    assert wait.ended_at is None
    assert (await Agent.objects.aget(agent_id=SESSION_ID)).awaiting_plan

    await agent.hook(load_fixture("user_prompt_submit.json"))

    await wait.arefresh_from_db()
    assert wait.ended_at is not None


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"tool_name": "x" * 201}, id="a tool name too long to store"),
        pytest.param({"permission_suggestions": [{"type": "a\u0000b"}]}, id="a NUL"),
    ],
)
async def test_a_request_that_cannot_be_stored_is_refused_and_changes_nothing(agent, changes):
    response = await agent.hook(load_fixture("permission_request_bash.json", **changes))

    assert response.status_code == 422
    assert response.json()["error"]["message"].endswith(".")
    assert await PermissionRequest.objects.acount() == 0


async def test_a_parallel_tool_call_of_the_same_agent_leaves_the_request_waiting(agent, reviewer):
    """Claude Code runs a turn's tool calls side by side: a Read that needed no permission
    finishing says nothing about the Bash call still waiting."""
    held = agent.hold(load_fixture("permission_request_bash.json"))
    request = await agent.waiting(held)

    read = bash_ran(tool_name="Read", tool_input={"file_path": "/home/dev/shop/README.md"})
    assert (await agent.hook(read)).status_code == 200
    assert (await agent.hook(dict(read, tool_use_id="toolu_second_read"))).status_code == 200

    await asyncio.sleep(0.2)
    assert not held.done()
    await decide(request, reviewer, allow=True)
    assert decision_of(await answer(held))["behavior"] == "allow"
