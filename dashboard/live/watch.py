"""What this process's requests and sockets wait on, and how they are woken or let go.

Waiters wait for a decision on one thing of a kind: a plan, or a permission request. Once a write
that decided it has committed, `announce()` (called by the publisher, in the writer's thread)
wakes them by whichever way comes first:

- in this process: it hands the decision to the watch of every event loop at once;
- in the other processes of a team (with Redis): one PUBLISH on the decision bus, a Redis channel
  every process follows with one subscription, reaches them all; each wakes whoever waits on it
  there and ignores the rest. A decision costs one Redis command, and starting or ending a wait
  costs Redis nothing;
- that push was lost (the deciding process died between its commit and its push, Redis dropped
  the connection, or the decision was written by another program): every
  `AGENTBOARD_DECISION_RESYNC_SECONDS` one query per kind reads which of the things waited on
  here are no longer pending, and wakes their waiters. A subscription that comes back after a
  failure re-reads them at once.

So every connected waiter hears of a committed decision within the resync time at worst. The
registry holds only callbacks of this process's own waiters; the database stays the truth.

On a graceful stop (`stop()`), every waiter is let go at once with None, so held requests answer
before the server exits instead of being cut off.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings

from dashboard.core.changes import Changes
from dashboard.core.loops import PerLoop, keep

logger = logging.getLogger(__name__)

# Called on the event loop with the plan's (or request's) state once it left pending, or None
# when the server is stopping and the waiter must give up.
Waiter = Callable[[dict[str, Any] | None], None]
# What is waited on: ("plan", plan pk) or ("permission", permission request pk).
WaitKey = tuple[str, int]
PLAN = "plan"
PERMISSION = "permission"
# A decision as it travels: what was decided, and the state its waiters are told.
Decision = tuple[WaitKey, dict[str, Any]]
# How long a wait's start waits for this loop's first subscription to the decision bus (a Redis
# that does not answer by then is treated as down: the resync takes over).
SUBSCRIBE_SECONDS = 2.0
# How soon a lost subscription is tried again.
BUS_RETRY_SECONDS = 1.0


def bus_channel() -> str:
    return f"{settings.AGENTBOARD_REDIS_PREFIX}:decisions"


def bus_client_name(loop: asyncio.AbstractEventLoop | None = None) -> str:
    """How a loop's subscription shows in Redis's CLIENT LIST: prefix, process and loop."""
    loop = loop or asyncio.get_running_loop()
    return f"{bus_channel()}:{os.getpid()}:{id(loop):x}"


class Watch:
    """The waiters of one event loop; every method runs on that loop.

    With Redis, the loop follows the decision bus while anyone waits here (one subscription);
    waiting on one more thing costs nothing more."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: dict[WaitKey, set[Waiter]] = {}
        self.stopping = asyncio.Event()
        # Set while this loop's subscription to the decision bus is confirmed; `_bus_known` once
        # the latest attempt to subscribe has either succeeded or failed.
        self.following = asyncio.Event()
        self._bus_known = asyncio.Event()
        self._bus_failed = False
        self._follower: asyncio.Task[None] | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def add(self, pk: int, waiter: Waiter, kind: str = PLAN) -> None:
        """Wake `waiter` once this plan (or request) is decided; decisions of any process reach
        it from the moment this returns, so read its state after it, never before."""
        if self.stopping.is_set():
            self.loop.call_soon(waiter, None)
            return
        self.waiting.setdefault((kind, pk), set()).add(waiter)
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = self.loop.create_task(self._sweep())
        if settings.AGENTBOARD_REDIS_URL:
            await self._follow_bus()

    def discard(self, pk: int, waiter: Waiter, kind: str = PLAN) -> None:
        key = (kind, pk)
        waiters = self.waiting.get(key)
        if waiters is None:
            return
        waiters.discard(waiter)
        if not waiters:
            del self.waiting[key]
            if not self.waiting:
                self._idle()

    def decided(self, pk: int, state: dict[str, Any], kind: str = PLAN) -> None:
        """Wake everyone here waiting on this plan or request (each once: they leave the
        registry)."""
        waiters = self.waiting.pop((kind, pk), None)
        if waiters is None:
            return
        if not self.waiting:
            self._idle()
        for waiter in waiters:
            _call(waiter, state)

    def heard(self, decisions: list[Decision]) -> None:
        for (kind, pk), state in decisions:
            self.decided(pk, state, kind)

    def stop(self) -> None:
        """Let every waiter go now, and any that comes later at once."""
        self.stopping.set()
        waiting, self.waiting = self.waiting, {}
        for waiters in waiting.values():
            for waiter in waiters:
                _call(waiter, None)
        self._idle()

    async def close(self, timeout: float = 5) -> None:
        """Stop, and wait up to `timeout` until nothing of this watch runs on its loop any
        more (the bus subscription closed, a sweep cancelled): for a loop about to close."""
        self.stop()
        running = [task for task in self._tasks if task is not asyncio.current_task()]
        if running:
            await asyncio.wait(running, timeout=timeout)

    def _idle(self) -> None:
        """Nobody waits here any more: no task is left running (a test's loop may close)."""
        for task in (self._follower, self._sweeper):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
                keep(self._tasks, task)  # until its cancellation has run its course
        self._follower = self._sweeper = None
        self.following.clear()
        self._bus_known.clear()

    # --- the decision bus (Redis) ----------------------------------------------------------

    async def _follow_bus(self) -> None:
        if self._follower is None or self._follower.done():
            self._bus_known.clear()
            self._follower = self.loop.create_task(self._follow())
        if self._bus_known.is_set():
            return
        # Not wait_for: on Python 3.11 it can swallow a cancel that arrives as the event is
        # set, and a request that went away must hear its cancel.
        known = self.loop.create_task(self._bus_known.wait())
        try:
            await asyncio.wait([known], timeout=SUBSCRIBE_SECONDS)
        finally:
            known.cancel()
        if not self._bus_known.is_set():
            logger.warning(
                "Redis did not confirm the decision bus subscription within %s s; waiting agents "
                "rely on the resync until it does",
                SUBSCRIBE_SECONDS,
            )

    async def _follow(self) -> None:
        """Hear the decisions of every process, until cancelled; after a failure, subscribe
        again and re-read what is waited on here."""
        from redis import asyncio as aioredis

        while True:
            client = aioredis.Redis.from_url(
                settings.AGENTBOARD_REDIS_URL,
                socket_connect_timeout=5,
                socket_keepalive=True,
                client_name=bus_client_name(self.loop),
            )
            pubsub = client.pubsub()
            try:
                await pubsub.subscribe(bus_channel())
                async for message in pubsub.listen():
                    if message["type"] == "subscribe":
                        self.following.set()
                        self._bus_known.set()
                        if self._bus_failed:
                            self._bus_failed = False
                            await self._resync()
                    elif message["type"] == "message":
                        self.heard(_decoded(message["data"]))
                    if self._follower is not asyncio.current_task():
                        return  # nobody waits here any more
                raise ConnectionError("the decision bus subscription ended")
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning(
                    "lost the decision bus subscription; waiting agents rely on the resync "
                    "until it is back",
                    exc_info=True,
                )
                self._bus_failed = True
                self._bus_known.set()
            finally:
                self.following.clear()
                await _closed(pubsub, client)
            await asyncio.sleep(BUS_RETRY_SECONDS)

    # --- the resync ------------------------------------------------------------------------

    async def _sweep(self) -> None:
        while self.waiting and not self.stopping.is_set():
            await asyncio.sleep(settings.AGENTBOARD_DECISION_RESYNC_SECONDS)
            await self._resync()

    async def _resync(self) -> None:
        from dashboard.core.reader import read

        if not self.waiting:
            return
        try:
            states = await read(_decided_states, list(self.waiting))
        except Exception:
            logger.exception("could not re-read the plans and requests waited on")
            return
        for (kind, pk), state in states.items():
            self.decided(pk, state, kind)


