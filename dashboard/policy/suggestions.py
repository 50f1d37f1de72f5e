"""Suggested team rules: the team's own repeated decisions, written as a rule.

People gave the same answer to equivalent requests (`dashboard.policy.evidence`: same tool,
same project, same command stem, folder, domain or MCP tool) at least AGENTBOARD_SUGGEST_AFTER
times in the last 14 days, and never the other answer: the narrowest rule that covers each of
those requests is suggested, for that project, with what it would have answered. Only the
requests the viewer may see count. Nothing is suggested that a rule in force or in shadow
already covers, no rule is a bare `Tool(*)`, and no allow rule for a request of a dangerous
shape (`planmode.rules.dangerous_shapes`).

A dismissed suggestion stays away for the evidence it was shown with: it comes back only once
as many equivalent decisions as it first needed were made after the dismissal.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Max
from django.utils import timezone

from dashboard.policy.evidence import Stem, rule_text, stem_of
from dashboard.policy.history import Decided, decided_requests
from dashboard.policy.models import DismissedSuggestion
from planmode import rules
from planmode.rulebook import rulebook_current

SUGGEST_DAYS = 14
HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass
class Suggestion:
    key: str
    evidence_digest: str
    rule: str
    behavior: str
    project: str
    tool_name: str
    # The people's decisions it rests on, newest first: what it would have answered.
    evidence: list[Decided] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.evidence)

    @property
    def waited(self) -> float:
        """Seconds these requests waited for a person in all."""
        return sum(request.waited for request in self.evidence)


def suggestion_key(*, project: str, behavior: str, rule: str) -> str:
    return hashlib.sha256(f"{project}\n{behavior}\n{rule}".encode()).hexdigest()


def evidence_digest(request_pks: list[int]) -> str:
    return hashlib.sha256(",".join(map(str, sorted(request_pks))).encode()).hexdigest()


def rule_suggestions(
    *, viewer: AbstractBaseUser | AnonymousUser, now: datetime | None = None
) -> list[Suggestion]:
    """The rules the last 14 days of the viewer's visible decisions suggest, the most
    evidence first."""
    now = now or timezone.now()
    needed = settings.AGENTBOARD_SUGGEST_AFTER
    groups: dict[tuple[str, str, Stem], list[Decided]] = {}
    since = now - timedelta(days=SUGGEST_DAYS)
    for request in decided_requests(viewer, since=since, people_only=True):
        stem = stem_of(request.tool_name, request.tool_input, request.cwd)
        if stem is not None:
            groups.setdefault((request.project, request.tool_name, stem), []).append(request)
    found = []
    for (project, tool_name, stem), requests in groups.items():
        answers = {request.answer for request in requests}
        if len(requests) < needed or len(answers) != 1:
            continue
        suggestion = _suggestion(project, tool_name, stem, answers.pop(), requests, now)
        if suggestion is not None:
            found.append(suggestion)
    found = _not_dismissed(found, needed)
    found.sort(key=lambda s: (-s.count, s.project, s.rule))
    return found


def _suggestion(
    project: str,
    tool_name: str,
    stem: Stem,
    behavior: str,
    requests: list[Decided],
    now: datetime,
) -> Suggestion | None:
    text = rule_text(tool_name, stem, [(request.tool_input, request.cwd) for request in requests])
    try:
        parsed = rules.parse_rule(text)
    except ValueError:
        return None
    allowing = behavior == "allow"
    if parsed.content in rules.ANY_CONTENT or not all(
        _matches(parsed, request, allowing) for request in requests
    ):
        return None
    if allowing and (
        rules.named_shapes(parsed)
        or any(
            rules.dangerous_shapes(request.tool_name, request.tool_input, request.cwd)
            for request in requests
        )
    ):
        return None
    if _covered(project, tool_name, requests, now):
        return None
    requests.sort(key=lambda request: (request.decided_at, request.pk), reverse=True)
    return Suggestion(
        key=suggestion_key(project=project, behavior=behavior, rule=text),
        evidence_digest=evidence_digest([request.pk for request in requests]),
        rule=text, behavior=behavior, project=project, tool_name=tool_name, evidence=requests,
    )  # fmt: skip


def _matches(rule: rules.Rule, request: Decided, allowing: bool) -> bool:
    return rules.rule_matches(
        rule,
        tool_name=request.tool_name,
        tool_input=request.tool_input,
        cwd=request.cwd,
        allowing=allowing,
    )


def _covered(project: str, tool_name: str, requests: list[Decided], now: datetime) -> bool:
    """Whether a rule already written (in force or in shadow, not expired) covers them all."""
    for loaded in rulebook_current().candidates(project, tool_name):
        team_rule = loaded.team_rule
        allowing = team_rule.behavior == "allow"
        if not team_rule.is_expired(now) and all(
            _matches(loaded.rule, request, allowing) for request in requests
        ):
            return True
    return False


def _not_dismissed(found: list[Suggestion], needed: int) -> list[Suggestion]:
    """One query: the latest dismissal of each suggestion found."""
    dismissed = dict(
        DismissedSuggestion.objects.filter(key__in=[s.key for s in found])
        .values("key")
        .annotate(at=Max("dismissed_at"))
        .values_list("key", "at")
    )
    kept = []
    for suggestion in found:
        at = dismissed.get(suggestion.key)
        if at is None or sum(r.decided_at > at for r in suggestion.evidence) >= needed:
            kept.append(suggestion)
    return kept


def suggestion_dismiss(
    *, key: str, evidence_digest: str, user: AbstractBaseUser
) -> DismissedSuggestion:
    """A suggestion set aside for the evidence it was shown with; ValueError (one sentence)
    for keys no suggestion has."""
    if not HEX_DIGEST.fullmatch(key) or not HEX_DIGEST.fullmatch(evidence_digest):
        raise ValueError("That is not a suggestion this page showed; reload the page.")
    return DismissedSuggestion.objects.create(
        key=key, evidence_digest=evidence_digest, dismissed_by=user
    )
