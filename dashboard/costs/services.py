"""Storing usage: each report once, whatever the number of times it is sent."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction

from dashboard.core.changes import Changes, Outcome
from dashboard.core.errors import ServiceError
from dashboard.core.services import agent_resolve_for_update, known_agent
from dashboard.costs.budgets import budgets_measure
from dashboard.costs.models import Usage
from dashboard.costs.otlp import UsageReport
from dashboard.costs.prices import PriceTable

# Of two reports with one identity the one observed last stays (a cumulative counter's latest
# value; a retry changes nothing).
_UPSERT = """
    INSERT INTO costs_usage (session_id, agent_id, stream, identity, model, input_tokens,
        output_tokens, cache_read_tokens, cache_creation_tokens, cost_micros, cost_estimated,
        observed_ns)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (session_id, identity) DO UPDATE SET
        input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
        cache_read_tokens = excluded.cache_read_tokens,
        cache_creation_tokens = excluded.cache_creation_tokens,
        cost_micros = excluded.cost_micros, cost_estimated = excluded.cost_estimated,
        observed_ns = excluded.observed_ns
    WHERE costs_usage.observed_ns < excluded.observed_ns
"""


def usage_store(
    *, owner: AbstractBaseUser, reports: list[UsageReport], client: str = ""
) -> Outcome[int]:
    """Store the reports of one export (inside the writer's transaction). A session not seen
    before is created, as a hook's first mention creates it: the exporter often speaks before
    the session's first hook. Returns how many reports were refused: those of a session
    another user's token reported."""
    assert transaction.get_connection().in_atomic_block
    changes = Changes()
    places: dict[tuple[str, str], tuple[int, int] | None] = {}
    rows = []
    refused = 0
    prices: PriceTable | None = None
    touched: dict[int, int] = {}
    # Sessions (by id) a subagent's report came for.
    with_subagents: set[str] = set()

    def place_of(key: tuple[str, str]) -> tuple[int, int] | None:
        if key not in places:
            places[key] = _place(owner=owner, key=key, client=client, changes=changes)
        return places[key]

    for report in reports:
        place = place_of((report.session_id, report.agent_id))
        if place is None:
            refused += 1
            continue
        agent_pk, session_pk = place
        # Its card and its session's header and row show what it cost so far.
        changes.agent(agent_pk, session_pk)
        touched.setdefault(session_pk, agent_pk)
        if report.agent_id != report.session_id:
            with_subagents.add(report.session_id)
        cost, estimated = report.cost_micros, False
        if _needs_estimate(report):
            prices = prices or PriceTable.read()
            made = prices.cost_micros(
                report.model,
                input_tokens=report.input_tokens,
                output_tokens=report.output_tokens,
                cache_read_tokens=report.cache_read_tokens,
                cache_creation_tokens=report.cache_creation_tokens,
            )
            if made is not None:
                cost, estimated = made, True
        rows.append(
            (
                session_pk,
                agent_pk,
                report.stream,
                report.identity,
                report.model,
                report.input_tokens,
                report.output_tokens,
                report.cache_read_tokens,
                report.cache_creation_tokens,
                cost,
                estimated,
                report.observed_ns,
            )
        )
    # A subagent's usage may end the main card's showing the whole session's
    # (`AgentUsage.session_wide`): that card is shown anew too.
    for session_id in with_subagents:
        main = place_of((session_id, session_id))
        if main is not None:
            changes.agent(*main)
    if rows:
        with connection.cursor() as cursor:
            cursor.executemany(_UPSERT, rows)
        # Whether a budget of these sessions is now 80% or all spent.
        budgets_measure(touched, changes)
    return Outcome(refused, changes)


def _needs_estimate(report: UsageReport) -> bool:
    """A report of one request or message that says its tokens and no cost (Codex's, an
    opencode message of a provider that prices nothing). Claude Code's token counters never:
    its cost comes in a counter of its own."""
    return (
        report.stream == Usage.Stream.EVENTS
        and report.cost_micros == 0
        and bool(report.model)
        and (
            report.input_tokens
            or report.output_tokens
            or report.cache_read_tokens
            or report.cache_creation_tokens
        )
        > 0
    )


def _place(
    *, owner: AbstractBaseUser, key: tuple[str, str], client: str, changes: Changes
) -> tuple[int, int] | None:
    """(agent pk, session pk) of a report's agent, without a query for one this process
    knows; None for a session of another user's."""
    session_id, agent_id = key
    known = known_agent(owner=owner, session_id=session_id, agent_id=agent_id)
    if known is not None:
        return known
    try:
        with transaction.atomic():
            resolved = agent_resolve_for_update(
                owner=owner, session_id=session_id, agent_id=agent_id, client=client
            )
    except ServiceError:
        return None
    if resolved.agent_created or resolved.session_created:
        changes.merge(resolved.changes())
    return resolved.agent.pk, resolved.agent.session_id
