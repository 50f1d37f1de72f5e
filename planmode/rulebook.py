"""The team rules each server process keeps parsed, for the path every permission request takes.

Reading and parsing every rule for every request costs milliseconds once there are hundreds.
Each process keeps them parsed, indexed by project and tool name, and asks the database one
cheap question per request instead: the rules' count, greatest id and latest `updated_at` (one
aggregate over a few hundred rows at most). A rule added anywhere changes the count and the
greatest id, a rule removed the count, a rule saved its `updated_at` (set by every save), so a
change made in any server process is seen by every other at its next request, and the rules are
read again. The database stays the truth: no time-to-live leaves a removed deny rule in force
for a while, and no process learns anything from another's memory. A write that bypasses
`save()` (a queryset's `update()`) sets `updated_at` itself, as the services do.

Expiry is checked at each match, against the clock: an expired rule stays in the index and
decides nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, Max

from planmode import rules
from planmode.models import RuleMode, TeamRule

Version = tuple[int, int | None, datetime | None]


@dataclass(frozen=True)
class Loaded:
    team_rule: TeamRule
    rule: rules.Rule


@dataclass
class _Tools:
    """The rules of one project (or of every project), by the tool name they name."""

    exact: dict[str, list[Loaded]] = field(default_factory=dict)
    # `mcp__github`, `mcp__*`, `Bash*`: matched by `rules.tool_matches`.
    patterned: list[Loaded] = field(default_factory=list)

    def add(self, loaded: Loaded) -> None:
        tool = loaded.rule.tool
        if "*" in tool or (tool.startswith("mcp__") and tool.count("__") == 1):
            self.patterned.append(loaded)
        else:
            self.exact.setdefault(tool, []).append(loaded)

    def of(self, tool_name: str) -> Iterable[Loaded]:
        yield from self.exact.get(tool_name, ())
        yield from (
            loaded for loaded in self.patterned if rules.tool_matches(loaded.rule.tool, tool_name)
        )


@dataclass
class Rulebook:
    version: Version
    projects: dict[str, _Tools] = field(default_factory=dict)

    def candidates(self, project: str, tool_name: str) -> list[Loaded]:
        """The rules that may match a request of this tool in this project, oldest first (the
        order `rules.decide` names the first match in)."""
        found = [
            loaded
            for where in {"", project}
            if where in self.projects
            for loaded in self.projects[where].of(tool_name)
        ]
        found.sort(key=lambda loaded: loaded.team_rule.pk)
        return found


def rulebook_build(team_rules: Iterable[TeamRule], version: Version) -> Rulebook:
    book = Rulebook(version=version)
    for team_rule in team_rules:
        try:
            parsed = rules.parse_rule(team_rule.rule)
        except ValueError:
            continue  # stored before a stricter parser: it matches nothing
        book.projects.setdefault(team_rule.project, _Tools()).add(Loaded(team_rule, parsed))
    return book


_book: Rulebook | None = None


def forget() -> None:
    """Read the rules again at the next request (tests: a new database)."""
    global _book
    _book = None


def _version() -> Version:
    found = TeamRule.objects.order_by().aggregate(
        count=Count("pk"), top=Max("pk"), changed=Max("updated_at")
    )
    return (found["count"], found["top"], found["changed"])


def rulebook_current() -> Rulebook:
    """This process's rules, read again when any has changed: one aggregate query, and the
    rules themselves only after a change."""
    global _book
    version = _version()
    book = _book
    if book is None or book.version != version:
        book = rulebook_build(TeamRule.objects.order_by("pk"), version)
        _book = book
    return book


@dataclass
class Verdicts:
    """What the rules in force answer (None: a person decides), and what each shadow rule that
    matched would have answered."""

    answer: tuple[TeamRule, str] | None
    shadow: list[tuple[TeamRule, str]]


def _confirmed(team_rule: TeamRule) -> bool:
    return team_rule.allows_dangerous


def rules_answer(
    *, project: str, tool_name: str, tool_input: Mapping[str, Any], cwd: str, now: datetime
) -> Verdicts:
    """Deny beats allow among the active, unexpired rules; each shadow rule is asked alone."""
    live = [
        loaded
        for loaded in rulebook_current().candidates(project, tool_name)
        if not loaded.team_rule.is_expired(now)
    ]
    active = [
        (loaded.team_rule, loaded.rule, loaded.team_rule.behavior)
        for loaded in live
        if loaded.team_rule.mode == RuleMode.ACTIVE
    ]
    answer = rules.decide(
        active, tool_name=tool_name, tool_input=tool_input, cwd=cwd, confirmed=_confirmed
    )
    shadow = []
    for loaded in live:
        if loaded.team_rule.mode != RuleMode.SHADOW:
            continue
        alone = [(loaded.team_rule, loaded.rule, loaded.team_rule.behavior)]
        would = rules.decide(
            alone, tool_name=tool_name, tool_input=tool_input, cwd=cwd, confirmed=_confirmed
        )
        if would is not None:
            shadow.append(would)
    return Verdicts(answer, shadow)
