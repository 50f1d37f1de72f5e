"""What the lead says from the board, as the opencode plugin hears it: a long poll answered as
soon as a message or a stop is queued (claimed once, whichever poll asks) or a pause begins or
ends, and a paused session's tool call held until a resume."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from dashboard.core.writer import write
from dashboard.models import AgentToken
from dashboard.steering import services
from dashboard.steering.models import Directive
from tests.opencode.conftest import OPENCODE_URL, SESSION, session_event

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("sync_thread_connections_closed"),
]

WAIT = 10
POLL_URL = "/hooks/opencode/steering"
PAUSED_URL = "/hooks/opencode/paused"
# A client that waits 6 s is answered within 1 s (the answer's margin is 5 s).
SHORT = {"X-Agentboard-Hook-Timeout": "6"}


class Plugin:
    """The Agentboard plugin for opencode against the in-process server."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.client = AsyncClient()

    async def post(self, url: str, body: object, headers: dict | None = None):
        return await self.client.post(
            url,
            body,
            content_type="application/json",
            headers={"Authorization": f"Bearer {self.token}", **(headers or {})},
        )

    def poll(
        self, paused: tuple[str, ...] = (), headers: dict | None = None, poll_id: str = ""
    ) -> asyncio.Task:
        body = {"type": "agentboard.steering", "sessionIDs": [SESSION], "paused": list(paused)}
        if poll_id:
            body["pollID"] = poll_id
        return asyncio.create_task(self.post(POLL_URL, body, headers))

    def tool_call(self, headers: dict | None = None) -> asyncio.Task:
        body = {"type": "agentboard.paused", "sessionID": SESSION, "callID": "c1", "tool": "bash"}
        return asyncio.create_task(self.post(PAUSED_URL, body, headers))


@pytest.fixture
async def plugin(token) -> Plugin:
    plugin = Plugin(token)
    response = await plugin.post(OPENCODE_URL, session_event("created"))
    assert response.status_code == 200
    return plugin


def target() -> services.Target:
    return services.Target(SESSION, SESSION)


async def waiting(task: asyncio.Task) -> None:
    """The poll is held: nothing to say yet."""
    await asyncio.sleep(0.7)
    assert not task.done(), task.result().content


async def answered(task: asyncio.Task) -> dict:
    response = await asyncio.wait_for(task, WAIT)
    assert response.status_code == 200, response.content
    return response.json()


async def test_a_message_queued_while_the_plugin_polls_is_answered_at_once(plugin, reviewer):
    poll = plugin.poll()
    await waiting(poll)

    await write(services.message_send, user=reviewer, target=target(), text="Use staging.")

    answer = await answered(poll)
    assert answer["paused"] == []
    ((said),) = answer["said"]
    assert said["sessionID"] == SESSION and said["stop"] is None
    (message,) = said["messages"]
    assert message.startswith("Message from lead, who oversees this session on Agentboard:")
    assert message.endswith("Use staging.")
    directive = await Directive.objects.aget()
    assert (directive.state, directive.delivered_via) == ("delivered", "opencode plugin")


async def test_a_message_is_given_to_one_poll_only(plugin, reviewer):
    await write(services.message_send, user=reviewer, target=target(), text="Once only.")

    polls = [plugin.poll(headers=SHORT) for _ in range(3)]
    answers = [await answered(poll) for poll in polls]

    assert sum(len(answer["said"]) for answer in answers) == 1
    # A retry after the answer finds nothing left to say.
    assert (await answered(plugin.poll(headers=SHORT)))["said"] == []


async def test_a_poll_whose_answer_was_lost_is_answered_again_when_it_is_asked_again(
    plugin, reviewer
):
    """The plugin asks again with the same poll id until an answer reaches it: what the lost
    answer carried comes again, once, and a new poll does not get it."""
    await write(services.message_send, user=reviewer, target=target(), text="Use staging.")
    await write(services.stop_send, user=reviewer, target=target(), reason="Enough.")
    first = await answered(plugin.poll(headers=SHORT, poll_id="poll-1"))

    retried = await answered(plugin.poll(headers=SHORT, poll_id="poll-1"))

    assert retried == first
    ((said),) = retried["said"]
    assert said["stop"] == "Stopped by lead from Agentboard: Enough."
    assert said["messages"][0].endswith("Use staging.")
    assert (await answered(plugin.poll(headers=SHORT, poll_id="poll-2")))["said"] == []
    assert await Directive.objects.filter(state="delivered").acount() == 2


