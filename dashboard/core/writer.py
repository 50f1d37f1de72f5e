"""Group commit: every write of this process runs in one writer thread, many per transaction.

An agent's hook waits for its answer, so a write must be cheap for the request that makes it.
Requests hand their write (a domain service call) to the writer and wait; the writer takes
everything queued, applies each write in arrival order inside one transaction (each in its own
savepoint, so a refused write leaves no trace and never takes others down), commits once, and
only then answers each request and hands what changed to the publisher. So a 200 still means
the write is durable, one commit serves many requests, and writes of one agent keep their order.
The writer keeps its database connection open; waiting requests hold none.

Some writes can wait: a held hook's plan or permission request is stored for a person who
decides in seconds or minutes (`write_behind`). Those go behind the others, in batches of
their own: one is written only when no other write waits (or when the oldest of them has
waited BEHIND_MAX_WAIT, so that they go on under any load), and a batch of them ends after
BEHIND_SLICE or as soon as another write arrives. So in a burst of hundreds of held hooks (a
team restarting its agents) another agent's write waits for at most one of them, however slow
each is on a busy machine. Writes of one agent still keep their order: an agent whose hook is
held sends nothing else until it is answered.

With several server processes each has its own writer; the databases' own locking (SQLite's
IMMEDIATE transactions, PostgreSQL's row locks taken by the services) keeps them apart. When
PostgreSQL ends a write to break a deadlock between two processes' batches, what came before it
commits, and it runs again in a new transaction: the request waits longer, but is not refused.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db import DatabaseError, connection, transaction

from dashboard.core.changes import Changes
from dashboard.core.errors import ServiceError

logger = logging.getLogger(__name__)

T = TypeVar("T")
# What a write's changes set going besides the write itself. The floors above register these
# when their apps are ready (this floor knows nothing of them): the notifications' outbox rows,
# written inside the write's own transaction so they commit with it; and the live publisher,
# told after the commit on the event loop of the request that waits (None outside any loop).
WithinWrite = Callable[[Changes], None]
# Once per batch, inside its transaction, with the changes of every write that succeeded (the
# activity app stores all their steps in one statement), in a savepoint of its own when it
# has anything to write.
WithinBatch = Callable[[list[Changes]], None]
AfterCommit = Callable[..., None]  # (changes, *, loop)
MAX_BATCH = 200
# A batch of writes that can wait (`write_behind`) ends after this long (it writes at least
# one), or as soon as another write is queued.
BEHIND_SLICE = 0.01
# Writes that can wait go only when no other write waits, except the oldest of them once it
# has waited this long: under any load they go on, one a batch.
BEHIND_MAX_WAIT = 0.5
# Writers of two processes can each hold a row the other waits for (each takes the rows of
# its batch's agents in its own arrival order): PostgreSQL then ends one of the two writes (after
# its deadlock_timeout, 1 s by default). That write runs again, in a transaction of its own, up
# to this many times before its request is told the database is busy.
LOCK_CONFLICT_RETRIES = 3
LOCK_CONFLICTS = {"40P01", "40001"}  # deadlock detected, serialization failure


@dataclass
class _Job:
    func: Callable[..., Any]
    kwargs: dict[str, Any]
    # The event loop of the request that waits, where its changes are published; None for
    # callers outside any loop (management commands).
    loop: asyncio.AbstractEventLoop | None
    future: Future = field(default_factory=Future)
    # Its request can wait behind the others' (`write_behind`).
    behind: bool = False
    queued_at: float = field(default_factory=time.monotonic)


class _Stop:
    """Queued by `stop()`: the writer ends once everything queued before it is written."""


_STOP = _Stop()


@dataclass
class _BehindSlice:
    """A batch of writes that can wait: it takes them one at a time until `until`."""

    until: float


# A write's result, or the error that refused it.
_Outcome = tuple["_Job", Any, BaseException | None]


def changes_of(result: object) -> Changes:
    changes = getattr(result, "changes", None)
    return changes if isinstance(changes, Changes) else Changes()


def _busy() -> ServiceError:
    return ServiceError(
        "database_unavailable",
        "The server could not save this right now because its database is busy; try again.",
        status=503,
    )


class Writer:
    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Job | threading.Event | _Stop] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        # Writes that can wait, taken from the queue and not written yet.
        self._behind: collections.deque[_Job] = collections.deque()
        # Other writes submitted and not taken from the queue yet (read without the lock: a
        # moment's staleness only ends or lengthens a batch of those that can wait by one).
        self._others_queued = 0
        self._count_lock = threading.Lock()
        self.within_write: list[WithinWrite] = []
        self.within_batch: list[WithinBatch] = []
        self.after_commit: list[AfterCommit] = []
        # Jobs the floors above hold back a moment, so that one takes what many batches
        # stored (the search index job): each of these queues its job now, when called on a
        # drain or a stop.
        self.held_back: list[Callable[[], None]] = []

    def _ensure_running(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="agentboard-writer")
                self._thread.daemon = True
                self._thread.start()

    def submit(
        self,
        func: Callable[..., T],
        kwargs: dict[str, Any],
        loop: asyncio.AbstractEventLoop | None,
        *,
        behind: bool = False,
    ) -> Future:
        job = _Job(func=func, kwargs=kwargs, loop=loop, behind=behind)
        self._ensure_running()
        if not behind:
            with self._count_lock:
                self._others_queued += 1
        self._queue.put(job)
        return job.future

    def in_writer_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def drain(self, timeout: float = 10) -> None:
        """Return once the writes queued so far are committed and answered, and those they
        queued in turn (a long index job goes on in a job of its own), the jobs held back
        included (tests)."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        deadline = time.monotonic() + timeout
        while True:
            self._queue_held_back()
            done = threading.Event()
            self._queue.put(done)
            if not done.wait(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"the writer did not finish its queued writes in {timeout} s")
            if self._queue.empty() and not self._behind:
                return

    def stop(self) -> None:
        """Finish what is queued, close the connection and end the thread (tests, shutdown)."""
        thread = self._thread
        if thread is not None and thread.is_alive():
            self._queue_held_back()
            self._queue.put(_STOP)
            thread.join(10)
        self._thread = None

    def _queue_held_back(self) -> None:
        for queue_now in self.held_back:
            queue_now()

    def _run(self) -> None:
        try:
            while True:
                batch, control = self._take()
                if batch:
                    self._apply(batch)
                if control is None and self._behind_may_go():
                    self._apply([], _BehindSlice(until=time.perf_counter() + BEHIND_SLICE))
                if control is _STOP:
                    return
                if isinstance(control, threading.Event):
                    control.set()  # a drain: what came before it is answered
        finally:
            connection.close()

    def _take(self) -> tuple[list[_Job], threading.Event | _Stop | None]:
        """The writes to make next, in order: those queued (up to MAX_BATCH; those that can
        wait are set aside, for batches of their own); or, up to a stop or a drain,
        everything queued before it, returned beside it to be acted on once written."""
        batch: list[_Job] = []
        try:
            item = self._queue.get_nowait() if self._behind else self._queue.get()
        except queue.Empty:
            item = None
        while isinstance(item, _Job):
            if item.behind:
                self._behind.append(item)
            else:
                batch.append(item)
                if len(batch) == MAX_BATCH:
                    break
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                item = None
        if batch:
            with self._count_lock:
                self._others_queued -= len(batch)
        if item is not None and not isinstance(item, _Job):
            batch += self._behind
            self._behind.clear()
            return batch, item
        return batch, None

    def _behind_may_go(self) -> bool:
        """Whether a batch of writes that can wait goes now: none other waits, or the oldest
        of them has waited BEHIND_MAX_WAIT."""
        if not self._behind:
            return False
        return (
            self._others_queued <= 0
            or time.monotonic() - self._behind[0].queued_at >= BEHIND_MAX_WAIT
        )

    def _behind_added(self, jobs: list[_Job], behind: _BehindSlice | None) -> bool:
        """Append to `jobs` the next write that can wait, if this is a batch of them and it
        has time for it: the first always, the next ones until its slice ends or another write
        is queued."""
        if behind is None:
            return False
        if jobs and (time.perf_counter() >= behind.until or self._others_queued > 0):
            return False
        while self._behind and len(jobs) < MAX_BATCH:
            job = self._behind.popleft()
            if job.future.set_running_or_notify_cancel():
                jobs.append(job)
                return True
        return False

    def _apply(self, batch: list[_Job], behind: _BehindSlice | None = None) -> None:
        """Write `batch` in one transaction, or with `behind` a batch of the writes that can
        wait."""
        # A request that went away before its turn (its waiting task was cancelled) is not
        # written; one that is running can no longer be cancelled.
        jobs = [job for job in batch if job.future.set_running_or_notify_cancel()]
        for _ in range(LOCK_CONFLICT_RETRIES + 1):
            outcomes, jobs = self._transaction(jobs, behind)
            self._answer(outcomes)
            if not jobs:
                return
            behind = None  # those that lost a conflict run again, and no others
            logger.info("%d write(s) lost a lock conflict; running them again", len(jobs))
        for job in jobs:
            _refuse(job.future, _busy())

    def _transaction(
        self, jobs: list[_Job], behind: _BehindSlice | None = None
    ) -> tuple[list[_Outcome], list[_Job]]:
        """Apply `jobs` in order in one transaction and commit. Returns each applied write's
        outcome, and the writes left for another transaction: from the first one PostgreSQL
        ended to break a lock conflict with another process, on."""
        outcomes: list[_Outcome] = []
        left: list[_Job] = []
        try:
            with transaction.atomic():
                index = 0
                while index < len(jobs) or self._behind_added(jobs, behind):
                    job = jobs[index]
                    index += 1
                    try:
                        # A savepoint keeps a refused write from taking the others down; a
                        # write alone needs none (if it fails, nothing is committed).
                        alone = len(jobs) == 1 and not (behind and self._behind)
                        with transaction.atomic(savepoint=not alone):
                            result = job.func(**job.kwargs)
                            changes = changes_of(result)
                            for listener in self.within_write:
                                listener(changes)
                            outcomes.append((job, result, None))
                    except Exception as error:
                        if _lost_a_lock_conflict(error):
                            # What came before commits and lets go of its rows, so the
                            # other process can finish; this write and the rest run after.
                            left = jobs[index - 1 :]
                            break
                        outcomes.append((job, None, error))
                self._batch_done([changes_of(result) for _, result, err in outcomes if err is None])
        except DatabaseError:
            logger.exception("a write batch of %d could not be committed", len(jobs))
            connection.close_if_unusable_or_obsolete()
            for job in jobs:
                _refuse(job.future, _busy())
            return [], []
        except BaseException as error:  # pragma: no cover - the thread must answer everyone
            for job in jobs:
                _refuse(job.future, error)
            raise
        return outcomes, left

    def _batch_done(self, written: list[Changes]) -> None:
        """The per-batch listeners. What they add (a record of activity) must never take the
        batch's writes down with it: each runs its queries in a savepoint of its own, and its
        failure is logged."""
        for listener in self.within_batch:
            try:
                listener(written)
            except Exception:
                logger.exception("a write batch's %s failed", listener.__qualname__)

    def _answer(self, outcomes: list[_Outcome]) -> None:
        """After the commit: hand what changed to the publisher, then answer each request.
        The changes of a batch go out together, once per event loop that waits on it: every
        tool call of an agent changes its card, and one hand-over per batch costs its loop one
        wake-up instead of one per write."""
        published: dict[asyncio.AbstractEventLoop | None, Changes] = {}
        for job, result, error in outcomes:
            changes = changes_of(result) if error is None else None
            if changes:
                published.setdefault(job.loop, Changes()).merge(changes)
        for loop, changes in published.items():
            for listener in self.after_commit:
                listener(changes, loop=loop)
        for job, result, error in outcomes:
            if error is not None:
                if not isinstance(error, ServiceError):
                    logger.error("a write failed", exc_info=error)
                job.future.set_exception(error)
                continue
            job.future.set_result(result)


