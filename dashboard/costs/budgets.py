"""Budgets that act (`models.Budget`): measured when usage is stored, read by a tool call's
hook from a flag this process keeps.

When an export is stored (`usage_store`, inside the writer's transaction) the budgets of the
sessions it touched are measured, and nothing while no budget concerns them: each touched
session's spending in the budgets' periods is summed again from its own reports
(`SessionSpend`), then each budget concerned sums its sessions' rows. Neither reads more than
one row per session of the period, so an export costs the same on a year of a busy project's
usage as on a new one. A budget's sessions are measured from all their reports once, when it
is set. (A process learns of a budget set by another within `BUDGETS_TTL`; a session it
exported for meanwhile is measured at its next export.)
At 80% of a budget's limit the session spending it asks for a look (`ConcernKind.
BUDGET_WARNING`: its reviewers and owner are notified, once per budget and period); at 100%
each session spending it is held (`BudgetHold`) and waits on a person as over budget
(`ConcernKind.OVER_BUDGET`). A hold of a budget that stops at its limit refuses the agents'
next tool calls (`tool_refusal`, which the PreToolUse hook asks through
`dashboard.core.gates`) until a reviewer raises the budget (its holds are released when the
spending is under the new limit) or lets the session continue: then it runs until the period
ends, when a new period starts from nothing.

The hook's check costs no query: the sessions held are read once a second at most per
process (`HELD_TTL`), and at once in the process that changes them.
"""

from __future__ import annotations

import threading
import time as clock
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from dashboard.activity.models import Concern, ConcernKind
from dashboard.core.audit import Via, audit
from dashboard.core.changes import Changes, Outcome
from dashboard.core.errors import ServiceError
from dashboard.costs.models import Budget, BudgetHold, BudgetNotice
from dashboard.costs.selectors import ONE_STREAM, epoch_ns
from dashboard.models import AuditAction, Project, Session

WARN_AT = 0.8
# How stale this process's view of the held sessions may be (another process holds one).
HELD_TTL = 1.0
# How stale its list of budgets may be (another process sets one).
BUDGETS_TTL = 5.0
MOST_DOLLARS = 1_000_000


@dataclass(frozen=True)
class Period:
    start: date
    begins: datetime
    ends: datetime


def period_of(budget_period: str, now: datetime | None = None) -> Period:
    """The day or month `now` is in, by the server's clock."""
    zone = timezone.get_current_timezone()
    today = timezone.localdate(now or timezone.now(), zone)
    if budget_period == Budget.Period.DAY:
        start, after = today, today + timedelta(days=1)
    else:
        start = today.replace(day=1)
        after = (start + timedelta(days=32)).replace(day=1)
    return Period(
        start, datetime.combine(start, time(), zone), datetime.combine(after, time(), zone)
    )


def dollars(micros: int) -> str:
    return f"${micros / 1_000_000:,.2f}"


def budget_name(budget: Budget) -> str:
    """ "project shop ($5.00 a day)", "dana ($40.00 a month)"."""
    whose = (
        f"project {budget.project.name}" if budget.scope == Budget.Scope.PROJECT
        else budget.person.get_username()
    )  # fmt: skip
    return f"{whose} ({dollars(budget.limit_micros)} {budget.get_period_display()})"


def _scope_column(budget: Budget) -> tuple[str, int]:
    """The session column a budget's scope is read from, and its value."""
    if budget.scope == Budget.Scope.PROJECT:
        return "s.project_record_id", budget.project_id
    return "s.owner_id", budget.person_id


# A session's spending in a period, measured again from its usage (bounded by its own reports).
_SESSION_SPEND = f"""
    INSERT INTO costs_sessionspend (session_id, period, period_start, spent_micros)
    SELECT %s, %s, %s, COALESCE(SUM(u.cost_micros), 0) FROM costs_usage u
    WHERE u.session_id = %s AND u.observed_ns >= %s AND u.observed_ns < %s AND {ONE_STREAM}
    ON CONFLICT (session_id, period, period_start)
        DO UPDATE SET spent_micros = excluded.spent_micros
"""  # noqa: S608 - no values spliced in


