"""The continuation enforcer and the inbox for opencode: `session.idle` and `permission.asked`
are held like Claude Code's Stop and PermissionRequest hooks."""

from __future__ import annotations

import asyncio

import pytest
from django.test import AsyncClient

from dashboard.core.writer import write
from dashboard.models import Session
from planmode.models import PermissionRequest
from planmode.permissions import Answer, permission_decide
from tests.hooks.conftest import WAIT, answer
from tests.opencode.conftest import (
    OPENCODE_URL,
    SESSION,
    asked,
    item,
    session_event,
    todo_event,
)
from todos.enforcer import continuation_prompt
from todos.models import Continuation, EnforcerEvent

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("sync_thread_connections_closed"),
]

UNFINISHED = [item("Add the toggle", "completed"), item("Run the tests", "in_progress")]


class Plugin:
    """The Agentboard plugin for opencode against the in-process server."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.client = AsyncClient()

    async def send(self, event: dict):
        return await self.client.post(
            OPENCODE_URL,
            event,
            content_type="application/json",
            headers={"Authorization": f"Bearer {self.token}"},
        )

    def hold(self, event: dict) -> asyncio.Task:
        return asyncio.create_task(self.send(event))

    async def idle(self) -> asyncio.Task:
        return self.hold({"type": "session.idle", "properties": {"sessionID": SESSION}})

    async def activity(self, kind: str):
        return await self.send(
            {"type": "agentboard.activity", "properties": {"sessionID": SESSION, "kind": kind}}
        )


@pytest.fixture
def plugin(token) -> Plugin:
    return Plugin(token)


async def until(check, what: str):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not (found := await check()):
        assert loop.time() < deadline, f"{what} never happened"
        await asyncio.sleep(0.01)
    return found


async def counting() -> Continuation | None:
    return await Continuation.objects.filter(status=Continuation.Status.COUNTING).afirst()


# --- the continuation enforcer ----------------------------------------------------------------


async def test_an_idle_session_with_unfinished_tasks_gets_the_continuation_prompt(plugin, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 0.2
    await plugin.send(todo_event(UNFINISHED))

    answered = await answer(await plugin.idle())

    assert answered == {"continue": continuation_prompt(UNFINISHED)}
    sent = await Continuation.objects.aget()
    assert sent.status == Continuation.Status.SENT


async def test_an_idle_session_with_everything_done_is_let_stop_at_once(plugin, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 30
    await plugin.send(todo_event([item("Add the toggle", "completed"), item("Old", "cancelled")]))

    assert await answer(await plugin.idle()) == {}


async def test_activity_in_the_session_during_the_countdown_cancels_it(plugin, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 30
    await plugin.send(todo_event(UNFINISHED))
    held = await plugin.idle()
    await until(counting, "the countdown")

    await plugin.activity("step")

    assert await answer(held) == {}
    cancelled = await Continuation.objects.aget()
    assert cancelled.status == Continuation.Status.CANCELLED
    assert "active again" in cancelled.reason


async def test_a_new_prompt_during_the_countdown_cancels_it(plugin, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 30
    await plugin.send(todo_event(UNFINISHED))
    held = await plugin.idle()
    await until(counting, "the countdown")

    await plugin.activity("prompt")

    assert await answer(held) == {}
    assert (await Continuation.objects.aget()).reason == "the user sent a new prompt"


async def test_continuations_in_a_row_stop_at_the_limit(plugin, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 0
    settings.AGENTBOARD_CONTINUATION_LIMIT = 2
    await plugin.send(todo_event(UNFINISHED))
    answers = []
    for n in range(3):
        # The agent works a little (a new write each time) and goes idle again.
        await plugin.send(todo_event([*UNFINISHED, item(f"Step {n}")]))
        answers.append(await answer(await plugin.idle()))

    assert [bool(a) for a in answers] == [True, True, False]
    skipped = await Continuation.objects.alatest("pk")
    assert "already continued 2 times" in skipped.reason


async def test_with_oh_my_opencodes_enforcer_in_the_session_agentboard_stays_out(plugin, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 0.2
    await plugin.send(todo_event(UNFINISHED))
    await plugin.send(
        {
            "type": "agentboard.other_enforcer",
            "properties": {"sessionID": SESSION, "name": "oh-my-opencode"},
        }
    )

    assert await answer(await plugin.idle()) == {}
    session = await Session.objects.aget(session_id=SESSION)
    assert session.other_enforcer == "oh-my-opencode"
    history = [e.text async for e in EnforcerEvent.objects.order_by("pk")]
    assert any("oh-my-opencode's own enforcer runs in this session" in text for text in history)
    assert any("Let it stop: oh-my-opencode's own enforcer" in text for text in history)


async def test_other_enforcer_reported_during_a_countdown_cancels_it(plugin, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 30
    await plugin.send(todo_event(UNFINISHED))
    held = await plugin.idle()
    await until(counting, "the countdown")

    await plugin.send(
        {
            "type": "agentboard.other_enforcer",
            "properties": {"sessionID": SESSION, "name": "oh-my-opencode"},
        }
    )

    assert await answer(held) == {}


async def test_an_idle_subagent_session_is_not_continued(plugin, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 0.2
    await plugin.send(session_event("created"))
    await plugin.send(session_event("created", "ses_child", parentID=SESSION))
    await plugin.send(todo_event(UNFINISHED, session_id="ses_child"))

    idle = {"type": "session.idle", "properties": {"sessionID": "ses_child"}}
    assert await answer(plugin.hold(idle)) == {}
    assert not await Continuation.objects.aexists()


# --- permission requests ----------------------------------------------------------------------

ASKED = asked()


async def waiting_request(task: asyncio.Task) -> PermissionRequest:
    async def pending():
        assert not task.done(), task.result().content
        return await PermissionRequest.objects.filter(status="pending").afirst()

    return await until(pending, "the request in the inbox")


async def decide(request: PermissionRequest, user, **fields) -> None:
    await write(permission_decide, request_id=request.pk, user=user, answer=Answer(**fields))


async def test_a_permission_request_waits_in_the_inbox_and_a_denial_carries_the_message(
    plugin, reviewer
):
    held = plugin.hold(ASKED)
    request = await waiting_request(held)
    assert request.tool_name == "Bash"
    assert request.tool_input == {"command": "rm -rf build", "description": "Clean the build"}

    await decide(request, reviewer, allow=False, message="Keep the build; run make clean.")

    answered = await answer(held)
    assert answered["reply"] == "reject"
    assert "Keep the build; run make clean." in answered["message"]


async def test_allow_answers_once_and_remembering_answers_always(plugin, reviewer):
    held = plugin.hold(ASKED)
    await decide(await waiting_request(held), reviewer, allow=True)
    assert await answer(held) == {"reply": "once"}

    again = plugin.hold(asked(id="per_0002"))
    await decide(await waiting_request(again), reviewer, allow=True, remember="suggestion:0")
    assert await answer(again) == {"reply": "always"}


async def test_a_permission_nobody_answers_in_time_is_left_to_opencode(plugin, settings):
    settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS = 0.2

    assert await answer(plugin.hold(ASKED)) == {}
    assert (await PermissionRequest.objects.aget()).status == "expired"


async def test_a_permission_answered_in_opencode_first_expires_on_the_board(plugin):
    held = plugin.hold(ASKED)
    request = await waiting_request(held)

    held.cancel()  # the plugin drops its request when opencode was answered itself

    async def expired():
        await request.arefresh_from_db()
        return request.status == "expired"

    await until(expired, "the request to expire")
