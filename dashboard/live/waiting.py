"""Agents waiting on a person: a plan's or a permission request's decision, or the end of a
continuation countdown.

A click handled by any server process wakes them: decision waiters through
`dashboard.live.watch` (which also re-reads the database when a push was lost), countdowns
through their channel layer group.
Each subscribes before it reads the database: a change committed in between is then either in
what it reads or on its way, never lost. Waiting holds no database connection: the few reads
run on the reading thread (`dashboard.core.reader`). A graceful stop lets every waiter go at once.
"""

from __future__ import annotations

import asyncio
import logging
from contextvars import ContextVar
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings
from django.utils import timezone

from dashboard.core import reader
from dashboard.core.sql import any_row
from dashboard.core.waits import bounded_hold
from dashboard.core.writer import write
from dashboard.live import publisher
from dashboard.live.watch import PERMISSION, PLAN, watch_for
from dashboard.steering.services import pause_open_now
from planmode.models import PermissionRequest, Plan
from planmode.permissions import permission_state
from planmode.services import plan_expire_unless_watched, plan_state
from todos import enforcer
from todos.models import Continuation

logger = logging.getLogger(__name__)


# Whether it is still pending, in one plain statement: every held hook reads this once as it
# starts waiting (hundreds at once when a team restarts its agents), and it almost always is.
_STILL_PENDING = {
    PLAN: "SELECT 1 FROM planmode_plan WHERE id = %s AND status = 'pending'",
    PERMISSION: "SELECT 1 FROM planmode_permissionrequest WHERE id = %s AND status = 'pending'",
}
PENDING = {"status": "pending"}


def _state_now(kind: str, pk: int) -> dict[str, Any] | None:
    """Its state, or None for an unknown one; only `PENDING` while it is pending."""
    if any_row(_STILL_PENDING[kind], [pk]):
        return PENDING
    if kind == PERMISSION:
        request = (
            PermissionRequest.objects.select_related("session", "agent", "decided_by", "rule")
            .filter(pk=pk)
            .first()
        )
        return permission_state(request) if request is not None else None
    plan = (
        Plan.objects.select_related("session", "agent", "agent__session", "decided_by")
        .filter(pk=pk)
        .first()
    )
    return plan_state(plan) if plan is not None else None


async def wait_for_decision(pk: int, timeout: float, kind: str = PLAN) -> dict[str, Any] | None:
    """The plan's (or permission request's) state once it is no longer pending, or None when
    `timeout` seconds pass first or the server is stopping. An unknown one gives None at once."""
    loop = asyncio.get_running_loop()
    heard: asyncio.Future[dict[str, Any] | None] = loop.create_future()

    def waiter(state: dict[str, Any] | None) -> None:
        if not heard.done():
            heard.set_result(state)

    watch = watch_for(loop)
    # Subscribe before reading: a decision committed in between is then either in what is
    # read or on its way, never lost.
    try:
        await watch.add(pk, waiter, kind)
        state = await reader.read(_state_now, kind, pk)
        if state is None or state["status"] != "pending":
            return state
        try:
            return await asyncio.wait_for(asyncio.shield(heard), timeout)
        except TimeoutError:
            return None
    finally:
        watch.discard(pk, waiter, kind)


def _continuation_status(continuation_pk: int) -> str:
    return Continuation.objects.values_list("status", flat=True).get(pk=continuation_pk)


