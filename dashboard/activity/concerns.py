"""Agents that need a look: the same failing call again and again (looping), caught in the
write path when a failed step is stored.

Healthy steps cost no query: only a failed call reads that agent's last few steps, and only an
agent that this process knows to have an open episode (`_watched`) has it ended by its next
step. An episode is a `Concern` row, open until the agent's next healthy step (an ok, or a
different call), until the agent stops, or until someone dismisses it.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from dashboard.activity.models import Concern, ConcernKind, Step, StepOutcome
from dashboard.activity.summaries import bounded_text
from dashboard.core.changes import Changes, Outcome, StepReport

# Agents with an open looping episode in this process's view -> the repeated call's hash.
# Filled when this process opens one and from the database at start; a stale entry costs one
# harmless update, never a wrong answer.
_watched: dict[int, str] = {}
_loaded = False


def watched_load() -> None:
    """Once per process: what is open already (one query)."""
    global _loaded
    if not _loaded:
        watched_refresh()


def watched_forget() -> None:
    """Tests: the next batch reads what is open again."""
    global _loaded
    _loaded = False
    _watched.clear()


def watched_refresh() -> None:
    """What is open now, from the database (another process may have opened or ended it)."""
    global _loaded
    open_ = Concern.objects.filter(ended_at__isnull=True, kind=ConcernKind.LOOPING)
    _loaded = True
    _watched.clear()
    _watched.update(open_.values_list("agent_id", "input_hash"))


def loop_repeats() -> int:
    return settings.AGENTBOARD_LOOP_REPEATS


def concerns_note(reports: list[StepReport], written: list[Changes]) -> None:
    """After a batch's steps are stored (inside its transaction): end the looping episodes
    that a healthy step ends, and open one for an agent whose last calls all failed alike."""
    ending: dict[int, StepReport] = {}
    failing: dict[int, StepReport] = {}
    for report in reports:
        if report.outcome == StepOutcome.FAILED and report.input_hash:
            failing[report.agent] = report
        loop = _watched.get(report.agent)
        if loop is not None and (report.outcome == StepOutcome.OK or report.input_hash != loop):
            ending[report.agent] = report
            failing.pop(report.agent, None)
    for agent_pk, report in ending.items():
        _end(agent_pk, report.session, report.at, "healthy step", written)
    for agent_pk, report in failing.items():
        if agent_pk not in _watched:
            _loop_check(report, written)


def concerns_end_for_stopped(stopped: dict[int, datetime], written: list[Changes]) -> None:
    """Agents that stopped or took a new prompt: their episodes end."""
    for agent_pk, at in stopped.items():
        if agent_pk in _watched:
            session = Concern.objects.filter(agent_id=agent_pk).values_list("session_id")[:1]
            _end(agent_pk, session[0][0] if session else None, at, "agent stopped", written)


def _end(agent_pk: int, session_pk: int | None, at: datetime, reason: str, written) -> None:
    ended = Concern.objects.filter(agent_id=agent_pk, ended_at__isnull=True).update(
        ended_at=at, end_reason=reason
    )
    _watched.pop(agent_pk, None)
    if ended and session_pk is not None:
        _publish(written, agent_pk, session_pk)


def _loop_check(report: StepReport, written: list[Changes]) -> None:
    """One bounded query: the agent's last LOOP_REPEATS ended calls, all this failed one?"""
    repeats = loop_repeats()
    last = list(
        Step.objects.filter(agent_id=report.agent)
        .exclude(outcome=StepOutcome.RUNNING)
        .order_by("-started_at", "-pk")
        .values_list("outcome", "input_hash", "started_at")[:repeats]
    )
    if len(last) < repeats or any(
        outcome != StepOutcome.FAILED or input_hash != report.input_hash
        for outcome, input_hash, _ in last
    ):
        return
    # A loop someone dismissed comes back only after as many failures again.
    if Concern.objects.filter(
        agent_id=report.agent, kind=ConcernKind.LOOPING, ended_at__gte=last[-1][2]
    ).exists():
        return
    what = f"`{report.summary}`" if report.summary else report.tool_name
    detail = bounded_text(f"{what} failed {repeats} times in a row")
    try:
        with transaction.atomic():
            concern = Concern.objects.create(
                agent_id=report.agent,
                session_id=report.session,
                kind=ConcernKind.LOOPING,
                since=report.at,
                detail=detail,
                input_hash=report.input_hash,
            )
    except IntegrityError:
        concern = None  # another process opened it first: one episode, notified there
    _watched[report.agent] = report.input_hash
    _publish(written, report.agent, report.session, opened=concern)


def _publish(
    written: list[Changes], agent_pk: int, session_pk: int, opened: Concern | None = None
) -> None:
    """The agent's card, its session's row and the inbox re-render; a new episode notifies."""
    if not written:
        return
    changes = written[0]
    changes.agents[agent_pk] = session_pk
    changes.inbox_sessions.add(session_pk)
    if opened is not None:
        changes.opened_concerns.add(opened.pk)


def concern_dismiss(*, concern_pk: int, by: str) -> Outcome[bool]:
    """Someone looked: the episode ends (inside the writer). False if it had ended already."""
    now = timezone.now()
    concern = Concern.objects.filter(pk=concern_pk).first()
    if concern is None or concern.ended_at is not None:
        return Outcome(False, Changes())
    Concern.objects.filter(pk=concern_pk, ended_at__isnull=True).update(
        ended_at=now, end_reason=bounded_text(f"dismissed by {by}", 80)
    )
    if concern.kind == ConcernKind.LOOPING:
        _watched.pop(concern.agent_id, None)
    changes = Changes()
    changes.agents[concern.agent_id] = concern.session_id
    changes.inbox_sessions.add(concern.session_id)
    return Outcome(True, changes)
