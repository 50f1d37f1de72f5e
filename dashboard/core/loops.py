"""What lives on an event loop: the server's (or a test's) registries, one of each per loop,
the tasks they start, and a loop's own channel on the channel layer."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, TypeVar

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)
T = TypeVar("T")


class PerLoop(Generic[T]):
    """One `T` per event loop, made on first use and gone with its loop."""

    def __init__(self, make: Callable[[asyncio.AbstractEventLoop], T]) -> None:
        self._make = make
        self._made: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = (
            weakref.WeakKeyDictionary()
        )
        # Loops of other threads may make theirs while `every()` looks.
        self._lock = threading.Lock()

    def __call__(self, loop: asyncio.AbstractEventLoop | None = None) -> T:
        loop = loop or asyncio.get_running_loop()
        made = self._made.get(loop)
        if made is None:
            with self._lock:
                made = self._made.get(loop)
                if made is None:
                    made = self._made[loop] = self._make(loop)
        return made

    def made(self, loop: asyncio.AbstractEventLoop) -> T | None:
        """The loop's `T` if it was made, without making it."""
        return self._made.get(loop)

    def every(self) -> list[tuple[asyncio.AbstractEventLoop, T]]:
        """Each open loop's `T` (from any thread)."""
        with self._lock:
            made = list(self._made.items())
        return [(loop, each) for loop, each in made if not loop.is_closed()]


def keep(tasks: set[asyncio.Task[Any]], task: asyncio.Task[Any]) -> asyncio.Task[Any]:
    """Hold a reference to `task` in `tasks` until it is done (the loop holds only a weak
    one)."""
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    return task


async def listen(
    channel: str,
    handle: Callable[[dict[str, Any]], Awaitable[None] | None],
    *,
    failing: str,
    retry_seconds: float,
) -> None:
    """Hand every message of `channel` to `handle`, until cancelled. A failed read is logged
    (`failing` says what then happens) and tried again after `retry_seconds`."""
    layer = get_channel_layer()
    while True:
        try:
            message = await layer.receive(channel)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("could not receive from the channel layer; %s", failing)
            await asyncio.sleep(retry_seconds)
            continue
        handled = handle(message)
        if handled is not None:
            await handled


class Arrivals:
    """At most `at_once` requests of a kind doing their arrival work at the same time, on each
    event loop: the others wait their turn, in arrival order, doing nothing.

    A loop runs its ready tasks in turn, so when hundreds of requests arrive at one instant
    (a team's agents restarting together, each submitting a plan it will wait on) each step of
    any other request waits behind a step of every one of them. Let in a few at a time, they
    take as long as they did, and the other requests pass between them. A request leaves the
    gate when its arrival work is done (`arrived()`, from inside), or when it ends."""

    def __init__(self, at_once: int) -> None:
        self._gates: PerLoop[asyncio.Semaphore] = PerLoop(lambda loop: asyncio.Semaphore(at_once))
        self._leave: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
            "arrival", default=None
        )

    @contextlib.asynccontextmanager
    async def arriving(self) -> AsyncIterator[None]:
        gate = self._gates()
        await gate.acquire()
        inside = True

        def leave() -> None:
            nonlocal inside
            if inside:
                inside = False
                gate.release()

        token = self._leave.set(leave)
        try:
            yield
        finally:
            self._leave.reset(token)
            leave()

    def arrived(self) -> None:
        """The request (this task) has done its arrival work: the next one may come in."""
        leave = self._leave.get()
        if leave is not None:
            leave()
