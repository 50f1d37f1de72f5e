"""Short database reads for code on the event loop, on one long-lived thread.

Held hooks, sockets and a reviewer's decision run on the event loop and must not block it on
the database. Django would run their reads in a thread that opens a connection for each request
(`CONN_MAX_AGE` 0) and closes it at the next request signal; connecting costs more than the
reads themselves. Here they queue, in arrival order, for one thread whose connection stays
open. A database error drops the connection; the next read opens a fresh one (a restarted
PostgreSQL, say).

Renders have their own thread (`dashboard.live.publisher`), so a read never waits behind a
board render.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from django.db import DatabaseError, connections

T = TypeVar("T")

_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentboard-read")


def _run(func: Callable[..., T], args: tuple[Any, ...]) -> T:
    try:
        return func(*args)
    except DatabaseError:
        connections.close_all()
        raise


async def read(func: Callable[..., T], /, *args: Any) -> T:
    """`func(*args)` on the reading thread; its result once done."""
    return await asyncio.wrap_future(_executor.submit(_run, func, args))


def drain(timeout: float = 10) -> None:
    """Return once the reads queued so far are done (tests)."""
    _executor.submit(lambda: None).result(timeout)


def close_connection() -> None:
    """Close the reading thread's database connection (tests, shutdown)."""
    _executor.submit(connections.close_all).result(10)
