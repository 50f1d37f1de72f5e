"""Agents that need a look: the same failing call again and again (looping), caught in the
write path when a failed step is stored.

Healthy steps cost no query: only a failed call reads that agent's last few steps, and only an
agent that this process knows to have an open episode (`_watched`) has it ended by its next
step. An episode is a `Concern` row, open until the agent's next healthy step (an ok, or a
different call; for a step running long, that step's end), until the agent stops, or until
someone dismisses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone

from dashboard.activity.models import Concern, ConcernKind, Step, StepOutcome
from dashboard.activity.summaries import bounded_text
from dashboard.core.changes import Changes, Outcome, StepReport

# Agents with an open episode in this process's view -> {kind: the call that keeps it open: a
# loop's repeated input hash, the tool_use_id of a step running long}.
# Filled when this process opens one and from the database at start and on each sweep; a stale
# entry costs one harmless update, never a wrong answer.
_watched: dict[int, dict[str, str]] = {}
_loaded = False


def watched_load() -> None:
    """Once per process: what is open already (one query)."""
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
    open_ = Concern.objects.filter(ended_at__isnull=True)
    _loaded = True
    _watched.clear()
    rows = open_.values_list("agent_id", "kind", "input_hash", "tool_use_id")
    for agent_pk, kind, input_hash, tool_use_id in rows:
        _watch(agent_pk, kind, tool_use_id if kind == ConcernKind.OVERLONG else input_hash)


def _watch(agent_pk: int, kind: str, call: str = "") -> None:
    _watched.setdefault(agent_pk, {})[kind] = call


def _unwatch(agent_pk: int, kinds) -> None:
    open_ = _watched.get(agent_pk, {})
    for kind in kinds:
        open_.pop(kind, None)
    if not open_:
        _watched.pop(agent_pk, None)


def loop_repeats() -> int:
    return settings.AGENTBOARD_LOOP_REPEATS


def concerns_note(reports: list[StepReport], written: list[Changes]) -> None:
    """After a batch's steps are stored (inside its transaction): end the episodes that a
    step ends (any step ends "stuck"; a call that succeeds, or another call, ends a loop; the
    end of a step running long ends its episode), and open a loop for an agent whose last
    calls all failed alike."""
    ending: dict[tuple[int, str], tuple[StepReport, set[str]]] = {}
    failing: dict[int, StepReport] = {}
    for report in reports:
        if report.outcome == StepOutcome.FAILED and report.input_hash:
            failing[report.agent] = report
        open_ = _watched.get(report.agent)
        if not open_:
            continue
        kinds = {ConcernKind.STUCK} & open_.keys()
        loop = open_.get(ConcernKind.LOOPING)
        if loop is not None and (report.outcome == StepOutcome.OK or report.input_hash != loop):
            kinds.add(ConcernKind.LOOPING)
            failing.pop(report.agent, None)
        if kinds:
            ending.setdefault((report.agent, "healthy step"), (report, set()))[1].update(kinds)
        long_call = open_.get(ConcernKind.OVERLONG)
        if report.outcome != StepOutcome.RUNNING and report.tool_use_id == long_call:
            ending[(report.agent, "step ended")] = (report, {ConcernKind.OVERLONG})
    for (agent_pk, reason), (report, kinds) in ending.items():
        _end(agent_pk, report.session, report.at, reason, written, kinds)
    for agent_pk, report in failing.items():
        if ConcernKind.LOOPING not in _watched.get(agent_pk, {}):
            _loop_check(report, written)
        else:
            _loop_counted(report, written)


def concerns_end_for_stopped(stopped: dict[int, datetime], written: list[Changes]) -> None:
    """Agents that stopped or took a new prompt: their episodes end."""
    for agent_pk, at in stopped.items():
        if agent_pk in _watched:
            session = Concern.objects.filter(agent_id=agent_pk).values_list("session_id")[:1]
            kinds = set(_watched[agent_pk])
            _end(agent_pk, session[0][0] if session else None, at, "agent stopped", written, kinds)


def ended_sessions_watched(written: list[Changes]) -> set[int]:
    """Sessions that ended in this batch, if any agent has an open episode (no query)."""
    if not _watched:
        return set()
    return {pk for changes in written for pk in changes.ended_sessions}


def concerns_end_for_sessions(sessions: set[int]) -> None:
    """Sessions that ended: their agents' episodes end with them."""
    rows = Concern.objects.filter(session_id__in=list(sessions), ended_at__isnull=True)
    for agent_pk, kind in rows.values_list("agent_id", "kind"):
        _unwatch(agent_pk, [kind])
    rows.update(ended_at=timezone.now(), end_reason="session ended")