async def _closed(pubsub: Any, client: Any) -> None:
    try:
        await pubsub.aclose()
        await client.aclose()
    except Exception:
        logger.debug("closing the decision bus connection failed", exc_info=True)


def _decoded(data: bytes) -> list[Decision]:
    """The decisions of one bus message. Anything else is dropped (another program may share
    the Redis): the resync still wakes whoever waits on it."""
    decisions: list[Decision] = []
    try:
        for kind, pk, state in json.loads(data):
            if kind not in (PLAN, PERMISSION) or type(pk) is not int:
                raise ValueError(kind, pk)
            if not isinstance(state, dict) or state.get("status") in (None, "pending"):
                raise ValueError(state)
            decisions.append(((kind, pk), state))
    except (ValueError, TypeError):
        logger.warning("ignored a malformed message on the decision bus: %.200r", data)
        return []
    return decisions


# --- announcing --------------------------------------------------------------------------------


def announce(changes: Changes) -> None:
    """After the commit of a write that decided plans or permission requests (any thread): wake
    their waiters in every event loop of this process, and with Redis in every other process."""
    decisions: list[Decision] = [((PLAN, pk), s) for pk, s in changes.decided_plans.items()]
    decisions += [((PERMISSION, pk), s) for pk, s in changes.decided_permissions.items()]
    if not decisions:
        return
    for loop, watch in watch_for.every():
        try:
            loop.call_soon_threadsafe(watch.heard, decisions)
        except RuntimeError:
            pass  # its loop closed meanwhile
    if settings.AGENTBOARD_REDIS_URL:
        _announcer.send(decisions)


class _Announcer:
    """Publishes decisions on the bus right after their commit, from the thread that committed
    them, before anyone is answered: the decision is on its way to the other processes before
    this one spends time on the reviewer's answer. One PUBLISH costs the writer one round trip
    to Redis; when Redis fails, decisions are not published for `PAUSE_SECONDS` (logged), so a
    Redis that hangs costs the writer at most one short timeout per pause. Waiters of other
    processes then hear of them at their next resync."""

    TIMEOUT_SECONDS = 0.5
    PAUSE_SECONDS = 5.0

    def __init__(self) -> None:
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._down_until = 0.0

    def send(self, decisions: list[Decision]) -> None:
        import redis

        if time.monotonic() < self._down_until:
            logger.info("Redis is failing; %d decision(s) left to the resync", len(decisions))
            return
        payload = json.dumps([[kind, pk, state] for (kind, pk), state in decisions])
        try:
            self._client(settings.AGENTBOARD_REDIS_URL).publish(bus_channel(), payload)
        except redis.RedisError:
            self._down_until = time.monotonic() + self.PAUSE_SECONDS
            logger.warning(
                "could not publish %d decision(s) to the other processes; their waiters hear of "
                "them at their next resync",
                len(decisions),
                exc_info=True,
            )

    def _client(self, url: str) -> Any:
        import redis

        with self._lock:
            client = self._clients.get(url)
            if client is None:
                client = self._clients[url] = redis.Redis.from_url(
                    url,
                    socket_timeout=self.TIMEOUT_SECONDS,
                    socket_connect_timeout=self.TIMEOUT_SECONDS,
                )
            return client


_announcer = _Announcer()


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
