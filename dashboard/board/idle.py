"""The server's sweeps: sessions end when their agents go quiet, and held requests whose
server process died expire (`planmode.orphans`).

Claude Code says SessionEnd only when it exits cleanly; a closed laptop, a killed terminal or
an agent of our API never does. So each server process sweeps now and then: sessions without
a word from any agent for AGENTBOARD_SESSION_IDLE_MINUTES get `ended_at` in the database (the
truth every page and process reads), through the writer, so their rows and boards update live
like after any other write. The sweep is one indexed query a minute; pages pay nothing. Two
processes sweeping at once end each session once (the update is conditional). Any later
report from the session's agents brings it back (`agent_touch`, `todo_list_store`).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from dashboard.core.changes import Changes, Outcome
from dashboard.models import Session
from planmode.models import PlanStatus
from planmode.orphans import orphans_expire
from todos.models import Continuation

logger = logging.getLogger(__name__)

LONGEST_SWEEP_INTERVAL = 60.0
SHORTEST_SWEEP_INTERVAL = 0.5


def idle_after() -> timedelta | None:
    minutes = settings.AGENTBOARD_SESSION_IDLE_MINUTES
    return timedelta(minutes=minutes) if minutes > 0 else None


def sessions_end_idle() -> Outcome[list[int]]:
    """End every running session quiet for longer than the idle time. A session whose plan
    waits for a reviewer, or whose agent is in a continuation countdown, is waiting on
    someone, not idle."""
    quiet = idle_after()
    if quiet is None:
        return Outcome([])
    now = timezone.now()
    with transaction.atomic(savepoint=False):
        idle = (
            Session.objects.filter(ended_at__isnull=True, last_seen_at__lt=now - quiet)
            .exclude(plans__status=PlanStatus.PENDING)
            .exclude(agents__continuations__status=Continuation.Status.COUNTING)
            .values_list("pk", flat=True)
        )
        pks = list(idle)
        if pks:
            Session.objects.filter(pk__in=pks, ended_at__isnull=True).update(
                ended_at=now, ended_quietly=True
            )
    return Outcome(pks, Changes(sessions=set(pks), ended_sessions=set(pks)))


def sweep_interval() -> float:
    quiet = idle_after()
    if quiet is None:
        return LONGEST_SWEEP_INTERVAL
    return max(SHORTEST_SWEEP_INTERVAL, min(LONGEST_SWEEP_INTERVAL, quiet.total_seconds() / 4))


ORPHAN_SWEEP_INTERVAL = 2.0


async def expire_orphans_forever() -> None:
    """Once at start (requests held by a process that died while none ran), then every
    ORPHAN_SWEEP_INTERVAL seconds: one small indexed query while nothing is orphaned."""
    from dashboard.core.writer import write

    while True:
        try:
            await write(orphans_expire)
        except Exception:
            logger.exception("could not expire orphaned requests")
        await asyncio.sleep(ORPHAN_SWEEP_INTERVAL)


async def end_idle_sessions_forever() -> None:
    """The server's sweep: once soon after start (sessions that went quiet while it was
    down), then every `sweep_interval()` seconds."""
    from dashboard.core.writer import write

    await asyncio.sleep(SHORTEST_SWEEP_INTERVAL)
    while True:
        if idle_after() is not None:
            try:
                await write(sessions_end_idle)
            except Exception:
                logger.exception("could not end idle sessions")
        await asyncio.sleep(sweep_interval())
