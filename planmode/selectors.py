"""Read models for the review queue, the review page and the session board."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from dashboard.core.errors import ServiceError
from dashboard.core.sql import PreparedQuery
from planmode.models import Plan, PlanStatus

RECENT_DECIDED = 20
SESSION_PLANS = 20
THREAD_LENGTH = 30
DIFF_CONTEXT = 3


def pending_plan_count() -> int:
    """Plans waiting for a reviewer, for the header on every page."""
    return Plan.objects.filter(status=PlanStatus.PENDING).count()


def _with_relations(plans: QuerySet[Plan]) -> QuerySet[Plan]:
    return plans.select_related(
        "session", "session__owner", "agent", "agent__session", "decided_by"
    )


def pending_plans() -> list[Plan]:
    """Oldest waiting first: whoever has waited longest is served first."""
    return list(
        _with_relations(Plan.objects.filter(status=PlanStatus.PENDING)).order_by(
            "submitted_at", "pk"
        )
    )


def recently_decided(limit: int = RECENT_DECIDED) -> list[Plan]:
    return list(
        _with_relations(Plan.objects.exclude(status=PlanStatus.PENDING)).order_by(
            "-decided_at", "-pk"
        )[:limit]
    )


def plan_for_review(plan_id: int) -> Plan | None:
    return _with_relations(Plan.objects.filter(pk=plan_id)).first()


def plans_by_pk(plan_pks: list[int]) -> list[Plan]:
    if not plan_pks:
        return []  # (a query for none still costs its compiling)
    return list(_with_relations(Plan.objects.filter(pk__in=plan_pks)).order_by("pk"))


def plan_for_owner(*, plan_id: int, owner: AbstractBaseUser) -> Plan:
    """A plan of one of the owner's sessions; another user's plan is not found either."""
    plan = plan_for_review(plan_id)
    if plan is None or plan.session.owner_id != owner.pk:
        raise ServiceError(
            "plan_not_found",
            f"There is no plan {plan_id} for this token; use the id returned when the plan "
            "was submitted.",
            status=404,
        )
    return plan


def previous_revision(plan: Plan) -> Plan | None:
    return _with_relations(
        Plan.objects.filter(agent_id=plan.agent_id, revision=plan.revision - 1)
    ).first()


def plan_thread(plan: Plan, limit: int = THREAD_LENGTH) -> list[Plan]:
    """Every revision this agent submitted, newest first: the plan's decision history."""
    return list(
        _with_relations(Plan.objects.filter(agent_id=plan.agent_id)).order_by("-revision")[:limit]
    )


def session_plans(session_pk: int, limit: int = SESSION_PLANS) -> list[Plan]:
    return list(
        _with_relations(Plan.objects.filter(session_id=session_pk)).order_by(
            "-submitted_at", "-pk"
        )[:limit]
    )


def session_pending_plans(session_pk: int) -> list[Plan]:
    return list(
        _with_relations(
            Plan.objects.filter(session_id=session_pk, status=PlanStatus.PENDING)
        ).order_by("submitted_at", "pk")
    )


# Read on every live update of a session: compiled once.
_pending_in_sessions = PreparedQuery(
    Plan,
    lambda pks: (
        Plan.objects.filter(session_id__in=pks, status=PlanStatus.PENDING)
        .select_related("agent", "agent__session")
        .order_by("submitted_at", "pk")
    ),
)


def pending_by_session(session_pks: list[int]) -> dict[int, dict[str, Any]]:
    """For overview rows: how many plans wait in each session, since when, and the one that
    has waited longest (the one to review first)."""
    waiting: dict[int, dict[str, Any]] = {}
    for plan in _pending_in_sessions.rows(session_pks):
        entry = waiting.setdefault(
            plan.session_id,
            {"plans_waiting": 0, "plan_waiting_since": plan.submitted_at, "waiting_plan": plan},
        )
        entry["plans_waiting"] += 1
    return waiting


def sessions_with_pending_plans() -> list[int]:
    return list(
        Plan.objects.filter(status=PlanStatus.PENDING)
        .values_list("session_id", flat=True)
        .distinct()
    )


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "add", "remove", "context" or "gap"
    text: str
    # The line in pieces, ("same" | "changed", text), when only some words of it changed.
    parts: tuple[tuple[str, str], ...] = ()

    @property
    def marker(self) -> str:
        return {"add": "+", "remove": "-", "context": " ", "gap": "⋯"}[self.kind]

    @property
    def pieces(self) -> tuple[tuple[str, str], ...]:
        return self.parts or (("same", self.text),)


@dataclass(frozen=True)
class PlanDiff:
    lines: list[DiffLine]
    added: int
    removed: int

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)


WORDS = re.compile(r"\s+|\w+|[^\w\s]")


def _word_changes(old: str, new: str) -> tuple[tuple, tuple]:
    """Both lines in pieces, the words that differ marked "changed"."""
    old_words, new_words = WORDS.findall(old), WORDS.findall(new)
    old_parts: list[tuple[str, str]] = []
    new_parts: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        kind = "same" if tag == "equal" else "changed"
        if i2 > i1:
            old_parts.append((kind, "".join(old_words[i1:i2])))
        if j2 > j1:
            new_parts.append((kind, "".join(new_words[j1:j2])))
    return tuple(old_parts), tuple(new_parts)


def plan_diff(old: str, new: str) -> list[DiffLine]:
    """Changed lines with a little context, as a reader compares two texts."""
    return plan_changes(old, new).lines


def plan_changes(old: str, new: str) -> PlanDiff:
    """Changed lines with a little context, as a reader compares two revisions; a line that
    was only reworded shows which words changed."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    lines: list[DiffLine] = []
    added = removed = 0
    for group in matcher.get_grouped_opcodes(DIFF_CONTEXT):
        if lines or group[0][1] > 0:
            lines.append(DiffLine("gap", ""))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [DiffLine("context", line) for line in old_lines[i1:i2]]
                continue
            olds, news = old_lines[i1:i2], new_lines[j1:j2]
            removed += len(olds)
            added += len(news)
            if tag == "replace" and len(olds) == len(news):
                pairs = [_word_changes(a, b) for a, b in zip(olds, news, strict=True)]
                lines += [DiffLine("remove", a, p[0]) for a, p in zip(olds, pairs, strict=True)]
                lines += [DiffLine("add", b, p[1]) for b, p in zip(news, pairs, strict=True)]
            else:
                lines += [DiffLine("remove", line) for line in olds]
                lines += [DiffLine("add", line) for line in news]
    return PlanDiff(lines=lines, added=added, removed=removed)