def spent_micros(budget: Budget, period: Period) -> int:
    """What the budget's sessions cost in the period: the sum of their `SessionSpend` rows,
    one per session, not of their reports. One query."""
    column, scope_pk = _scope_column(budget)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT SUM(ss.spent_micros) FROM costs_sessionspend ss
            JOIN dashboard_session s ON s.id = ss.session_id
            WHERE ss.period = %s AND ss.period_start = %s AND {column} = %s
            """,  # noqa: S608 - a column name chosen here
            [budget.period, period.start, scope_pk],
        )
        (total,) = cursor.fetchone()
    return int(total or 0)


def spend_measure(budget: Budget, period: Period) -> None:
    """Measure every session of the budget's scope in the period from its usage: once, when the
    budget is set (the sessions spent before any budget of its kind existed). One query."""
    column, scope_pk = _scope_column(budget)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO costs_sessionspend (session_id, period, period_start, spent_micros)
            SELECT u.session_id, %s, %s, SUM(u.cost_micros) FROM costs_usage u
            JOIN dashboard_session s ON s.id = u.session_id
            WHERE {column} = %s AND u.observed_ns >= %s AND u.observed_ns < %s AND {ONE_STREAM}
            GROUP BY u.session_id
            ON CONFLICT (session_id, period, period_start)
                DO UPDATE SET spent_micros = excluded.spent_micros
            """,  # noqa: S608 - a column name chosen here
            [
                budget.period,
                period.start,
                scope_pk,
                epoch_ns(period.begins),
                epoch_ns(period.ends),
            ],
        )


def _sessions_measure(sessions: set[tuple[int, str]]) -> None:
    """Measure these (session pk, budget period) again from their usage in the current period:
    one statement, each bounded by one session's reports."""
    rows = []
    for session_pk, budget_period in sorted(sessions):
        period = period_of(budget_period)
        rows.append(
            [
                session_pk,
                budget_period,
                period.start,
                session_pk,
                epoch_ns(period.begins),
                epoch_ns(period.ends),
            ]
        )
    with connection.cursor() as cursor:
        cursor.executemany(_SESSION_SPEND, rows)


# --- this process's views of the budgets and the held sessions -----------------------------

_lock = threading.Lock()
_budgets: tuple[float, list[Budget]] = (0.0, [])
_held: tuple[float, dict[int, Budget]] = (0.0, {})


def forget() -> None:
    """This process changed budgets or holds: read them again when next asked."""
    global _budgets, _held
    with _lock:
        _budgets = (0.0, [])
        _held = (0.0, {})


def _all_budgets() -> list[Budget]:
    global _budgets
    read_at, budgets = _budgets
    if clock.monotonic() - read_at < BUDGETS_TTL:
        return budgets
    budgets = list(Budget.objects.select_related("project", "person"))
    _budgets = (clock.monotonic(), budgets)
    return budgets


def _held_sessions() -> dict[int, Budget]:
    """Session pk -> the budget that stops it now (one query a second at most)."""
    global _held
    read_at, held = _held
    if clock.monotonic() - read_at < HELD_TTL:
        return held
    holds = BudgetHold.objects.filter(
        continued_at__isnull=True, until__gt=timezone.now(), budget__stop_at_limit=True
    ).select_related("budget", "budget__project", "budget__person")
    held = {hold.session_id: hold.budget for hold in holds}
    _held = (clock.monotonic(), held)
    return held


def refusal_sentence(budget: Budget) -> str:
    return (
        f"Agentboard: the budget for {budget_name(budget)} is spent; a reviewer must raise it "
        "or let this session continue."
    )


def tool_refusal(session_pk: int, *, owner: Any = None, record: bool = True) -> str | None:
    """What the hook tells the model instead of running its tool call, or None to let it run.
    With `record` (inside the writer), a refusal is recorded in the audit log."""
    budget = _held_sessions().get(session_pk)
    if budget is None:
        return None
    sentence = refusal_sentence(budget)
    session = Session.objects.filter(pk=session_pk).first() if record else None
    if session is not None:
        audit(
            AuditAction.BUDGET_BLOCKED,
            actor=owner,
            rule=f"budget {budget.pk}",
            session=session,
            about=f"budget:{budget.pk}",
            summary=sentence,
        )
    return sentence


# --- measuring, when usage is stored ---------------------------------------------------------


def budgets_measure(touched: dict[int, int], changes: Changes) -> None:
    """After an export of usage for these sessions (session pk -> an agent pk of it), inside
    the writer's transaction."""
    budgets = _all_budgets()
    if not budgets or not touched:
        return
    sessions = list(
        Session.objects.filter(pk__in=list(touched)).values_list(
            "pk", "project_record_id", "owner_id"
        )
    )
    concerned: list[tuple[Budget, list[int]]] = []
    for budget in budgets:
        if budget.scope == Budget.Scope.PROJECT:
            mine = [pk for pk, project, _ in sessions if project == budget.project_id]
        else:
            mine = [pk for pk, _, owner in sessions if owner == budget.person_id]
        if mine:
            concerned.append((budget, mine))
    if not concerned:
        return
    _sessions_measure({(pk, budget.period) for budget, mine in concerned for pk in mine})
    changed = False
    for budget, mine in concerned:
        changed |= _measure(budget, {pk: touched[pk] for pk in mine}, changes)
    if changed:
        forget()


