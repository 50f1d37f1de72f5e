"""Writes of activity: every step of a batch in one statement, waits, interruptions, pruning."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from dashboard.activity import concerns
from dashboard.activity.models import Step, StepOutcome
from dashboard.activity.summaries import StepDraft
from dashboard.core.changes import Changes, Outcome, StepReport
from dashboard.core.services import agent_resolve_for_update, agent_touch, known_agent
from dashboard.core.writer import write

logger = logging.getLogger(__name__)

# Old steps deleted per write; the first pruning this long after the server starts, then daily.
PRUNE_CHUNK = 5000
PRUNE_FIRST_AFTER = 60.0
PRUNE_INTERVAL = 24 * 60 * 60.0

# What a later report of the same call changes (its start and what it waited on stay).
UPDATED_ON_CONFLICT = [
    "tool_name",
    "summary",
    "detail",
    "input_hash",
    "ended_at",
    "outcome",
    "error",
]


def steps_store(written: list[Changes]) -> None:
    """The writer's per-batch step: store every step reported by the batch's writes in one
    upsert (a call's end updates its start), then end the running steps of agents that were
    interrupted. Runs no query for a batch without any."""
    reports = [report for changes in written for report in changes.steps]
    interrupted: dict[int, datetime] = {}
    for changes in written:
        interrupted.update(changes.interrupted_agents)
    ended = concerns.ended_sessions_watched(written)
    if not reports and not interrupted and not ended:
        return
    # A savepoint: a failure here (logged by the writer) leaves the batch's writes whole.
    with transaction.atomic():
        if reports:
            stored = Step.objects.bulk_create(
                _merged(reports),
                update_conflicts=True,
                unique_fields=["agent", "tool_use_id"],
                update_fields=UPDATED_ON_CONFLICT,
            )
            for listener in STORED_LISTENERS:
                listener(stored)
        for agent_pk, at in interrupted.items():
            Step.objects.filter(
                agent_id=agent_pk, outcome=StepOutcome.RUNNING, started_at__lte=at
            ).update(outcome=StepOutcome.INTERRUPTED, ended_at=at)
        concerns.watched_load()
        if reports:
            concerns.concerns_note(reports, written)
        if interrupted:
            concerns.concerns_end_for_stopped(interrupted, written)
        if ended:
            concerns.concerns_end_for_sessions(ended)


def _merged(reports: list[StepReport]) -> list[Step]:
    """One row per call: the start and the end of a call reported in the same batch (or the
    same report delivered twice) become one, as an upsert must affect a row only once."""
    steps: dict[tuple[int, str], Step] = {}
    for report in reports:
        key = (report.agent, report.tool_use_id)
        ended = report.outcome != StepOutcome.RUNNING
        step = steps.get(key)
        if step is None:
            steps[key] = Step(
                agent_id=report.agent,
                session_id=report.session,
                tool_use_id=report.tool_use_id,
                tool_name=report.tool_name,
                summary=report.summary,
                detail=report.detail,
                input_hash=report.input_hash,
                started_at=report.at,
                ended_at=report.at if ended else None,
                outcome=report.outcome,
                error=report.error,
            )
            continue
        step.tool_name = report.tool_name
        step.summary = report.summary or step.summary
        step.detail = report.detail or step.detail
        step.input_hash = report.input_hash or step.input_hash
        if ended:
            step.ended_at, step.outcome, step.error = report.at, report.outcome, report.error
        step.started_at = min(step.started_at, report.at)
    return list(steps.values())


def step_interrupted(changes: Changes, *, agent_pk: int, at: datetime | None = None) -> Changes:
    """The agent stopped or took a new prompt: a call of its still running did not end well."""
    changes.interrupted_agents[agent_pk] = at or timezone.now()
    return changes


def step_wait_record(*, agent_pk: int, tool_name: str, waited_on: str) -> None:
    """A person is asked about this agent's running call of `tool_name` (a permission request,
    a plan): its step says so. Inside the writer's transaction."""
    assert transaction.get_connection().in_atomic_block
    latest = (
        Step.objects.filter(agent_id=agent_pk, tool_name=tool_name, outcome=StepOutcome.RUNNING)
        .order_by("-started_at", "-pk")
        .values("pk")[:1]
    )
    Step.objects.filter(pk__in=latest).update(waited_on=waited_on[:40])


# Told the steps a batch stored (with their pks), in its transaction (search indexes them
# without reading them again); registered by the apps above that keep something of a step.
STORED_LISTENERS: list[Callable[[list[Step]], None]] = []
# Told the pks of the steps a prune deletes, in its transaction (search drops their entries);
# registered by the apps above that keep something of a step.
PRUNE_LISTENERS: list[Callable[[list[int]], None]] = []


def activity_prune(
    *, days: float | None = None, now: datetime | None = None, limit: int = PRUNE_CHUNK
) -> int:
    """Delete up to `limit` of the steps that started more than `days`
    (AGENTBOARD_ACTIVITY_DAYS) ago; returns how many. A chunk at a time, so the writer, which
    every hook waits for, is never held long. Todo revisions, plans and decisions are kept."""
    days = settings.AGENTBOARD_ACTIVITY_DAYS if days is None else days
    cutoff = (now or timezone.now()) - timedelta(days=days)
    old = list(
        Step.objects.filter(started_at__lt=cutoff).order_by().values_list("pk", flat=True)[:limit]
    )
    if not old:
        return 0
    deleted, _ = Step.objects.filter(pk__in=old).delete()
    for listener in PRUNE_LISTENERS:
        listener(old)
    return deleted


async def activity_prune_all(*, days: float | None = None) -> int:
    """Every old step, a chunk per write; returns how many were deleted."""
    total = 0
    while True:
        deleted = await write(activity_prune, days=days)
        total += deleted
        if deleted < PRUNE_CHUNK:
            return total


async def activity_prune_forever() -> None:
    """The server's daily pruning: soon after it starts, then once a day."""
    await asyncio.sleep(PRUNE_FIRST_AFTER)
    while True:
        try:
            deleted = await activity_prune_all()
            if deleted:
                logger.info("deleted %d steps older than the activity kept", deleted)
        except Exception:
            logger.exception("could not prune old activity")
        await asyncio.sleep(PRUNE_INTERVAL)


def step_record_for(
    *, owner: AbstractBaseUser, session_id: str, agent_id: str, step: StepDraft
) -> Outcome[None]:
    """An API agent's step. An agent this process knows costs no query (the writer stores the
    batch's steps together); another is created on first mention, as the API does."""
    known = known_agent(owner=owner, session_id=session_id, agent_id=agent_id)
    if known is not None:
        return Outcome(None, Changes().step(step.report(agent=known[0], session=known[1])))
    resolved = agent_resolve_for_update(owner=owner, session_id=session_id, agent_id=agent_id)
    agent_touch(agent=resolved.agent)
    agent = resolved.agent
    changes = resolved.changes().step(step.report(agent=agent.pk, session=agent.session_id))
    return Outcome(None, changes)
