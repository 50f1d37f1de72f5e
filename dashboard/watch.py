"""What this process's requests and sockets wait on, and how they are woken or let go.

Waiters wait for a decision on one thing of a kind: a plan, or a permission request. It reaches
an agent waiting in this process by whichever way comes first:

- this process committed it: the publisher hands it to `decided()` right after the commit;
- another process committed it: its push arrives through the thing's channel layer group;
- that push was lost (the deciding process died between its commit and its push, or the channel
  layer dropped the group): every `AGENTBOARD_DECISION_RESYNC_SECONDS` one query per kind reads
  which of the things waited on here are no longer pending, and wakes their waiters.

So every connected waiter hears of a committed decision within the resync time at worst. The
registry holds only callbacks of this process's own waiters; the database stays the truth.

On a graceful stop (`stop()`), every waiter is let go at once with None, so held requests answer
before the server exits instead of being cut off.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings

from dashboard.loops import PerLoop, keep, listen

logger = logging.getLogger(__name__)

# Called on the event loop with the plan's (or request's) state once it left pending, or None
# when the server is stopping and the waiter must give up.
Waiter = Callable[[dict[str, Any] | None], None]
# What is waited on: ("plan", plan pk) or ("permission", permission request pk).
WaitKey = tuple[str, int]
PLAN = "plan"
PERMISSION = "permission"
# The channel layer message that carries each kind's decision, and its id field.
DECIDED_MESSAGES = {
    PLAN: ("plan.decided", "plan_id"),
    PERMISSION: ("permission.decided", "request_id"),
}


class Watch:
    """The waiters of one event loop; every method runs on that loop.

    The loop has one channel of its own, added to the group of everything waited on here, so
    pushes from other processes need no channel per waiter.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: dict[WaitKey, set[Waiter]] = {}
        self.stopping = asyncio.Event()
        self._channel: str | None = None
        self._channel_lock = asyncio.Lock()
        self._listener: asyncio.Task[None] | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def add(self, pk: int, waiter: Waiter, kind: str = PLAN) -> None:
        """Wake `waiter` once this plan (or request) is decided; pushes from any process reach
        it from the moment this returns, so read its state after it, never before."""
        if self.stopping.is_set():
            self.loop.call_soon(waiter, None)
            return
        key = (kind, pk)
        first = key not in self.waiting
        self.waiting.setdefault(key, set()).add(waiter)
        channel = await self._own_channel()
        if first:
            # Shielded: a request cancelled meanwhile must hear it at once, and the Redis
            # client must not be interrupted halfway through a command.
            await asyncio.shield(get_channel_layer().group_add(decision_group(key), channel))
        if self._listener is None or self._listener.done():
            self._listener = self.loop.create_task(self._listen(channel))
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = self.loop.create_task(self._sweep())

    def discard(self, pk: int, waiter: Waiter, kind: str = PLAN) -> None:
        key = (kind, pk)
        waiters = self.waiting.get(key)
        if waiters is None:
            return
        waiters.discard(waiter)
        if not waiters:
            del self.waiting[key]
            self._leave_group(key)

    def decided(self, pk: int, state: dict[str, Any], kind: str = PLAN) -> None:
        """Wake everyone here waiting on this plan or request (each once: they leave the
        registry)."""
        key = (kind, pk)
        waiters = self.waiting.pop(key, None)
        if waiters is None:
            return
        self._leave_group(key)
        for waiter in waiters:
            _call(waiter, state)

    def stop(self) -> None:
        """Let every waiter go now, and any that comes later at once."""
        self.stopping.set()
        waiting, self.waiting = self.waiting, {}
        for waiters in waiting.values():
            for waiter in waiters:
                _call(waiter, None)
        self._idle()

    async def _own_channel(self) -> str:
        async with self._channel_lock:
            if self._channel is None:
                self._channel = await get_channel_layer().new_channel()
            return self._channel

    async def close(self, timeout: float = 5) -> None:
        """Stop, and wait up to `timeout` until nothing of this watch runs on its loop any
        more (a group left, a listener's read of the channel layer cancelled): for a loop
        that is about to close."""
        self.stop()
        running = [task for task in self._tasks if task is not asyncio.current_task()]
        if running:
            await asyncio.wait(running, timeout=timeout)

    def _leave_group(self, key: WaitKey) -> None:
        if self._channel is not None:
            discard = get_channel_layer().group_discard(decision_group(key), self._channel)
            keep(self._tasks, self.loop.create_task(discard))
        if not self.waiting:
            self._idle()

    def _idle(self) -> None:
        """Nobody waits here any more: no task is left running (a test's loop may close)."""
        for task in (self._listener, self._sweeper):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
                keep(self._tasks, task)  # until its cancellation has run its course
        self._listener = self._sweeper = None

    async def _listen(self, channel: str) -> None:
        await listen(
            channel,
            self._heard,
            failing="decisions rely on the resync",
            retry_seconds=settings.AGENTBOARD_DECISION_RESYNC_SECONDS,
        )

    def _heard(self, message: dict[str, Any]) -> None:
        state = message.get("state")
        if not isinstance(state, dict) or state.get("status") == "pending":
            return
        for kind, (message_type, id_field) in DECIDED_MESSAGES.items():
            if message.get("type") == message_type:
                self.decided(message[id_field], state, kind)

    async def _sweep(self) -> None:
        from dashboard.reader import read

        while self.waiting and not self.stopping.is_set():
            await asyncio.sleep(settings.AGENTBOARD_DECISION_RESYNC_SECONDS)
            if not self.waiting:
                return
            try:
                states = await read(_decided_states, list(self.waiting))
            except Exception:
                logger.exception("could not re-read the plans and requests waited on")
                continue
            for (kind, pk), state in states.items():
                self.decided(pk, state, kind)


def _call(waiter: Waiter, state: dict[str, Any] | None) -> None:
    try:
        waiter(state)
    except Exception:
        logger.exception("a waiter failed")


def _decided_states(keys: list[WaitKey]) -> dict[WaitKey, dict[str, Any]]:
    """Of the things waited on, those decided meanwhile: one query per kind."""
    from planmode.models import PermissionRequest, Plan, PlanStatus, RequestStatus
    from planmode.permissions import permission_state
    from planmode.services import plan_state

    states: dict[WaitKey, dict[str, Any]] = {}
    plan_pks = [pk for kind, pk in keys if kind == PLAN]
    if plan_pks:
        plans = (
            Plan.objects.select_related("session", "agent", "agent__session", "decided_by")
            .filter(pk__in=plan_pks)
            .exclude(status=PlanStatus.PENDING)
        )
        states.update({(PLAN, plan.pk): plan_state(plan) for plan in plans})
    request_pks = [pk for kind, pk in keys if kind == PERMISSION]
    if request_pks:
        requests = (
            PermissionRequest.objects.select_related("session", "agent", "decided_by", "rule")
            .filter(pk__in=request_pks)
            .exclude(status=RequestStatus.PENDING)
        )
        states.update({(PERMISSION, request.pk): permission_state(request) for request in requests})
    return states


# The waiters of a loop: watch_for(loop), or of the running loop.
watch_for = PerLoop(Watch)


def plan_group(plan_pk: int) -> str:
    """Agents waiting on this plan's decision (agent sockets, held hooks) of every process."""
    return f"plan.{plan_pk}"


def permission_group(request_pk: int) -> str:
    """Held hooks of every process waiting on this permission request's decision."""
    return f"permission.{request_pk}"


def decision_group(key: WaitKey) -> str:
    kind, pk = key
    return plan_group(pk) if kind == PLAN else permission_group(pk)