def _measure(budget: Budget, sessions: dict[int, int], changes: Changes) -> bool:
    period = period_of(budget.period)
    spent = spent_micros(budget, period)
    if spent >= budget.limit_micros:
        held = False
        for session_pk, agent_pk in sessions.items():
            try:
                with transaction.atomic():
                    BudgetHold.objects.create(
                        budget=budget,
                        session_id=session_pk,
                        period_start=period.start,
                        until=period.ends,
                    )
            except IntegrityError:
                continue  # held already (or let continue) in this period
            held = True
            _open(agent_pk, session_pk, ConcernKind.OVER_BUDGET, changes,
                  f"the budget for {budget_name(budget)} is spent ({dollars(spent)})"
                  + ("; its tool calls are refused" if budget.stop_at_limit else ""))  # fmt: skip
            _close(session_pk, [ConcernKind.BUDGET_WARNING], changes, "over budget")
        return held
    # A session held in an earlier period (or let continue) waits on nobody any more.
    _close_stale(list(sessions), changes)
    if spent >= WARN_AT * budget.limit_micros:
        try:
            with transaction.atomic():
                BudgetNotice.objects.create(budget=budget, period_start=period.start, level=80)
        except IntegrityError:
            return False  # told already this period
        session_pk, agent_pk = next(iter(sessions.items()))
        _open(agent_pk, session_pk, ConcernKind.BUDGET_WARNING, changes,
              f"{dollars(spent)} of the budget for {budget_name(budget)} spent "
              f"({round(100 * spent / budget.limit_micros)}%)")  # fmt: skip
    return False


def _close_stale(sessions: list[int], changes: Changes) -> None:
    """End the over-budget waits of these sessions that no hold keeps any more (its period
    ended, or someone let it continue). One query while none is open."""
    open_ = list(
        Concern.objects.filter(
            session_id__in=sessions, kind=ConcernKind.OVER_BUDGET, ended_at__isnull=True
        ).values_list("session_id", flat=True)
    )
    if not open_:
        return
    live = set(
        BudgetHold.objects.filter(
            session_id__in=open_, continued_at__isnull=True, until__gt=timezone.now()
        ).values_list("session_id", flat=True)
    )
    for session_pk in set(open_) - live:
        _close(session_pk, [ConcernKind.OVER_BUDGET], changes, "budget period ended")


def _open(agent_pk: int, session_pk: int, kind: str, changes: Changes, detail: str) -> None:
    try:
        with transaction.atomic():
            concern = Concern.objects.create(
                agent_id=agent_pk,
                session_id=session_pk,
                kind=kind,
                since=timezone.now(),
                detail=detail[:200],
            )
    except IntegrityError:
        return  # one is open already
    changes.opened_concerns.add(concern.pk)
    changes.agent(agent_pk, session_pk).inbox_sessions.add(session_pk)


def _close(session_pk: int, kinds: list[str], changes: Changes, reason: str) -> None:
    open_ = Concern.objects.filter(session_id=session_pk, kind__in=kinds, ended_at__isnull=True)
    for agent_pk in open_.values_list("agent_id", flat=True):
        changes.agent(agent_pk, session_pk).inbox_sessions.add(session_pk)
    open_.update(ended_at=timezone.now(), end_reason=reason[:80])


# --- what people do: set a budget, let a session continue ---------------------------------


def parse_limit(text: str) -> int:
    """A limit in dollars as typed ("5", "$12.50") in millionths; one sentence if not one."""
    cleaned = str(text or "").strip().removeprefix("$").replace(",", "").strip()
    try:
        value = float(cleaned)
    except ValueError:
        value = float("nan")
    if value != value or value in (float("inf"), float("-inf")):
        raise ServiceError(
            "bad_limit", f"A budget is a number of dollars, like 5 or 12.50; "
            f"{str(text).strip()[:40]!r} is not one.",
        )  # fmt: skip
    if value < 0.01 or value > MOST_DOLLARS:
        raise ServiceError("bad_limit", "A budget is at least $0.01 and at most $1,000,000.")
    return round(value * 1_000_000)