async def wait_until_resolved_or_due(continuation_pk: int, timeout: float) -> None:
    """Wait for the countdown: returns when it is cancelled (any process), the time is up or
    the server is stopping."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    group = publisher.continuation_group(continuation_pk)
    await layer.group_add(group, channel)
    stopping = watch_for().stopping
    try:
        if await reader.read(_continuation_status, continuation_pk) != Continuation.Status.COUNTING:
            return
        waits = {
            asyncio.ensure_future(layer.receive(channel)),
            asyncio.ensure_future(stopping.wait()),
        }
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
    finally:
        await layer.group_discard(group, channel)


# A held tool call of a paused agent reads its pause again at least this often: a resume whose
# push was lost (another process died after its commit) still lets it go.
PAUSE_RECHECK_SECONDS = 2.0


async def wait_while_paused(agent_pk: int, timeout: float) -> bool:
    """Hold a paused agent's tool call: True once it is resumed (any process), False when
    `timeout` seconds pass first or the server is stopping. Holds no thread and no database
    connection while it waits."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    group = publisher.pause_group(agent_pk)
    await layer.group_add(group, channel)
    stopping = watch_for().stopping
    deadline = asyncio.get_running_loop().time() + timeout
    try:
        while True:
            if await reader.read(pause_open_now, agent_pk) is None:
                return True
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0 or stopping.is_set():
                return False
            waits = {
                asyncio.ensure_future(layer.receive(channel)),
                asyncio.ensure_future(stopping.wait()),
            }
            try:
                await asyncio.wait(
                    waits,
                    timeout=min(left, PAUSE_RECHECK_SECONDS),
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                for task in waits:
                    task.cancel()
    finally:
        await layer.group_discard(group, channel)


# Strong references: the event loop keeps only weak ones to the tasks it runs.
_abandon_checks: set[asyncio.Task[None]] = set()


def expire_if_abandoned(plan_ids: list[int]) -> None:
    """A socket waiting on these plans closed: after the reconnect grace, each one that no
    socket (of any process) watched again expires, so the board stops showing it as waiting."""
    watch = watch_for()
    if not plan_ids or watch.stopping.is_set():
        return  # a stopping server closed the socket: the agent reconnects to the next one
    since = timezone.now()

    async def check() -> None:
        await asyncio.sleep(settings.AGENTBOARD_PLAN_RECONNECT_GRACE_SECONDS)
        for plan_id in plan_ids:
            try:
                await write(plan_expire_unless_watched, plan_id=plan_id, since=since)
            except Exception:
                logger.exception("could not expire plan %s after its socket went away", plan_id)

    task = asyncio.get_running_loop().create_task(check())
    _abandon_checks.add(task)
    task.add_done_callback(_abandon_checks.discard)


# How long the client of the hook being handled waits for its answer, when it said so
# (`dashboard.core.headers.HOOK_TIMEOUT_HEADER`, read by the hook endpoints).
client_waits: ContextVar[float | None] = ContextVar("client_waits", default=None)


def hold_for(wait: float) -> float:
    """Seconds to hold the current hook for a wait of `wait`: never past its client's patience."""
    held = bounded_hold(wait, client_waits.get())
    if held < wait:
        logger.info(
            "a hook waits %.0f s: held %.1f s instead of %.1f s", client_waits.get(), held, wait
        )
    return held


async def stop_hook_answer(
    *, agent_pk: int, stop_hook_active: bool, background_tasks: int = 0
) -> dict:
    """The answer to a Stop / SubagentStop hook: `{"decision": "block", ...}` or `{}`.

    The countdown is the server's, or shorter when the hook's client would give up before it
    ends (a hook installed for a shorter countdown): the agent is continued sooner rather than
    never. Never raises: whatever goes wrong, the agent is let stop rather than broken.
    """
    countdown = hold_for(settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS)
    try:
        begun = await write(
            enforcer.continuation_begin,
            agent_pk=agent_pk,
            stop_hook_active=stop_hook_active,
            background_tasks=background_tasks,
            countdown=countdown,
        )
        continuation = begun.continuation
        if continuation.status != Continuation.Status.COUNTING:
            return {}
        await wait_until_resolved_or_due(continuation.pk, countdown)
        if watch_for().stopping.is_set():
            await write(
                enforcer.continuation_cancel, continuation_pk=continuation.pk, by="a server stop"
            )
            return {}
        finished = await write(enforcer.continuation_finish, continuation_pk=continuation.pk)
        if finished.continuation.status == Continuation.Status.SENT:
            return {"decision": "block", "reason": finished.continuation.prompt}
        return {}
    except Exception:
        logger.exception("the continuation enforcer failed; letting the agent stop")
        return {}