async def test_a_poll_with_nothing_to_say_ends_empty_within_the_clients_patience(plugin):
    loop = asyncio.get_running_loop()
    started = loop.time()

    answer = await answered(plugin.poll(headers=SHORT))

    assert answer == {"said": [], "paused": []}
    assert loop.time() - started < 3


async def test_a_stop_is_answered_with_its_sentence(plugin, reviewer):
    poll = plugin.poll()
    await waiting(poll)

    await write(services.stop_send, user=reviewer, target=target(), reason="Runaway loop.")

    ((said),) = (await answered(poll))["said"]
    assert said == {
        "sessionID": SESSION,
        "messages": [],
        "stop": "Stopped by lead from Agentboard: Runaway loop.",
    }


async def test_the_poll_answers_when_a_pause_begins_and_when_it_ends(plugin, reviewer):
    poll = plugin.poll()
    await waiting(poll)

    await write(services.pause, user=reviewer, target=target(), reason="Deploy freeze.")
    assert (await answered(poll))["paused"] == [SESSION]

    poll = plugin.poll(paused=(SESSION,))
    await waiting(poll)
    await write(services.resume, user=reviewer, target=target())
    assert (await answered(poll))["paused"] == []


async def test_a_paused_sessions_tool_call_is_held_until_a_resume(plugin, reviewer):
    await write(services.pause, user=reviewer, target=target(), reason="Deploy freeze.")
    call = plugin.tool_call()
    await waiting(call)

    await write(services.resume, user=reviewer, target=target())

    assert await answered(call) == {}


async def test_a_held_tool_call_is_refused_with_who_and_why_when_the_wait_ends(plugin, reviewer):
    await write(services.pause, user=reviewer, target=target(), reason="Deploy freeze.")

    answer = await answered(plugin.tool_call(headers=SHORT))

    assert answer == {
        "refuse": "Paused by lead: Deploy freeze.; wait for a resume before going on."
    }


async def test_a_message_leaves_a_held_tool_call_held(plugin, reviewer):
    await write(services.pause, user=reviewer, target=target(), reason="Deploy freeze.")
    call = plugin.tool_call()
    await write(services.message_send, user=reviewer, target=target(), text="Hold on.")

    await waiting(call)
    await write(services.resume, user=reviewer, target=target())
    assert await answered(call) == {}


async def test_a_stop_ends_a_held_tool_call(plugin, reviewer):
    await write(services.pause, user=reviewer, target=target(), reason="Deploy freeze.")
    call = plugin.tool_call()
    await waiting(call)

    await write(services.stop_send, user=reviewer, target=target(), reason="Enough.")

    assert await answered(call) == {"stop": "Stopped by lead from Agentboard: Enough."}


async def test_another_persons_plugin_hears_nothing_of_the_session(plugin, reviewer, other_user):
    other = Plugin((await sync_to_async(AgentToken.issue)(owner=other_user, label="other"))[1])
    await write(services.message_send, user=reviewer, target=target(), text="Not for you.")

    assert (await answered(other.poll(headers=SHORT)))["said"] == []
    assert (await Directive.objects.aget()).state == "queued"


async def test_a_poll_without_a_token_is_refused(plugin):
    client = AsyncClient()

    response = await client.post(
        POLL_URL, {"sessionIDs": [SESSION]}, content_type="application/json"
    )

    assert response.status_code == 401


async def test_a_poll_must_be_a_post(plugin):
    response = await plugin.client.get(
        POLL_URL, headers={"Authorization": f"Bearer {plugin.token}"}
    )

    assert response.status_code == 405


@pytest.mark.parametrize(
    "body",
    [
        {"sessionIDs": "ses_main0001"},
        {"sessionIDs": [""]},
        {"sessionIDs": [f"ses_{n}" for n in range(201)]},
        {"sessionIDs": ["ses_main0001"], "pollID": "<script>"},
        {"sessionIDs": ["ses_main0001"], "pollID": "x" * 65},
        {},
        [],
    ],
)
async def test_a_poll_that_names_no_sessions_properly_is_refused_with_a_sentence(plugin, body):
    response = await plugin.post(POLL_URL, body)

    assert 400 <= response.status_code < 500
    assert response.json()["error"]["message"]
