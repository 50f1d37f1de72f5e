"""Allow once: a call auto mode's classifier refused, let through once by a person.

The refusal is a `PermissionRequest` with `refused_by_auto_mode`; a person's "Allow once" (or a
team rule) leaves it allowed. The allowance is that row while it is recent and unused: the
call's next PreToolUse with the same input, in any server process, takes it with one
conditional update (`allowance_take`), so exactly one PreToolUse wins it, once.

Every PreToolUse asks, so the question must cost nothing for the sessions that have no
refusal open, nearly all of them: each process keeps the set of sessions that have a refusal
pending or an allowance unused, read again at most every `SESSIONS_TTL` seconds. A person
takes longer than that to allow a refusal; a hook answered sooner after its row was stored (a
team rule allowed it, or a very quick person) waits until the row is that old before it tells
Claude Code to retry. So every process knows the session before the retried call reaches it.
"""

from __future__ import annotations

import math
import time as clock
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from dashboard.models import Agent
from planmode.models import PermissionRequest, RequestStatus
from planmode.permissions import input_key

# How long after the decision the retried call may take its allowance.
ALLOWED_ONCE_SECONDS = 120
# How stale this process's set of sessions with a refusal open may be (another process opened
# or allowed one): also how long after a refusal's row is stored every process knows it.
SESSIONS_TTL = 1.0

# When this process read them (monotonic; never yet: minus infinity, since the monotonic clock
# may start near zero) and what it read.
_sessions: tuple[float, frozenset[int]] = (-math.inf, frozenset())


def forget() -> None:
    """Read the sessions with a refusal open again when next asked (tests: a new database)."""
    global _sessions
    _sessions = (-math.inf, frozenset())


def _recent_allowances(now: datetime) -> QuerySet[PermissionRequest]:
    return PermissionRequest.objects.filter(
        refused_by_auto_mode=True,
        status=RequestStatus.ALLOWED,
        once_used_at__isnull=True,
        decided_at__gte=now - timedelta(seconds=ALLOWED_ONCE_SECONDS),
    )


def _sessions_with_refusals() -> frozenset[int]:
    """Session pks with a refusal pending or an allowance unused: one query a second at most.
    Two selects in a union, so that each reads its own index (pending requests by status,
    recent decisions by time), however many requests a year leaves."""
    global _sessions
    read_at, sessions = _sessions
    if clock.monotonic() - read_at < SESSIONS_TTL:
        return sessions
    pending = PermissionRequest.objects.filter(
        refused_by_auto_mode=True, status=RequestStatus.PENDING
    )
    recent = _recent_allowances(timezone.now())
    columns = [rows.order_by().values_list("session_id", flat=True) for rows in (pending, recent)]
    sessions = frozenset(columns[0].union(columns[1]))
    _sessions = (clock.monotonic(), sessions)
    return sessions


def allowance_take(*, agent_pk: int, session_pk: int, tool_name: str, tool_input: object) -> bool:
    """Whether this call of the agent was let through once after auto mode refused it in its
    session, the allowance used up if so. No query for a session without a refusal open;
    for the others, the agent's row is locked first, as every write of an agent takes it
    (two processes' batches then wait for each other on it, where taking the allowance's row
    first could deadlock them), then one update, conditional on the allowance being unused:
    of two PreToolUse (two processes, or one call sent twice), only one is allowed."""
    assert transaction.get_connection().in_atomic_block
    if session_pk not in _sessions_with_refusals():
        return False
    list(Agent.objects.select_for_update().filter(pk=agent_pk).values_list("pk"))
    now = timezone.now()
    # The key of the input as the agent sent it, as the refusal's row stores it (its input is
    # stored redacted, its key is not made from that).
    oldest_first = (
        _recent_allowances(now)
        .filter(session_id=session_pk, input_key=input_key(tool_name, tool_input))
        .order_by("decided_at", "pk")
        .values("pk")[:1]
    )
    taken = PermissionRequest.objects.filter(pk__in=oldest_first, once_used_at__isnull=True)
    return taken.update(once_used_at=now) == 1
