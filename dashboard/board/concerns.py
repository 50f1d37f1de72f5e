"""The server's sweep for agents that need a look without a step saying so: stuck (a task in
progress, no step and no word for AGENTBOARD_STUCK_MINUTES, nothing waiting on a person) and
running long (a step running past its tool's limit in AGENTBOARD_STEP_LIMITS).

Every AGENTBOARD_CONCERN_SWEEP_SECONDS, through the writer: one bounded query per kind switched
on (and one for what waits on a person, only when an agent is found), then
`concerns_reconcile` opens the new episodes and ends those whose agent moved on. Loops are
found in the write path (`dashboard.activity.concerns`).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from functools import reduce
from operator import or_

from django.conf import settings
from django.db.models import Exists, Max, OuterRef, Q
from django.utils import timezone

from dashboard.activity.concerns import Found, concerns_reconcile, watched_refresh
from dashboard.activity.models import ConcernKind, Step, StepOutcome
from dashboard.core.changes import Outcome
from dashboard.models import Agent
from planmode.inbox import waiting
from todos.models import Todo, TodoStatus

logger = logging.getLogger(__name__)

# At most this many agents found per kind and sweep.
SWEEP_LIMIT = 200


def _minutes(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes >= 1 else f"{round(seconds)} s"


def _stuck(now) -> list[Found]:
    minutes = settings.AGENTBOARD_STUCK_MINUTES
    if minutes <= 0:
        return []
    cutoff = now - timedelta(minutes=minutes)
    in_progress = Todo.objects.filter(agent=OuterRef("pk"), status=TodoStatus.IN_PROGRESS)
    running = Step.objects.filter(agent=OuterRef("pk"), outcome=StepOutcome.RUNNING)
    rows = (
        Agent.objects.filter(
            Exists(in_progress),
            ~Exists(running),
            status=Agent.Status.RUNNING,
            session__ended_at__isnull=True,
            last_seen_at__lt=cutoff,
        )
        .annotate(last_start=Max("steps__started_at"), last_end=Max("steps__ended_at"))
        .filter(Q(last_start__isnull=True) | Q(last_start__lt=cutoff))
        .filter(Q(last_end__isnull=True) | Q(last_end__lt=cutoff))
        .values_list("pk", "session_id", "last_seen_at", "last_start", "last_end")
        .order_by("pk")[:SWEEP_LIMIT]
    )
    found = []
    for pk, session, seen, start, end in rows:
        since = max(t for t in (seen, start, end) if t is not None)
        found.append((pk, session, since))
    if not found:
        return []
    tasks = dict(
        Todo.objects.filter(
            agent_id__in=[pk for pk, _, _ in found], status=TodoStatus.IN_PROGRESS
        ).values_list("agent_id", "content")
    )
    return [
        Found(
            pk,
            session,
            ConcernKind.STUCK,
            since,
            f"no step while '{tasks.get(pk, 'a task')}' is in progress",
        )
        for pk, session, since in found
    ]


def _overlong(now) -> list[Found]:
    limits: dict[str, float] = settings.AGENTBOARD_STEP_LIMITS
    if not limits:
        return []
    late = reduce(
        or_,
        (
            Q(tool_name=tool, started_at__lt=now - timedelta(seconds=seconds))
            for tool, seconds in limits.items()
        ),
    )
    fields = ("agent_id", "session_id", "tool_name", "summary", "started_at", "tool_use_id")
    steps = (
        Step.objects.filter(late, outcome=StepOutcome.RUNNING, session__ended_at__isnull=True)
        .filter(agent__status=Agent.Status.RUNNING)
        .order_by("started_at")
        .values_list(*fields)[:SWEEP_LIMIT]
    )
    found: dict[int, Found] = {}
    for agent, session, tool, summary, started, call in steps:
        if agent in found:
            continue
        what = f"“{summary}”" if summary else tool
        limit = _minutes(limits[tool])
        detail = f"{what} has run longer than the {tool} limit of {limit}"
        found[agent] = Found(agent, session, ConcernKind.OVERLONG, started, detail, call)
    return list(found.values())


def concerns_sweep() -> Outcome[list[int]]:
    """Inside the writer: open and end stuck and running-long episodes."""
    now = timezone.now()
    found = _stuck(now) + _overlong(now)
    if found:
        # Not when a person is asked something of the agent: that is counted already.
        asked = {w.agent_id for w in waiting(agents=[f.agent for f in found]) if w.kind != "look"}
        found = [f for f in found if f.agent not in asked]
    return concerns_reconcile(found, [ConcernKind.STUCK, ConcernKind.OVERLONG])


async def sweep_concerns_forever() -> None:
    """The server's sweep, every AGENTBOARD_CONCERN_SWEEP_SECONDS; it also refreshes which
    agents have an open episode (another process may have opened it)."""
    from dashboard.core.writer import write

    while True:
        await asyncio.sleep(settings.AGENTBOARD_CONCERN_SWEEP_SECONDS)
        try:
            if settings.AGENTBOARD_STUCK_MINUTES <= 0 and not settings.AGENTBOARD_STEP_LIMITS:
                # Still learn of loops another process opened: their next step ends them here.
                await write(watched_refresh)
            else:
                await write(concerns_sweep)
        except Exception:
            logger.exception("could not sweep for stuck agents")
