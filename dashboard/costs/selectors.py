"""What sessions cost so far, read for many sessions at once."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any, Self

from django.db import connection
from django.utils import timezone

from dashboard.core.sql import rows_in
from dashboard.core.visibility import Audience

# The figures of usage rows `u` summed, in the order `SessionUsage.of_sums` takes them
# (PostgreSQL has no MAX of booleans).
SUMS = """SUM(u.input_tokens), SUM(u.output_tokens), SUM(u.cache_read_tokens),
    SUM(u.cache_creation_tokens), SUM(u.cost_micros),
    MAX(CASE WHEN u.cost_estimated THEN 1 ELSE 0 END)"""
# A session's figures come from one stream: its metrics when it sent any, else its events.
ONE_STREAM = """(u.stream = 'metrics' OR NOT EXISTS (
    SELECT 1 FROM costs_usage m WHERE m.session_id = u.session_id AND m.stream = 'metrics'))"""

_TOTALS = f"""
    SELECT u.session_id, u.stream, {SUMS}
    FROM costs_usage u WHERE u.session_id IN ({{ids}}) GROUP BY u.session_id, u.stream
"""  # noqa: S608 - no values spliced in


def epoch_ns(moment: datetime) -> int:
    """`moment` in nanoseconds since the epoch, as the exporters stamp their reports."""
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


@dataclass(frozen=True)
class SessionUsage:
    """A session's tokens and cost so far."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_micros: int = 0
    # Some of the cost was made from a price table, not reported by the agent.
    estimated: bool = False

    @classmethod
    def of_sums(
        cls,
        inp: Any,
        out: Any,
        read: Any,
        created: Any,
        cost: Any,
        estimated: Any,
        **more: Any,
    ) -> Self:
        """From the columns of `SUMS` (each None where no row was summed)."""
        return cls(
            input_tokens=int(inp or 0),
            output_tokens=int(out or 0),
            cache_read_tokens=int(read or 0),
            cache_creation_tokens=int(created or 0),
            cost_micros=int(cost or 0),
            estimated=bool(estimated),
            **more,
        )

    @property
    def tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_creation_tokens
        )

    @property
    def cost_usd(self) -> float:
        return self.cost_micros / 1_000_000

    @property
    def cost_text(self) -> str:
        """ "$4.12"; under a cent, to a hundredth of one ("$0.0012")."""
        dollars = self.cost_usd
        return f"${dollars:,.2f}" if dollars == 0 or dollars >= 0.01 else f"${dollars:.4f}"

    @property
    def tokens_text(self) -> str:
        """ "220", "12.3k", "4.1M"."""
        n = self.tokens
        if n < 1000:
            return str(n)
        if n < 1_000_000:
            return f"{n / 1000:.1f}k"
        return f"{n / 1_000_000:.1f}M"


def usage_by_session(session_pks: list[int]) -> dict[int, SessionUsage]:
    """Each session's usage (sessions that reported none are left out), in one query.

    A session's requests may be reported twice, as metrics and as events (Claude Code sends
    both): its figures come from the metrics when it sent any, else from its events."""
    if not session_pks:
        return {}
    streams: dict[int, dict[str, SessionUsage]] = defaultdict(dict)
    for session_pk, stream, *sums in rows_in(_TOTALS, session_pks):
        streams[session_pk][stream] = SessionUsage.of_sums(*sums)
    return {
        session_pk: by_stream.get("metrics") or by_stream["events"]
        for session_pk, by_stream in streams.items()
    }


# Each agent's reports of its session's one stream (each agent of one session and stream, so
# the subqueries may name the grouped columns), and whether they are all its session has.
_AGENT_TOTALS = f"""
    SELECT u.agent_id, {SUMS},
        CASE WHEN NOT EXISTS (
            SELECT 1 FROM costs_usage o WHERE o.session_id = u.session_id
                AND o.stream = u.stream AND o.agent_id <> u.agent_id
        ) AND EXISTS (
            SELECT 1 FROM dashboard_agent x WHERE x.session_id = u.session_id
                AND x.id <> u.agent_id
        ) THEN 1 ELSE 0 END
    FROM costs_usage u WHERE u.agent_id IN ({{ids}}) AND {ONE_STREAM}
    GROUP BY u.agent_id, u.session_id, u.stream
"""  # noqa: S608 - no values spliced in


@dataclass(frozen=True)
class AgentUsage(SessionUsage):
    """An agent's tokens and cost so far."""

    # Its session has other agents and none of them has usage of its own: all the session's
    # usage was reported for this one. Claude Code reports a session's usage without naming
    # the agent (its subagents' included), so it all lands on the main agent's card.
    session_wide: bool = False


def usage_by_agent(agent_pks: list[int]) -> dict[int, AgentUsage]:
    """Each agent's usage (agents that reported none are left out), in one query, by the
    sessions' rule: from its session's metrics when the session sent any, else its events."""
    if not agent_pks:
        return {}
    return {
        agent_pk: AgentUsage.of_sums(*sums, session_wide=bool(session_wide))
        for agent_pk, *sums, session_wide in rows_in(_AGENT_TOTALS, agent_pks)
    }


