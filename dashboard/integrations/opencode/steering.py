"""What the board tells an opencode agent, carried by the Agentboard plugin with opencode's own
client: a message put into the session (also an idle one), a stop that aborts it, a pause that
holds its tool calls.

`POST /hooks/opencode/steering` is a long poll. The plugin names the sessions it runs and the
ones it holds as paused; the answer comes as soon as something is queued for one of them
(claimed here, so each is injected once) or a pause began or ended, else after
`STEERING_POLL_SECONDS` with nothing, and the plugin asks again at once. While it waits the
request holds a coroutine, no thread, and re-reads this process's view of what is queued and
paused (`dashboard.steering.services`: one query per `STEERING_TTL` for every agent at once)
every `STEERING_RECHECK_SECONDS`. A re-read rather than a channel-layer wake, because a queue
or a pause may be written by any server process, or before a restart, with nothing pushed: the
database is the one place every process sees, and a poll that a restart or a lost connection
cut off is simply asked again, finding the directive still queued. A directive is claimed by a
conditional update in the writer before it is answered, so of two polls (two processes, a
plugin's retry) only one gets it. A poll names itself (`pollID`), and the plugin asks again with
the same name until an answer reaches it: what a poll claimed whose answer was lost on the way
is answered again, at once, so a message is neither lost nor put into the session twice.

`POST /hooks/opencode/paused`: a tool call of a session the plugin holds as paused, held (like
Claude Code's PreToolUse) until a resume in any process, then `{}` and the call runs; refused
with who paused it and why when the wait ends first; `{"stop": <sentence>}` when a stop came.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, JsonResponse
from pydantic import Field

from dashboard.core import reader
from dashboard.core.changes import Outcome
from dashboard.core.writer import write
from dashboard.integrations.claude_code.hooks import agent_endpoint, read_payload, validate
from dashboard.integrations.opencode.schemas import Lenient, SessionId, SessionRef
from dashboard.live.waiting import hold_for, wait_while_paused
from dashboard.live.watch import watch_for
from dashboard.models import Agent
from dashboard.steering import services as steering
from dashboard.steering.models import CLAIM_KEY_PATTERN, Directive

# How long one poll waits for news before it is answered with none.
STEERING_POLL_SECONDS = 25.0
# How often a waiting poll looks again (its view of other processes' writes is older by up to
# `steering.STEERING_TTL`).
STEERING_RECHECK_SECONDS = 0.5
# A session the board does not know yet (its first event is on its way) is looked for again
# this often while the poll waits.
RESOLVE_AGAIN_SECONDS = 3.0
# At most this many sessions per poll (an opencode runs a handful, with their subagents).
MAX_SESSIONS = 200
VIA = "opencode plugin"


class Poll(Lenient):
    sessionIDs: list[SessionId] = Field(max_length=MAX_SESSIONS)
    # The sessions the plugin holds as paused: the poll answers when that changes.
    paused: list[SessionId] = Field(default_factory=list, max_length=MAX_SESSIONS)
    # The poll's name, the same on each retry of it (an older plugin sends none).
    pollID: str = Field(default="", pattern=CLAIM_KEY_PATTERN)


class HeldCall(SessionRef):
    callID: str = ""
    tool: str = ""


@agent_endpoint("Poll for what the board says with POST.")
async def opencode_steering(request: HttpRequest, owner: AbstractBaseUser) -> JsonResponse:
    poll = validate(
        Poll,
        read_payload(
            request,
            what="steering poll",
            shape="Send a JSON object with 'sessionIDs', the opencode sessions to hear about.",
        ),
    )
    wait = hold_for(STEERING_POLL_SECONDS)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    stopping = watch_for().stopping
    known_paused = set(poll.paused)
    agents: dict[int, str] = {}
    resolved_at = -RESOLVE_AGAIN_SECONDS
    while True:
        if (
            len(agents) < len(set(poll.sessionIDs))
            and loop.time() - resolved_at >= RESOLVE_AGAIN_SECONDS
        ):
            agents = await reader.read(_running_agents, owner.pk, poll.sessionIDs)
            resolved_at = loop.time()
            if poll.pollID:
                again = await reader.read(_claimed_before, agents, poll.pollID)
                if again:
                    _, paused = await reader.read(_steering_view, list(agents))
                    return JsonResponse(_answer(again, paused, agents))
        queued, paused = await reader.read(_steering_view, list(agents))
        if queued:
            said = await write(_claim, agents={pk: agents[pk] for pk in queued}, key=poll.pollID)
            if said.value:
                return JsonResponse(_answer(said.value, paused, agents))
        if {agents[pk] for pk in paused} != known_paused & set(agents.values()):
            return JsonResponse(_answer([], paused, agents))
        left = deadline - loop.time()
        if left <= 0 or stopping.is_set():
            return JsonResponse(_answer([], paused, agents))
        try:
            await asyncio.wait_for(stopping.wait(), timeout=min(left, STEERING_RECHECK_SECONDS))
        except TimeoutError:
            pass


def _answer(said: list[dict[str, Any]], paused: set[int], agents: dict[int, str]) -> dict[str, Any]:
    return {"said": said, "paused": sorted(agents[pk] for pk in paused)}


def _running_agents(owner_pk: int, opencode_ids: list[str]) -> dict[int, str]:
    """The owner's running agents of these opencode sessions (main agents and subagents, both
    named by their own opencode session id), by pk."""
    return dict(
        Agent.objects.filter(
            session__owner_id=owner_pk,
            session__ended_at__isnull=True,
            agent_id__in=opencode_ids,
            status=Agent.Status.RUNNING,
        ).values_list("pk", "agent_id")
    )


def _steering_view(agent_pks: list[int]) -> tuple[list[int], set[int]]:
    """Which of the agents have something queued, and which are paused (this process's view)."""
    queued, paused = [], set()
    for pk in agent_pks:
        has_queued, is_paused = steering.queued_and_paused(pk)
        if has_queued:
            queued.append(pk)
        if is_paused:
            paused.add(pk)
    return queued, paused


def _claim(*, agents: dict[int, str], key: str) -> Outcome[list[dict[str, Any]]]:
    """What is queued for each agent, claimed (each once, whichever poll comes first), with
    what this poll's earlier tries claimed."""
    said: list[dict[str, Any]] = []
    outcome: Outcome[list[dict[str, Any]]] = Outcome(said)
    for pk, opencode_id in agents.items():
        claimed = steering.directives_claim(agent_pk=pk, via=VIA, key=key)
        if claimed.value:
            said.append(_said(opencode_id, claimed.value))
            outcome.changes.merge(claimed.changes)
    return outcome


def _claimed_before(agents: dict[int, str], key: str) -> list[dict[str, Any]]:
    """What an earlier try of this poll claimed, whose answer never reached the plugin."""
    kinds = [Directive.Kind.MESSAGE, Directive.Kind.STOP]
    said = []
    for pk, opencode_id in agents.items():
        before = steering.claimed_before(agent_pk=pk, key=key, kinds=kinds)
        if before:
            said.append(_said(opencode_id, steering.said_of(before)))
    return said


def _said(opencode_id: str, said: steering.Said) -> dict[str, Any]:
    return {"sessionID": opencode_id, "messages": list(said.messages), "stop": said.stop}


@agent_endpoint("Send a paused session's tool call with POST.")
async def opencode_paused(request: HttpRequest, owner: AbstractBaseUser) -> JsonResponse:
    call = validate(
        HeldCall,
        read_payload(
            request,
            what="held tool call",
            shape="Send a JSON object with the 'sessionID' whose tool call waits.",
        ),
    )
    agents = await reader.read(_running_agents, owner.pk, [call.sessionID])
    if not agents:
        return JsonResponse({})  # not an agent the board steers: the call runs
    agent_pk = next(iter(agents))
    resumed = await _held_until_resumed_or_told(
        agent_pk, hold_for(settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS)
    )
    stopped = await write(steering.directives_claim, agent_pk=agent_pk, via=VIA, messages=False)
    if stopped.value.stop is not None:
        return JsonResponse({"stop": stopped.value.stop})
    if resumed:
        return JsonResponse({})
    paused = await reader.read(steering.pause_open_now, agent_pk)
    if paused is None:
        return JsonResponse({})
    return JsonResponse({"refuse": steering.pause_words(paused)})


async def _held_until_resumed_or_told(agent_pk: int, wait: float) -> bool:
    """True once the agent is resumed; False when a stop was queued for it (it ends the held
    call at once) or the wait ended."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while True:
        left = deadline - loop.time()
        if await wait_while_paused(agent_pk, max(0.0, min(left, STEERING_RECHECK_SECONDS * 2))):
            return True
        if left <= 0 or watch_for().stopping.is_set():
            return False
        if await reader.read(_stop_queued, agent_pk):
            return False


def _stop_queued(agent_pk: int) -> bool:
    """Whether a stop waits for the agent (a message waits for the poll instead)."""
    return (
        steering.has_queued(agent_pk)
        and Directive.objects.filter(
            agent_id=agent_pk, state=Directive.State.QUEUED, kind=Directive.Kind.STOP
        ).exists()
    )