def _end(agent_pk: int, session_pk: int | None, at: datetime, reason: str, written, kinds) -> None:
    ended = Concern.objects.filter(
        agent_id=agent_pk, ended_at__isnull=True, kind__in=list(kinds)
    ).update(ended_at=at, end_reason=reason)
    _unwatch(agent_pk, kinds)
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
    first = last[-1][2]
    try:
        with transaction.atomic():
            concern = Concern.objects.create(
                agent_id=report.agent,
                session_id=report.session,
                kind=ConcernKind.LOOPING,
                since=report.at,
                detail=_loop_words(report, repeats, first),
                input_hash=report.input_hash,
                failures=repeats,
                first_failed_at=first,
            )
    except IntegrityError:
        concern = None  # another process opened it first: one episode, notified there
    _watch(report.agent, ConcernKind.LOOPING, report.input_hash)
    _publish(written, report.agent, report.session, opened=concern)


def _loop_counted(report: StepReport, written: list[Changes]) -> None:
    """The call of an open loop failed once more: its line counts every failure, over how long,
    and shows the latest error (two short statements, for a failing agent only)."""
    loop = Concern.objects.filter(
        agent_id=report.agent, kind=ConcernKind.LOOPING, ended_at__isnull=True
    )
    if not loop.update(failures=F("failures") + 1):
        _unwatch(report.agent, [ConcernKind.LOOPING])  # ended in another process
        return
    failures, first = loop.values_list("failures", "first_failed_at").first() or (0, None)
    loop.update(detail=_loop_words(report, failures, first or report.at))
    _publish(written, report.agent, report.session)


def _loop_words(report: StepReport, failures: int, first: datetime) -> str:
    """“pytest -x” failed 20 times in 19 min: AssertionError: 3 != 4"""
    what = f"“{report.summary}”" if report.summary else report.tool_name
    seconds = max(0.0, (report.at - first).total_seconds())
    if seconds < 60:
        span = f"{round(seconds)} s"
    elif seconds < 3600:
        span = f"{round(seconds / 60)} min"
    else:
        span = f"{seconds / 3600:.1f} h"
    words = f"{what} failed {failures} times in {span}"
    return bounded_text(f"{words}: {report.error}" if report.error else words)


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
    _unwatch(concern.agent_id, [concern.kind])
    changes = Changes()
    changes.agents[concern.agent_id] = concern.session_id
    changes.inbox_sessions.add(concern.session_id)
    return Outcome(True, changes)


def _ended_since(found: list[Found], kinds: list[str]) -> set[tuple[int, str]]:
    """Of these, the episodes already had and ended (dismissed, or ended in the write path):
    the same quiet spell (one that ended after it began) or the same long step is not flagged
    again."""
    wanted = {(f.agent, f.kind): f for f in found}
    if not wanted:
        return set()
    ended = (
        Concern.objects.filter(agent_id__in={agent for agent, _ in wanted}, kind__in=kinds)
        .filter(ended_at__isnull=False)
        .values_list("agent_id", "kind", "tool_use_id")
        .annotate(last=Max("ended_at"))
    )
    settled = set()
    for agent, kind, call, last in ended:
        f = wanted.get((agent, kind))
        if f is not None and call == f.tool_use_id and last > f.since:
            settled.add((agent, kind))
    return settled


@dataclass(frozen=True)
class Found:
    """An agent that the sweep finds needing a look now."""

    agent: int
    session: int
    kind: str
    since: datetime
    detail: str
    # The step running long (overlong), whose end ends the episode.
    tool_use_id: str = ""


def concerns_reconcile(found: list[Found], kinds: list[str]) -> Outcome[list[int]]:
    """The sweep's write: open an episode for each agent found that has none of its kind open,
    and end the open episodes of `kinds` whose agent is not found any more. Returns the pks of
    the episodes opened."""
    now = timezone.now()
    changes = Changes()
    wanted = {(f.agent, f.kind): f for f in found}
    open_ = list(
        Concern.objects.filter(ended_at__isnull=True, kind__in=kinds).values_list(
            "pk", "agent_id", "session_id", "kind"
        )
    )
    gone = [pk for pk, agent, _, kind in open_ if (agent, kind) not in wanted]
    if gone:
        Concern.objects.filter(pk__in=gone, ended_at__isnull=True).update(
            ended_at=now, end_reason="moved on"
        )
        for pk, agent, session, _ in open_:
            if pk in gone:
                changes.agent(agent, session).inbox_sessions.add(session)
    opened: list[int] = []
    already = {(agent, kind) for _, agent, _, kind in open_}
    settled = _ended_since([f for key, f in wanted.items() if key not in already], kinds)
    for key, f in wanted.items():
        if key in already or key in settled:
            continue
        try:
            with transaction.atomic():
                concern = Concern.objects.create(
                    agent_id=f.agent,
                    session_id=f.session,
                    kind=f.kind,
                    since=f.since,
                    detail=bounded_text(f.detail),
                    tool_use_id=f.tool_use_id,
                )
        except IntegrityError:
            continue  # another process opened it first
        opened.append(concern.pk)
        changes.agent(f.agent, f.session).inbox_sessions.add(f.session)
    changes.opened_concerns.update(opened)
    watched_refresh()
    return Outcome(opened, changes)
