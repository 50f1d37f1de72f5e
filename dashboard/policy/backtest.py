"""A rule tested against the team's history before it is saved: what it would have done to the
permission requests of the last 30 days (or 90, or all) that the viewer may see.

It is compared with the people's decisions: those are what it would replace. Requests other
team rules answered are only counted (it would have matched them too); requests nobody
answered on the board (answered in the terminal, expired) are left out. A match is made as the
request path makes it (`planmode.rules.decide`, deny beats allow, dangerous shapes held for a
person unless the rule names them and is confirmed), on the input as stored, redacted: a
secret the agent sent is not there to match.

The rows are read once, narrowed in SQL by window (the decided-time index), tool and project
and, for shell rules, by the pattern's first literal word; they are streamed, and the list of
disagreements is bounded.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q
from django.utils import timezone

from dashboard.policy.history import Decided, decided_requests, median, tool_names_of
from planmode import rules
from planmode.models import RuleBehavior
from planmode.tool_display import describe

WINDOWS = (30, 90, None)
MAX_LISTED = 50
SHELL_TOOLS = frozenset({"Bash", "run_shell_command"})


@dataclass(frozen=True)
class Disagreement:
    """A request the rule would have answered otherwise than the person who did."""

    request_pk: int
    session_pk: int
    tool: str
    headline: str  # what it asked, as stored (redacted)
    decided_by: str
    decided: str  # "allow" or "deny": what the person answered
    decided_at: datetime


@dataclass
class Backtest:
    rule: str
    behavior: str
    project: str
    days: int | None
    # People's decisions in the window the rule matches and would have answered.
    matched: int = 0
    agreed: int = 0
    disagreed: int = 0
    # Newest first, at most MAX_LISTED; `disagreed` counts them all.
    disagreements: list[Disagreement] = field(default_factory=list)
    # Of those, what it would have allowed that a person denied: the dangerous mistakes.
    allowed_denied: int = 0
    allowed_denied_listed: list[Disagreement] = field(default_factory=list)
    # Requests it matches that have a dangerous shape it may not allow: a person is asked.
    held_dangerous: int = 0
    # Requests other team rules answered that it matches too.
    answered_by_rules: int = 0
    # How long the matched requests waited for a person, in seconds.
    waited_total: float = 0.0
    waited_median: float | None = None

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.matched if self.matched else None


def rule_backtest(
    *,
    rule: str,
    behavior: str,
    project: str,
    days: int | None,
    viewer: AbstractBaseUser | AnonymousUser,
    allows_dangerous: bool = False,
    now: datetime | None = None,
) -> Backtest:
    """What `rule` would have answered over the window; ValueError (one sentence) for a rule,
    answer or window that cannot be."""
    if behavior not in RuleBehavior.values:
        raise ValueError("Choose allow or deny.")
    if days not in WINDOWS or isinstance(days, bool):
        raise ValueError("Test the rule on the last 30 days, the last 90, or all of them.")
    parsed = rules.parse_rule(rule)
    project = project.strip()[:200]
    if rules.unstorable(project) or "\x00" in project:
        raise ValueError("The project has characters that cannot be stored; retype it.")
    now = now or timezone.now()
    since = None if days is None else now - timedelta(days=days)
    result = Backtest(rule=str(parsed), behavior=behavior, project=project, days=days)
    waits: list[float] = []
    candidate = [(None, parsed, behavior)]
    for request in decided_requests(viewer, since=since, where=_narrowed(parsed), project=project):
        allowing = behavior == RuleBehavior.ALLOW
        if not rules.rule_matches(
            parsed,
            tool_name=request.tool_name,
            tool_input=request.tool_input,
            cwd=request.cwd,
            allowing=allowing,
        ):
            continue
        if not request.by_person:
            result.answered_by_rules += 1
            continue
        decided = rules.decide(
            candidate,
            tool_name=request.tool_name,
            tool_input=request.tool_input,
            cwd=request.cwd,
            confirmed=lambda _: allows_dangerous,
        )
        if decided is None:
            result.held_dangerous += 1
            continue
        result.matched += 1
        waits.append(request.waited)
        if request.answer == behavior:
            result.agreed += 1
            continue
        _disagree(result, request)
    result.waited_total = math.fsum(waits)
    result.waited_median = median(waits)
    for listed in (result.disagreements, result.allowed_denied_listed):
        listed.sort(key=lambda d: (d.decided_at, d.request_pk), reverse=True)
        del listed[MAX_LISTED:]
    return result


def _disagree(result: Backtest, request: Decided) -> None:
    result.disagreed += 1
    view = describe(request.tool_name, request.tool_input)
    found = Disagreement(
        request_pk=request.pk, session_pk=request.session_pk, tool=view.tool,
        headline=view.headline, decided_by=request.decided_by, decided=request.answer,
        decided_at=request.decided_at,
    )  # fmt: skip
    _keep_newest(result.disagreements, found)
    if result.behavior == RuleBehavior.ALLOW and request.answer == RuleBehavior.DENY:
        result.allowed_denied += 1
        _keep_newest(result.allowed_denied_listed, found)


def _keep_newest(listed: list[Disagreement], found: Disagreement) -> None:
    """At most MAX_LISTED, the newest: the rows arrive in no particular order."""
    listed.append(found)
    if len(listed) > 2 * MAX_LISTED:
        listed.sort(key=lambda d: (d.decided_at, d.request_pk), reverse=True)
        del listed[MAX_LISTED:]


def _narrowed(rule: rules.Rule) -> Q:
    """The rows the rule may match, as SQL can tell: its tool, and for a shell rule the first
    word its pattern spells out (`npm` of `npm test*`), wherever it stands in the command (a
    deny rule matches a part of a chain)."""
    condition = tool_names_of(rule)
    if rule.content is None or rule.content in rules.ANY_CONTENT:
        return condition
    if rule.tool in SHELL_TOOLS:
        first = rule.content.split()[0] if rule.content.split() else ""
        literal = re.split(r"[*]", first.removesuffix(":"), maxsplit=1)[0]
        if len(literal) >= 2:
            condition &= Q(tool_input__command__icontains=literal)
    return condition
