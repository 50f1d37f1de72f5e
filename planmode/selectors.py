"""Read models for the review queue, the review page and the session board."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Min, QuerySet

from dashboard.errors import ServiceError
from planmode.models import Plan, PlanStatus

RECENT_DECIDED = 20
SESSION_PLANS = 20
THREAD_LENGTH = 30
DIFF_CONTEXT = 3
HUNK_HEADER = re.compile(r"^@@ -(\d+)")


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


def pending_by_session(session_pks: list[int]) -> dict[int, dict[str, int | datetime]]:
    """For overview rows: how many plans wait in each session and since when."""
    rows = (
        Plan.objects.filter(session_id__in=session_pks, status=PlanStatus.PENDING)
        .values("session_id")
        .annotate(count=Count("pk"), since=Min("submitted_at"))
    )
    return {
        row["session_id"]: {"plans_waiting": row["count"], "plan_waiting_since": row["since"]}
        for row in rows
    }


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "add", "remove", "context" or "gap"
    text: str

    @property
    def marker(self) -> str:
        return {"add": "+", "remove": "-", "context": " ", "gap": "⋯"}[self.kind]


def plan_diff(old: str, new: str) -> list[DiffLine]:
    """Changed lines with a little context, as a reader compares two revisions."""
    lines = []
    for line in difflib.unified_diff(
        old.splitlines(), new.splitlines(), n=DIFF_CONTEXT, lineterm=""
    ):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            hunk = HUNK_HEADER.match(line)
            # A gap marks skipped unchanged lines; none before a hunk that starts at the top.
            if lines or (hunk and int(hunk.group(1)) > 1):
                lines.append(DiffLine("gap", ""))
        elif line.startswith("+"):
            lines.append(DiffLine("add", line[1:]))
        elif line.startswith("-"):
            lines.append(DiffLine("remove", line[1:]))
        else:
            lines.append(DiffLine("context", line[1:]))
    return lines