def budget_set(
    *,
    actor: Any,
    via: Via,
    period: str,
    limit: str,
    stop_at_limit: bool,
    project: Project | None = None,
    person: Any = None,
    remove: bool = False,
) -> Outcome[Budget | None]:
    """Set (or remove) the budget of a project or a person for a period; holds the new limit
    leaves room under are released. Recorded in the audit log."""
    if period not in Budget.Period.values:
        raise ServiceError("bad_period", "A budget is for a day or for a month.")
    scope = Budget.Scope.PROJECT if project is not None else Budget.Scope.PERSON
    where = {"project": project} if project is not None else {"person": person}
    existing = (
        Budget.objects.select_for_update().filter(scope=scope, period=period, **where).first()
    )
    changes = Changes()
    whose = f"project {project.name}" if project is not None else person.get_username()
    if remove:
        if existing is None:
            return Outcome(None, changes)
        _release(existing, changes, reason="budget removed")
        removed_pk = existing.pk
        existing.delete()
        audit(
            AuditAction.BUDGET_CHANGED,
            actor=actor,
            via=via,
            about=f"budget:{removed_pk}",
            summary=f"removed the budget of {whose} for {Budget.Period(period).label}",
        )
        forget()
        return Outcome(None, changes)
    micros = parse_limit(limit)
    budget = existing or Budget(scope=scope, period=period, **where)
    before = (
        f"{dollars(existing.limit_micros)}{' (stops)' if existing.stop_at_limit else ''}"
        if existing else "none"
    )  # fmt: skip
    budget.limit_micros = micros
    budget.stop_at_limit = stop_at_limit
    budget.save()
    period = period_of(budget.period)
    spend_measure(budget, period)
    spent = spent_micros(budget, period)
    if spent < micros:
        _release(budget, changes, reason="budget raised")
    spending = _spending_sessions(budget, period)
    if spending:
        # What is spent counts at once, not at the sessions' next usage report: a budget set
        # under it holds them now (one set near it warns now).
        _measure(budget, spending, changes)
    audit(
        AuditAction.BUDGET_CHANGED,
        actor=actor,
        via=via,
        about=f"budget:{budget.pk}",
        summary=f"set the budget of {budget_name(budget)}"
        f"{', stopping its agents at the limit' if stop_at_limit else ''} (was {before})",
    )
    forget()
    return Outcome(budget, changes)


def _spending_sessions(budget: Budget, period: Period) -> dict[int, int]:
    """The budget's sessions still running that spent in the period, each with its main
    agent (where its wait shows). One query."""
    column, scope_pk = _scope_column(budget)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT s.id, a.id FROM costs_sessionspend ss
            JOIN dashboard_session s ON s.id = ss.session_id
            JOIN dashboard_agent a ON a.session_id = s.id AND a.agent_id = s.session_id
            WHERE ss.period = %s AND ss.period_start = %s AND {column} = %s
                AND ss.spent_micros > 0 AND s.ended_at IS NULL
            ORDER BY s.id
            """,  # noqa: S608 - a column name chosen here
            [budget.period, period.start, scope_pk],
        )
        return dict(cursor.fetchall())


def _release(budget: Budget, changes: Changes, *, reason: str) -> None:
    """The budget's open holds end: its sessions run again and wait on nobody."""
    holds = BudgetHold.objects.filter(budget=budget, continued_at__isnull=True)
    sessions = list(holds.values_list("session_id", flat=True))
    holds.update(continued_at=timezone.now(), continued_by=reason[:150])
    for session_pk in sessions:
        _close(session_pk, [ConcernKind.OVER_BUDGET], changes, reason)


def session_continue(*, session_pk: int, actor: Any, via: Via) -> Outcome[int]:
    """A reviewer lets an over-budget session run until its budgets' periods end: its holds
    end, its wait ends. Returns how many holds ended (0: it was not held)."""
    session = Session.objects.filter(pk=session_pk).first()
    if session is None:
        raise ServiceError("not_found", "There is no such session.", status=404)
    holds = BudgetHold.objects.filter(
        session_id=session_pk, continued_at__isnull=True, until__gt=timezone.now()
    ).select_related("budget", "budget__project", "budget__person")
    held = list(holds)
    changes = Changes()
    if not held:
        return Outcome(0, changes)
    names = ", ".join(budget_name(hold.budget) for hold in held)
    BudgetHold.objects.filter(pk__in=[hold.pk for hold in held]).update(
        continued_at=timezone.now(), continued_by=actor.get_username()[:150]
    )
    _close(session_pk, [ConcernKind.OVER_BUDGET], changes, f"continued by {actor.get_username()}")
    audit(
        AuditAction.BUDGET_CONTINUED,
        actor=actor,
        via=via,
        session=session,
        about=f"session:{session.pk}",
        summary=f"let the session continue over the budget for {names} until the period ends",
    )
    forget()
    return Outcome(len(held), changes)


def held_by(budget: Budget) -> int:
    """How many sessions the budget holds now (not let continue, its period not over)."""
    return BudgetHold.objects.filter(
        budget=budget, continued_at__isnull=True, until__gt=timezone.now()
    ).count()


def held_budgets(session_pk: int) -> list[BudgetHold]:
    """The session's holds now (for its board and the inbox)."""
    return list(
        BudgetHold.objects.filter(
            session_id=session_pk, continued_at__isnull=True, until__gt=timezone.now()
        ).select_related("budget", "budget__project", "budget__person")
    )