def _lost_a_lock_conflict(error: Exception) -> bool:
    """PostgreSQL ended this write to break a deadlock (or a serialization conflict)."""
    return isinstance(error, DatabaseError) and (
        getattr(error.__cause__, "sqlstate", None) in LOCK_CONFLICTS
    )


def _refuse(future: Future, error: BaseException) -> None:
    """Answer with an error unless already answered or given up on (from another thread)."""
    try:
        if not future.done():
            future.set_exception(error)
    except InvalidStateError:
        pass


writer = Writer()


async def write(func: Callable[..., T], /, **kwargs: Any) -> T:
    """Run `func(**kwargs)` in the writer and return its result once it is committed."""
    future = writer.submit(func, kwargs, asyncio.get_running_loop())
    return await asyncio.wrap_future(future)


async def write_behind(func: Callable[..., T], /, **kwargs: Any) -> T:
    """The same, for a write whose request can wait behind others': a held hook's plan or
    permission request, which then waits for a person anyway."""
    future = writer.submit(func, kwargs, asyncio.get_running_loop(), behind=True)
    return await asyncio.wrap_future(future)


def write_sync(func: Callable[..., T], /, **kwargs: Any) -> T:
    """The same for code that runs outside an event loop (management commands)."""
    if writer.in_writer_thread():
        return func(**kwargs)
    assert not connection.in_atomic_block, "a write through the writer commits on its own"
    return writer.submit(func, kwargs, None).result()
