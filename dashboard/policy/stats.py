"""What each team rule did and saved, for the rules page: three queries however many rules.

- hits: the requests it answered, and the last one;
- a shadow rule's agreement so far: what it would have answered (`RuleVerdict`) beside what
  a person answered to the same requests;
- for any rule, the people's decisions of the 30 days before it existed that it matches (as a
  backtest would), how many it agrees with, and how long those requests waited for a person;
- the waiting it saved: the median wait of those requests, times its hits since.

Only the requests the viewer may see count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Max, Q
from django.utils import timezone

from dashboard.core.visibility import audience_of
from dashboard.policy.history import decided_requests, median, merged
from planmode import rules
from planmode.models import PermissionRequest, RequestStatus, RuleVerdict, TeamRule
from planmode.rulebook import rulebook_build

BEFORE = timedelta(days=30)


@dataclass
class RuleStats:
    hits: int = 0
    last_hit: datetime | None = None
    # Shadow verdicts on requests a person answered, and how many agree with the person.
    shadow_compared: int = 0
    shadow_agreed: int = 0
    # The people's decisions of the 30 days before it existed that it matches.
    before_matched: int = 0
    before_agreed: int = 0
    # Seconds: the median wait of those requests, and that times the hits since.
    before_waited_median: float | None = None
    waiting_saved: float = 0.0
    expired: bool = False

    @property
    def shadow_disagreed(self) -> int:
        return self.shadow_compared - self.shadow_agreed

    @property
    def before_disagreed(self) -> int:
        return self.before_matched - self.before_agreed


def rule_stats(
    *,
    team_rules: Sequence[TeamRule],
    viewer: AbstractBaseUser | AnonymousUser,
    now: datetime | None = None,
) -> dict[int, RuleStats]:
    """Each rule's figures by its pk."""
    now = now or timezone.now()
    stats = {rule.pk: RuleStats(expired=rule.is_expired(now)) for rule in team_rules}
    if not stats:
        return stats
    sees = audience_of(viewer).sees("session__")
    answered = (
        PermissionRequest.objects.filter(sees, rule_id__in=list(stats))
        .order_by()
        .values("rule_id")
        .annotate(hits=Count("pk"), last=Max("decided_at"))
        .values_list("rule_id", "hits", "last")
    )
    for rule_pk, hits, last in answered:
        stats[rule_pk].hits, stats[rule_pk].last_hit = hits, last
    _shadow_agreement(stats, viewer)
    _before(team_rules, stats, viewer)
    return stats


def _shadow_agreement(stats: dict[int, RuleStats], viewer: AbstractBaseUser | AnonymousUser):
    by_person = Q(
        request__status__in=(RequestStatus.ALLOWED, RequestStatus.DENIED),
        request__decided_by__isnull=False,
        request__rule__isnull=True,
    )
    verdicts = (
        RuleVerdict.objects.filter(
            audience_of(viewer).sees("request__session__"), by_person, rule_id__in=list(stats)
        )
        .order_by()
        .values("rule_id", "would", "request__status")
        .annotate(n=Count("pk"))
        .values_list("rule_id", "would", "request__status", "n")
    )
    for rule_pk, would, status, n in verdicts:
        stats[rule_pk].shadow_compared += n
        if (would == "allow") == (status == RequestStatus.ALLOWED):
            stats[rule_pk].shadow_agreed += n


def _before(
    team_rules: Sequence[TeamRule],
    stats: dict[int, RuleStats],
    viewer: AbstractBaseUser | AnonymousUser,
) -> None:
    """One pass over the people's decisions of the 30 days before each rule existed."""
    book = rulebook_build(team_rules, version=(0, None, None))
    windows = merged((rule.created_at - BEFORE, rule.created_at) for rule in team_rules)
    waits: dict[int, list[float]] = {pk: [] for pk in stats}
    for request in decided_requests(viewer, since=None, windows=windows, people_only=True):
        for loaded in book.candidates(request.project, request.tool_name):
            team_rule = loaded.team_rule
            if not team_rule.created_at - BEFORE <= request.decided_at < team_rule.created_at:
                continue
            decided = rules.decide(
                [(team_rule.pk, loaded.rule, team_rule.behavior)],
                tool_name=request.tool_name,
                tool_input=request.tool_input,
                cwd=request.cwd,
                confirmed=lambda _, team_rule=team_rule: team_rule.allows_dangerous,
            )
            if decided is None:
                continue
            found = stats[team_rule.pk]
            found.before_matched += 1
            found.before_agreed += request.answer == team_rule.behavior
            waits[team_rule.pk].append(request.waited)
    for pk, found in stats.items():
        found.before_waited_median = median(waits[pk])
        found.waiting_saved = (found.before_waited_median or 0.0) * found.hits