# --- Cost by day: a project's, a person's, over the sessions a viewer sees -----------------

CHART_DAYS = 30


@dataclass(frozen=True)
class DayCost:
    day: date
    usage: SessionUsage


@dataclass(frozen=True)
class CostSummary:
    """Cost today, this week (from Monday), this month, and each of the last `CHART_DAYS`
    days (oldest first), in the server's time zone."""

    today: SessionUsage
    week: SessionUsage
    month: SessionUsage
    days: list[DayCost]

    @property
    def peak_micros(self) -> int:
        return max((day.usage.cost_micros for day in self.days), default=0)

    @property
    def any(self) -> bool:
        return bool(self.month.tokens or any(day.usage.tokens for day in self.days))

    @property
    def estimated(self) -> bool:
        return self.month.estimated or any(day.usage.estimated for day in self.days)


def _add(a: SessionUsage, b: SessionUsage) -> SessionUsage:
    return SessionUsage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_creation_tokens=a.cache_creation_tokens + b.cache_creation_tokens,
        cost_micros=a.cost_micros + b.cost_micros,
        estimated=a.estimated or b.estimated,
    )


def cost_summary(
    audience: Audience,
    *,
    project_pk: int | None = None,
    owner_pk: int | None = None,
    now: datetime | None = None,
) -> CostSummary:
    """The cost of a project's sessions, or a person's, that `audience` sees: one query.

    Each report counts on the day it was observed (a delta counter's point, a request's
    event), by the server's time zone; the days' boundaries are computed here, so a day of
    23 or 25 hours (a clock change) is still one day."""
    zone = timezone.get_current_timezone()
    today = timezone.localdate(now or timezone.now(), zone)
    first = min(today - timedelta(days=CHART_DAYS - 1), today.replace(day=1))
    days = [first + timedelta(days=n) for n in range((today - first).days + 1)]
    starts = [epoch_ns(datetime.combine(day, time(), zone)) for day in days]
    end = epoch_ns(datetime.combine(today + timedelta(days=1), time(), zone))
    # The day's index: the last start the report is at or after.
    bucket = " ".join(
        f"WHEN u.observed_ns >= {start} THEN {n}" for n, start in reversed(list(enumerate(starts)))
    )
    conditions = [ONE_STREAM, "u.observed_ns >= %s", "u.observed_ns < %s"]
    params: list[Any] = [starts[0], end]
    if project_pk is not None:
        conditions.append("s.project_record_id = %s")
        params.append(project_pk)
    if owner_pk is not None:
        conditions.append("s.owner_id = %s")
        params.append(owner_pk)
    seen, seen_params = audience.sessions_sql("s")
    if seen:
        conditions.append(seen)
        params.extend(seen_params)
    sql = f"""
        SELECT CASE {bucket} END AS day, {SUMS}
        FROM costs_usage u JOIN dashboard_session s ON s.id = u.session_id
        WHERE {" AND ".join(conditions)}
        GROUP BY 1
    """  # noqa: S608 - the only values spliced in are integers computed here
    by_day: dict[int, SessionUsage] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for index, *sums in cursor.fetchall():
            by_day[int(index)] = SessionUsage.of_sums(*sums)
    none = SessionUsage()
    monday = today - timedelta(days=today.weekday())
    month_start = today.replace(day=1)
    totals = {"today": none, "week": none, "month": none}
    for n, day in enumerate(days):
        usage = by_day.get(n, none)
        if day == today:
            totals["today"] = _add(totals["today"], usage)
        if day >= monday:
            totals["week"] = _add(totals["week"], usage)
        if day >= month_start:
            totals["month"] = _add(totals["month"], usage)
    chart = [DayCost(day, by_day.get(n, none)) for n, day in enumerate(days)][-CHART_DAYS:]
    return CostSummary(days=chart, **totals)


def plan_cost(plan: Any) -> SessionUsage | None:
    """What the work an approved plan let start has cost so far: its agent's usage from the
    plan's approval up to the agent's next approved plan, or the session's end. None for a
    plan not approved. Two queries: the next approval, the sum."""
    if plan.status != "approved" or plan.decided_at is None:
        return None
    following = (
        type(plan)
        .objects.filter(agent_id=plan.agent_id, status="approved", decided_at__gt=plan.decided_at)
        .order_by("decided_at")
        .values_list("decided_at", flat=True)
        .first()
    )
    ends = [moment for moment in (following, plan.session.ended_at) if moment is not None]
    end = epoch_ns(min(ends)) if ends else 2**62
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT {SUMS}
            FROM costs_usage u
            WHERE u.agent_id = %s AND u.observed_ns >= %s AND u.observed_ns < %s
                AND {ONE_STREAM}
            """,  # noqa: S608 - no values spliced in
            [plan.agent_id, epoch_ns(plan.decided_at), end],
        )
        return SessionUsage.of_sums(*cursor.fetchone())
