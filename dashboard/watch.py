"""What this process's requests and sockets wait on, and how they are woken or let go.

A plan's decision reaches an agent waiting in this process by whichever way comes first:

- this process committed it: the publisher hands it to `decided()` right after the commit;
- another process committed it: its push arrives through the plan's channel layer group;
- that push was lost (the deciding process died between its commit and its push, or the channel
  layer dropped the group): every `AGENTBOARD_DECISION_RESYNC_SECONDS` one query reads which of
  the plans waited on here are no longer pending, and wakes their waiters.

So every connected waiter hears of a committed decision within the resync time at worst. The
registry holds only callbacks of this process's own waiters; the database stays the truth.

On a graceful stop (`stop()`), every waiter is let go at once with None, so held requests answer
before the server exits instead of being cut off.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings

logger = logging.getLogger(__name__)

# Called on the event loop with the plan's state once it left pending, or None when the
# server is stopping and the waiter must give up.
Waiter = Callable[[dict[str, Any] | None], None]


class Watch:
    """The waiters of one event loop; every method runs on that loop.

    The loop has one channel of its own, added to the group of every plan waited on here, so
    pushes from other processes need no channel per waiter.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.plans: dict[int, set[Waiter]] = {}
        self.stopping = asyncio.Event()
        self._channel: str | None = None
        self._channel_lock = asyncio.Lock()
        self._listener: asyncio.Task[None] | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def add(self, plan_id: int, waiter: Waiter) -> None:
        """Wake `waiter` once this plan is decided; pushes from any process reach it from the
        moment this returns, so read the plan after it, never before."""
        if self.stopping.is_set():
            self.loop.call_soon(waiter, None)
            return
        first = plan_id not in self.plans
        self.plans.setdefault(plan_id, set()).add(waiter)
        channel = await self._own_channel()
        if first:
            await get_channel_layer().group_add(plan_group(plan_id), channel)
        if self._listener is None or self._listener.done():
            self._listener = self.loop.create_task(self._listen(channel))
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = self.loop.create_task(self._sweep())

    def discard(self, plan_id: int, waiter: Waiter) -> None:
        waiters = self.plans.get(plan_id)
        if waiters is None:
            return
        waiters.discard(waiter)
        if not waiters:
            del self.plans[plan_id]
            self._leave_group(plan_id)

    def decided(self, plan_id: int, state: dict[str, Any]) -> None:
        """Wake everyone here waiting on this plan (each once: they leave the registry)."""
        waiters = self.plans.pop(plan_id, None)
        if waiters is None:
            return
        self._leave_group(plan_id)
        for waiter in waiters:
            _call(waiter, state)

    def stop(self) -> None:
        """Let every waiter go now, and any that comes later at once."""
        self.stopping.set()
        plans, self.plans = self.plans, {}
        for waiters in plans.values():
            for waiter in waiters:
                _call(waiter, None)
        self._idle()

    async def _own_channel(self) -> str:
        async with self._channel_lock:
            if self._channel is None:
                self._channel = await get_channel_layer().new_channel()
            return self._channel

    def _leave_group(self, plan_id: int) -> None:
        if self._channel is not None:
            discard = get_channel_layer().group_discard(plan_group(plan_id), self._channel)
            task = self.loop.create_task(discard)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        if not self.plans:
            self._idle()

    def _idle(self) -> None:
        """Nobody waits here any more: no task is left running (a test's loop may close)."""
        for task in (self._listener, self._sweeper):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        self._listener = self._sweeper = None

    async def _listen(self, channel: str) -> None:
        layer = get_channel_layer()
        while True:
            try:
                message = await layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("could not receive plan decisions; relying on the resync")
                await asyncio.sleep(settings.AGENTBOARD_DECISION_RESYNC_SECONDS)
                continue
            state = message.get("state")
            if message.get("type") == "plan.decided" and isinstance(state, dict):
                if state.get("status") != "pending":
                    self.decided(message["plan_id"], state)

    async def _sweep(self) -> None:
        from dashboard.live import read

        while self.plans and not self.stopping.is_set():
            await asyncio.sleep(settings.AGENTBOARD_DECISION_RESYNC_SECONDS)
            if not self.plans:
                return
            try:
                states = await read(_decided_states, list(self.plans))
            except Exception:
                logger.exception("could not re-read the plans waited on")
                continue
            for plan_id, state in states.items():
                self.decided(plan_id, state)


def _call(waiter: Waiter, state: dict[str, Any] | None) -> None:
    try:
        waiter(state)
    except Exception:
        logger.exception("a plan waiter failed")


def _decided_states(plan_ids: list[int]) -> dict[int, dict[str, Any]]:
    from planmode.models import Plan, PlanStatus
    from planmode.services import plan_state

    plans = (
        Plan.objects.select_related("session", "agent", "agent__session", "decided_by")
        .filter(pk__in=plan_ids)
        .exclude(status=PlanStatus.PENDING)
    )
    return {plan.pk: plan_state(plan) for plan in plans}


_watches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Watch] = weakref.WeakKeyDictionary()


def watch_for(loop: asyncio.AbstractEventLoop | None = None) -> Watch:
    loop = loop or asyncio.get_running_loop()
    watch = _watches.get(loop)
    if watch is None:
        watch = _watches[loop] = Watch(loop)
    return watch


def plan_group(plan_pk: int) -> str:
    """Agents waiting on this plan's decision (agent sockets, held hooks) of every process."""
    return f"plan.{plan_pk}"
