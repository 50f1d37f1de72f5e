"""The decided permission requests a viewer may see, read as suggestions, backtests and the
rules' figures need them: one bounded query on the decided-time index, narrowed in SQL by
window, tool and project, streamed with only the columns used. Matching happens afterwards, in
Python, with `planmode.rules` (the code the request path runs).

Who decided: a person (`decided_by` set) or a team rule (`rule` set). A request whose person or
rule was deleted since says neither and is left out, as are requests nobody answered on the
board (answered in the terminal, expired): there is no decision to compare with.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q

from dashboard.core.visibility import audience_of
from dashboard.models import project_of
from planmode import rules
from planmode.models import PermissionRequest, RequestStatus

DECIDED = (RequestStatus.ALLOWED, RequestStatus.DENIED)
CHUNK = 2_000
COLUMNS = (
    "pk", "tool_name", "tool_input", "status", "requested_at", "decided_at",
    "decided_by__username", "rule_id", "session_id", "session__cwd", "session__project_name",
)  # fmt: skip


@dataclass(frozen=True)
class Decided:
    """One decided request, as stored (its input redacted)."""

    pk: int
    tool_name: str
    tool_input: dict[str, Any]
    status: str
    requested_at: datetime
    decided_at: datetime
    decided_by: str  # the person's user name; "" when a rule decided
    rule_pk: int | None
    session_pk: int
    cwd: str
    project: str

    @property
    def by_person(self) -> bool:
        return self.rule_pk is None

    @property
    def answer(self) -> str:
        return "allow" if self.status == RequestStatus.ALLOWED else "deny"

    @property
    def waited(self) -> float:
        """Seconds it waited for its answer."""
        return max(0.0, (self.decided_at - self.requested_at).total_seconds())


def tool_names_of(rule: rules.Rule) -> Q:
    """The requests whose tool the rule may name, as a condition SQL can use an index for."""
    tool = rule.tool
    if tool.startswith("mcp__") and tool.count("__") == 1:
        return Q(tool_name__startswith=tool + "__")
    if "*" in tool:
        prefix = tool.split("*", 1)[0]
        return Q(tool_name__startswith=prefix) if prefix else Q()
    return Q(tool_name=tool)


def project_is(project: str) -> Q:
    """Sessions of this project (`Session.project`); a superset SQL narrows to, checked again
    row by row."""
    return Q(session__project_name=project) | Q(
        Q(session__cwd=project) | Q(session__cwd__endswith="/" + project),
        session__project_name="",
    )


def decided_requests(
    viewer: AbstractBaseUser | AnonymousUser,
    *,
    since: datetime | None,
    until: datetime | None = None,
    windows: Iterable[tuple[datetime, datetime]] = (),
    where: Q | None = None,
    project: str = "",
    people_only: bool = False,
) -> Iterator[Decided]:
    """The decided requests `viewer` may see, decided in [since, until) or in any of
    `windows`, of `project` ("" for every project), meeting `where`; streamed."""
    condition = audience_of(viewer).sees("session__") & Q(status__in=DECIDED)
    condition &= Q(rule__isnull=True, decided_by__isnull=False) if people_only else (
        Q(decided_by__isnull=False) | Q(rule__isnull=False)
    )  # fmt: skip
    if since is not None:
        condition &= Q(decided_at__gte=since)
    if until is not None:
        condition &= Q(decided_at__lt=until)
    spans = Q()
    for start, end in windows:
        spans |= Q(decided_at__gte=start, decided_at__lt=end)
    if project:
        condition &= project_is(project)
    rows = PermissionRequest.objects.filter(condition, spans, where or Q()).order_by()
    for row in rows.values_list(*COLUMNS).iterator(chunk_size=CHUNK):
        pk, tool, tool_input, status, requested, decided, by, rule_pk, session, cwd, name = row
        found = project_of(project_name=name, cwd=cwd)
        if project and found != project:
            continue
        yield Decided(
            pk=pk, tool_name=tool, tool_input=tool_input if isinstance(tool_input, dict) else {},
            status=status, requested_at=requested, decided_at=decided, decided_by=by or "",
            rule_pk=rule_pk, session_pk=session, cwd=cwd, project=found,
        )  # fmt: skip


def merged(windows: Iterable[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    """Overlapping time windows as one each: fewer conditions for the query."""
    out: list[tuple[datetime, datetime]] = []
    for start, end in sorted(windows):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None
