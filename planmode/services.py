"""Plan review: submit a plan, decide on it exactly once, expire it, and the mode machine.

Each service returns what it changed (`Changes`); the writer hands that to the publisher once
the write has committed, which wakes the waiting agents in every process and updates the boards.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from dashboard.activity.services import step_wait_record
from dashboard.core.audit import Via, audit, audit_statement
from dashboard.core.changes import Changes
from dashboard.core.edge import text_problem
from dashboard.core.errors import ServiceError
from dashboard.core.redaction import redact
from dashboard.core.services import (
    agent_resolve_for_update,
    agent_touch,
    idempotent_replay,
    locked_row,
    session_describe,
)
from dashboard.core.sql import Statement, run_together
from dashboard.core.visibility import audience_of
from dashboard.models import Agent, AuditAction, PermissionMode, Project, Session
from planmode.markdown import plain_text, render_plan
from planmode.models import Annotation, ModeAfter, Plan, PlanApproval, PlanStatus

# Shift+Tab in Claude Code; bypassPermissions only takes its turn when it is available.
MODE_CYCLE = (
    PermissionMode.DEFAULT,
    PermissionMode.ACCEPT_EDITS,
    PermissionMode.PLAN,
    PermissionMode.BYPASS_PERMISSIONS,
)


def permission_mode_next(mode: str, *, bypass_available: bool = False) -> str:
    """The mode after one Shift+Tab: default → acceptEdits → plan → bypassPermissions (when
    available, else default) → default. Modes outside the cycle go back to default."""
    if mode not in MODE_CYCLE:
        return PermissionMode.DEFAULT
    following = MODE_CYCLE[(MODE_CYCLE.index(mode) + 1) % len(MODE_CYCLE)]
    if following == PermissionMode.BYPASS_PERMISSIONS and not bypass_available:
        return PermissionMode.DEFAULT
    return following


def _check_plan_text(plan: str) -> None:
    if not plan.strip():
        raise ServiceError(
            "empty_plan",
            "The plan is empty; send the plan as markdown text in 'plan'.",
            detail=[{"loc": ["body", "plan"], "msg": "must not be empty"}],
        )
    limit = settings.AGENTBOARD_MAX_PLAN_CHARS
    if len(plan) > limit:
        raise ServiceError(
            "plan_too_large",
            f"The plan has {len(plan)} characters but at most {limit} are accepted; "
            "shorten it or keep the details in the plan file.",
            status=413,
            detail=[{"loc": ["body", "plan"], "msg": f"at most {limit} characters"}],
        )


def _request_hash(plan: str, plan_file_path: str | None) -> str:
    body = json.dumps({"plan": plan, "plan_file_path": plan_file_path or ""}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


# Every decision runs these (the reviewer's click and the agent waiting on it wait for them):
# plain SQL, since compiling the ORM's statements costs more than running them.
_FINISH_PLAN = """
    UPDATE planmode_plan SET status = %s, mode_after = %s, feedback = %s, notes = %s,
    decided_by_id = %s, decided_at = %s WHERE id = %s AND status = %s
"""
_SET_MODE = "UPDATE dashboard_session SET permission_mode = %s WHERE id = %s"
# The decision record, written only if the UPDATE above moved the plan (it goes in the same
# trip to the database, before that UPDATE's answer is known).
_INSERT_DECISION = """
    INSERT INTO planmode_decision
        (plan_id, outcome, mode_after, feedback, notes, decided_by_id, decided_by_name, decided_at)
    SELECT %s, %s, %s, %s, %s, %s, %s, %s
    WHERE EXISTS (
        SELECT 1 FROM planmode_plan WHERE id = %s AND status = %s AND decided_at = %s
    )
"""


def _finish(
    plan: Plan,
    *,
    outcome: str,
    reviewer: AbstractBaseUser | None = None,
    mode_after: str | None = None,
    feedback: str = "",
    notes: str = "",
    then: Sequence[Statement] = (),
) -> bool:
    """Move a pending plan to its final state and record the decision, exactly once; `then`
    runs right after, in the same round trip to the database.

    The conditional UPDATE is the arbiter: of two concurrent callers only one matches a row
    still pending. Returns False for the one that lost (which must then not commit `then`).
    """
    now = timezone.now()
    stamp = connection.ops.adapt_datetimefield_value(now)
    reviewer_pk = reviewer.pk if reviewer else None
    name = reviewer.get_username() if reviewer else ""
    finish = [outcome, mode_after, feedback, notes, reviewer_pk, stamp, plan.pk, PlanStatus.PENDING]
    record = [plan.pk, outcome, mode_after, feedback, notes, reviewer_pk, name, stamp]
    moved, *_ = run_together(
        [(_FINISH_PLAN, finish), (_INSERT_DECISION, [*record, plan.pk, outcome, stamp]), *then]
    )
    if moved != 1:
        return False
    plan.status, plan.mode_after, plan.feedback, plan.notes = outcome, mode_after, feedback, notes
    plan.decided_by, plan.decided_at = reviewer, now
    return True


@dataclass
class PlanChange:
    plan: Plan
    changes: Changes = field(default_factory=Changes)


def _changes(*, decided: list[Plan], submitted: Plan | None = None) -> Changes:
    """Waiting agents of the decided plans are told their state; pages show all of them."""
    changes = Changes(decided_plans={plan.pk: plan_state(plan) for plan in decided})
    changes.plans = {plan.pk for plan in decided} | ({submitted.pk} if submitted else set())
    # The agent's card and its session's row say whether a plan waits on the lead.
    for plan in [*decided, *([submitted] if submitted else [])]:
        changes.agent(plan.agent_id, plan.session_id)
    return changes


def plan_submit(
    *,
    owner: AbstractBaseUser,
    session_id: str,
    agent_id: str,
    plan: str,
    plan_file_path: str | None,
    source: str,
    idempotency_key: str | None = None,
    agent_type: str = "",
    cwd: str = "",
    client: str = "",
    held_for: float | None = None,
) -> PlanChange:
    """A new pending plan revision from an agent (ExitPlanMode); the session goes to plan mode.

    The agent's older pending revision is withdrawn: only the newest one can be decided. A retry
    with the same idempotency key and body returns the first plan and changes nothing.
    `held_for`: the seconds a held hook waits for the decision, when one does.
    Secrets in the plan are redacted before it is stored (or hashed).
    """
    _check_plan_text(plan)
    plan = redact(plan)
    request_hash = _request_hash(plan, plan_file_path)
    with transaction.atomic(savepoint=False):
        resolved = agent_resolve_for_update(
            owner=owner,
            session_id=session_id,
            agent_id=agent_id,
            agent_type=agent_type,
            cwd=cwd,
            client=client,
        )
        agent = resolved.agent
        earlier = idempotent_replay(
            agent.plans.all(), key=idempotency_key, request_hash=request_hash, what="plan"
        )
        if earlier is not None:
            return PlanChange(earlier)
        withdrawn = [
            older
            for older in agent.plans.select_related("decided_by").filter(status=PlanStatus.PENDING)
            if _finish(older, outcome=PlanStatus.WITHDRAWN)
        ]
        for older in withdrawn:
            older.agent, older.session = agent, agent.session
        latest = agent.plans.order_by("-revision").values_list("revision", flat=True).first()
        new_plan = Plan.objects.create(
            session=agent.session,
            agent=agent,
            revision=(latest or 0) + 1,
            markdown=plan,
            plan_file_path=plan_file_path or "",
            source=source,
            idempotency_key=idempotency_key or None,
            request_hash=request_hash,
            held_until=held_until(held_for),
        )
        titled = session_describe(session=agent.session, title=new_plan.title)
        agent_touch(agent=agent)
        if source != Plan.Source.IMPORT:
            step_wait_record(
                agent_pk=agent.pk, tool_name="ExitPlanMode", waited_on=f"plan:{new_plan.pk}"
            )
        if source != Plan.Source.IMPORT and not agent.awaiting_plan:
            Agent.objects.filter(pk=agent.pk).update(awaiting_plan=True)
            agent.awaiting_plan = True
        Session.objects.filter(pk=agent.session.pk).update(permission_mode=PermissionMode.PLAN)
        agent.session.permission_mode = PermissionMode.PLAN
        # A plan can be the first sign of an agent: its card and overview row appear too.
        changes = resolved.changes().merge(_changes(decided=withdrawn, submitted=new_plan))
        if titled:
            changes.sessions.add(agent.session.pk)
    return PlanChange(new_plan, changes)


def plan_already_decided(plan: Plan) -> ServiceError:
    who = plan.decided_by.get_username() if plan.decided_by else None
    when = timezone.localtime(plan.decided_at).strftime("%H:%M:%S") if plan.decided_at else ""
    if plan.status in (PlanStatus.APPROVED, PlanStatus.REJECTED) and who:
        text = f"{who} already {plan.status} this plan at {when}"
    elif plan.status == PlanStatus.WITHDRAWN:
        text = "This plan was replaced by a newer revision before anyone decided"
    elif plan.status == PlanStatus.ANSWERED_IN_TERMINAL:
        text = (
            "This plan was answered in the agent's terminal before anyone decided here, and "
            "the agent has moved on"
        )
    elif plan.status == PlanStatus.EXPIRED and plan.end_reason:
        text = f"This plan expired: {plan.end_reason}"
    else:
        text = f"This plan is already {plan.status}"
    return ServiceError(
        "already_decided", f"{text}; open the plan again to see the decision.", status=409
    )


def held_until(held_for: float | None) -> datetime | None:
    """When a hold of `held_for` seconds starting now ends."""
    return timezone.now() + timedelta(seconds=held_for) if held_for else None


def nobody_waits(held_until: datetime | None) -> bool:
    """Whether the hook that held this request has stopped waiting for its answer."""
    return held_until is not None and timezone.now() >= held_until


def nobody_waiting(what: str) -> ServiceError:
    return ServiceError(
        "nobody_waiting",
        f"The agent stopped waiting for an answer to this {what}, so nothing was sent or "
        "recorded; it asks in its terminal instead.",
        status=409,
    )


def already_staged(staged_answer: dict[str, Any], what: str) -> ServiceError:
    """A decision refused because someone's decision on the same item waits in its undo
    window."""
    who = staged_answer.get("by_name") or "Someone"
    return ServiceError(
        "already_decided",
        f"{who} already decided this {what} and it is about to be sent; undo that first to "
        "decide differently.",
        status=409,
    )


def plan_hold(*, plan: Plan, held_for: float) -> None:
    """Another held hook waits on this pending plan (the same request delivered twice)."""
    plan.held_until = held_until(held_for)
    Plan.objects.filter(pk=plan.pk, status=PlanStatus.PENDING).update(held_until=plan.held_until)


def decision_feedback_check(*, approve: bool, feedback: str) -> str:
    """The reviewer's words, stripped; refused when unusable, or missing from a rejection:
    comments on the plan alone are not enough, the agent needs to read what should change."""
    feedback = redact(feedback.strip())
    problem = text_problem(feedback)
    if problem:
        raise ServiceError(
            "invalid_feedback",
            f"The feedback {problem}; remove those characters and decide again.",
            detail=[{"loc": ["feedback"], "msg": problem}],
        )
    if not approve and not feedback:
        raise ServiceError(
            "feedback_required",
            "Write what should change in the feedback box; a rejection needs it for the agent.",
            detail=[{"loc": ["feedback"], "msg": "required when rejecting"}],
        )
    return feedback


def plan_decide(
    *,
    plan_id: int,
    reviewer: AbstractBaseUser,
    approve: bool,
    auto_accept: bool = False,
    feedback: str = "",
    check: bool = True,
    via: Via | None = None,
) -> PlanChange:
    """Approve or reject a pending plan, exactly once, as one of its session's reviewers
    (`check` False: recording a decision already made elsewhere, as the importer does).

    `feedback` is the reviewer's text: required when rejecting, even with comments on the plan
    (it goes back to the agent), optional notes when approving. Approval ends plan mode
    (default, or acceptEdits with `auto_accept`) unless another plan of the session still
    waits; rejection keeps plan mode.
    """
    feedback = decision_feedback_check(approve=approve, feedback=feedback)
    # On PostgreSQL: BEGIN, the plan read, every write at once, COMMIT; four round trips.
    with transaction.atomic(savepoint=False):
        plan = _plan_to_decide(plan_id)
        if plan is None:
            raise plan_not_found(plan_id)
        if check:
            check_may_decide(reviewer, plan)
        if not plan.is_pending:
            raise plan_already_decided(plan)
        if check and plan.staged_answer is not None:
            # Someone decided first, in the browser; it is sent when its undo window ends
            # (which clears it before deciding through here).
            raise already_staged(plan.staged_answer, "plan")
        if nobody_waits(plan.held_until):
            raise nobody_waiting("plan")
        plan.agent.session = plan.session  # the plan's agent works in the plan's session
        if approve and check:
            earlier = _approvals_so_far(plan, reviewer, notes=feedback, auto_accept=auto_accept)
            if earlier is None:  # one of two: the plan waits for a second reviewer
                audit(
                    AuditAction.PLAN_APPROVAL, actor=reviewer, via=via, session=plan.session,
                    about=f"plan:{plan.pk}", summary=_decision_summary(plan, feedback),
                )  # fmt: skip
                return PlanChange(
                    plan, Changes(plans={plan.pk}).agent(plan.agent_id, plan.session_id)
                )
            feedback = earlier
        annotations = plan_annotations(plan) if plan.commented else []
        # What the agent is told: the reviewer's words and each comment on the plan's text.
        feedback = feedback_with_annotations(feedback, annotations)
        # The audit log's entry goes in the same round trip as the decision (none for a
        # decision only recorded here, as the importer's).
        recorded = (
            [
                audit_statement(
                    (AuditAction.PLAN_APPROVED_AUTO if auto_accept else AuditAction.PLAN_APPROVED)
                    if approve
                    else AuditAction.PLAN_REJECTED,
                    actor=reviewer, via=via, session=plan.session, about=f"plan:{plan.pk}",
                    summary=_decision_summary(plan, feedback),
                )
            ]
            if check
            else []
        )  # fmt: skip
        if approve:
            mode_after = ModeAfter.ACCEPT_EDITS if auto_accept else ModeAfter.DEFAULT
            # Plan mode ends with the approval, unless another plan of the session still waits.
            ends_plan_mode = not plan.others_waiting
            won = _finish(
                plan,
                outcome=PlanStatus.APPROVED,
                reviewer=reviewer,
                mode_after=mode_after,
                notes=feedback,
                then=[
                    *([(_SET_MODE, [mode_after, plan.session_id])] if ends_plan_mode else []),
                    *recorded,
                ],
            )
            if ends_plan_mode:
                plan.session.permission_mode = mode_after
        else:
            won = _finish(
                plan,
                outcome=PlanStatus.REJECTED,
                reviewer=reviewer,
                feedback=feedback,
                then=recorded,
            )
        if not won:  # not while the row is locked; if it ever happens, nothing commits
            plan.refresh_from_db()
            raise plan_already_decided(plan)
    return PlanChange(plan, _changes(decided=[plan]))


def _decision_summary(plan: Plan, said: str) -> str:
    """The plan's title and revision, and what the reviewer said with the decision."""
    head = f"{plan.title} (revision {plan.revision})"
    return f"{head}\n{said}" if said else head


# A reviewer's click and the agent waiting on it wait for this one read, compiled once: the
# plan, locked, with its session and agent, whether anyone commented on it, and whether another
# plan of its session waits too.
_plan_to_decide = locked_row(
    Plan,
    "session",
    "agent",
    # How many reviewers its project asks to approve it (read with the plan, not after).
    approvals_needed=Coalesce(
        Subquery(
            Project.objects.filter(pk=OuterRef("session__project_record")).values(
                "approvals_required"
            )[:1]
        ),
        1,
    ),
    commented=Exists(Annotation.objects.filter(plan=OuterRef("pk"))),
    others_waiting=Exists(
        Plan.objects.filter(session=OuterRef("session"), status=PlanStatus.PENDING).exclude(
            pk=OuterRef("pk")
        )
    ),
)


# --- annotations ---------------------------------------------------------------------------

QUOTE_LIMIT = 2000
COMMENT_LIMIT = 5000
QUOTED_IN_FEEDBACK = 300


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def plan_text(plan: Plan) -> str:
    """The plan's words as the review page shows them (what a reviewer can select)."""
    return plain_text(render_plan(plan.markdown))


def plan_annotations(plan: Plan) -> list[Annotation]:
    """A plan's annotations in the order their text appears in the plan."""
    annotations = list(plan.annotations.select_related("author"))
    text = plan_text(plan) if annotations else ""

    def position(annotation: Annotation) -> tuple[int, int]:
        found = text.find(_collapse(annotation.quote))
        return (found if found >= 0 else len(text), annotation.pk)

    return sorted(annotations, key=position)


def feedback_with_annotations(text: str, annotations: list[Annotation]) -> str:
    """The reviewer's words, then every annotation as quoted text plus what to do with it."""
    parts = [text] if text else []
    if annotations:
        lines = ["Comments on parts of the plan:"]
        for number, annotation in enumerate(annotations, 1):
            quote = _collapse(annotation.quote)
            if len(quote) > QUOTED_IN_FEEDBACK:
                quote = quote[: QUOTED_IN_FEEDBACK - 1] + "…"
            if annotation.kind == Annotation.Kind.DELETE:
                line = f'{number}. Remove "{quote}"'
            elif annotation.kind == Annotation.Kind.REPLACE:
                line = f'{number}. Replace "{quote}" with "{annotation.replacement}"'
            else:
                line = f'{number}. On "{quote}"'
            if annotation.comment:
                line += f": {annotation.comment}"
            lines.append(line)
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


@dataclass
class AnnotationChange:
    annotation: Annotation | None
    changes: Changes = field(default_factory=Changes)


def _pending_plan_for_update(plan_id: int, user: AbstractBaseUser) -> Plan:
    plan = (
        Plan.objects.select_for_update(of=("self",))
        .select_related("decided_by", "session")
        .filter(pk=plan_id)
        .first()
    )
    if plan is None:
        raise plan_not_found(plan_id)
    check_may_decide(user, plan)
    if not plan.is_pending:
        raise ServiceError(
            "already_decided",
            "This plan has been decided, so its comments are final; comment on the next "
            "revision instead.",
            status=409,
        )
    return plan


def _check_annotation(*, kind: str, comment: str, replacement: str, quote: str) -> None:
    for name, text in (("comment", comment), ("replacement", replacement), ("text", quote)):
        problem = text_problem(text)
        if problem:
            raise ServiceError(
                "invalid_text", f"The {name} {problem}; remove those characters and save again."
            )
    if kind not in Annotation.Kind.values:
        raise ServiceError("invalid_kind", "Choose comment, delete or replace.")
    if kind == Annotation.Kind.COMMENT and not comment:
        raise ServiceError(
            "comment_required", "Write the comment for the selected text, then save it."
        )
    if kind == Annotation.Kind.REPLACE and not replacement:
        raise ServiceError(
            "replacement_required", "Write the text that should replace the selection."
        )
    if len(comment) > COMMENT_LIMIT or len(replacement) > COMMENT_LIMIT:
        raise ServiceError(
            "comment_too_long", f"Keep a comment under {COMMENT_LIMIT} characters.", status=413
        )


def annotation_save(
    *,
    plan_id: int,
    author: AbstractBaseUser,
    quote: str,
    kind: str,
    comment: str = "",
    replacement: str = "",
    annotation_id: int | None = None,
) -> AnnotationChange:
    """Add an annotation to a waiting plan, or change one (`annotation_id`). The quote must be
    text of the plan, as the review page shows it."""
    comment, replacement, quote = comment.strip(), replacement.strip(), _collapse(quote)
    _check_annotation(kind=kind, comment=comment, replacement=replacement, quote=quote)
    with transaction.atomic(savepoint=False):
        plan = _pending_plan_for_update(plan_id, author)
        if annotation_id is not None:
            annotation = plan.annotations.filter(pk=annotation_id).first()
            if annotation is None:
                raise ServiceError(
                    "annotation_not_found",
                    "That comment is gone (someone removed it); select the text again.",
                    status=404,
                )
            quote = quote or annotation.quote
        else:
            annotation = Annotation(plan=plan, created_at=timezone.now())
        if not quote:
            raise ServiceError("quote_required", "Select the text in the plan to comment on.")
        if len(quote) > QUOTE_LIMIT:
            raise ServiceError(
                "quote_too_long",
                f"Select at most {QUOTE_LIMIT} characters of the plan for one comment.",
                status=413,
            )
        if quote not in plan_text(plan):
            raise ServiceError(
                "quote_not_in_plan",
                "The selected text is not in this plan; select it in the plan again.",
            )
        # The quote is text of the (redacted) plan; a person's words may hold a secret too.
        annotation.quote, annotation.kind = redact(quote), kind
        annotation.comment, annotation.replacement = redact(comment), redact(replacement)
        annotation.author = author
        annotation.author_name = author.get_username()
        annotation.updated_at = timezone.now()
        annotation.save()
    return AnnotationChange(annotation, Changes(annotated_plans={plan_id}))


def annotation_remove(
    *, plan_id: int, annotation_id: int, user: AbstractBaseUser
) -> AnnotationChange:
    with transaction.atomic(savepoint=False):
        _pending_plan_for_update(plan_id, user)
        Annotation.objects.filter(plan_id=plan_id, pk=annotation_id).delete()
    return AnnotationChange(None, Changes(annotated_plans={plan_id}))


def plans_answered_elsewhere(*, agent: Agent) -> Changes:
    """The agent moved on while a plan of its waited for a reviewer: Claude Code shows its own
    prompt beside the held hook, and the developer answered there first. Those plans become
    answered in the terminal (their held hooks are let go with nothing to say, later decisions
    are refused), so a late click can never change a session that went its own way."""
    pending = list(
        Plan.objects.select_related("session", "agent", "agent__session", "decided_by").filter(
            agent=agent, status=PlanStatus.PENDING
        )
    )
    Agent.objects.filter(pk=agent.pk).update(awaiting_plan=False)
    agent.awaiting_plan = False
    answered = [plan for plan in pending if _finish(plan, outcome=PlanStatus.ANSWERED_IN_TERMINAL)]
    return _changes(decided=answered) if answered else Changes()


def plan_watched(*, plan_id: int) -> None:
    """An agent socket (re)started waiting on this plan."""
    Plan.objects.filter(pk=plan_id, status=PlanStatus.PENDING).update(watched_at=timezone.now())


def plan_expire_unless_watched(*, plan_id: int, since: datetime) -> PlanChange:
    """The socket that waited on this plan closed at `since`: unless a socket (of any server
    process) has watched it again since, nobody waits for it any more and it expires. Claude
    Code kills a command hook without a word, so its socket closing is all the server hears."""
    watched = Plan.objects.filter(
        pk=plan_id, status=PlanStatus.PENDING, watched_at__gte=since
    ).exists()
    if watched:
        return PlanChange(Plan(pk=plan_id))
    return plan_expire(plan_id=plan_id)


def plan_expire(*, plan_id: int) -> PlanChange:
    """Nobody decided in time (a held hook gave up): pending becomes expired; else nothing.

    The session keeps its mode: the agent falls back to asking in its own terminal."""
    with transaction.atomic(savepoint=False):
        plan = (
            Plan.objects.select_related("session", "agent", "agent__session", "decided_by")
            .filter(pk=plan_id)
            .first()
        )
        if plan is None:
            raise plan_not_found(plan_id)
        if _finish(plan, outcome=PlanStatus.EXPIRED):
            return PlanChange(plan, _changes(decided=[plan]))
    return PlanChange(plan)


def approvals_required(session: Session) -> int:
    """How many different reviewers approve each plan of the session (its project's rule)."""
    if session.project_record_id is None:
        return 1
    return (
        Project.objects.filter(pk=session.project_record_id)
        .values_list("approvals_required", flat=True)
        .first()
        or 1
    )


def _approvals_so_far(
    plan: Plan, reviewer: AbstractBaseUser, *, notes: str, auto_accept: bool
) -> str | None:
    """An approval of a plan whose project asks for two: recorded; None while it is the first
    (the plan keeps waiting), else the notes the agent is told: each approver's, named."""
    required = plan.approvals_needed
    if required < 2:
        return notes
    earlier = list(plan.approvals.all())
    if any(approval.reviewer_id == reviewer.pk for approval in earlier):
        raise ServiceError(
            "already_approved",
            "You have approved this plan already; it needs a second, different reviewer's "
            "approval.",
            status=409,
        )
    PlanApproval.objects.create(
        plan=plan,
        reviewer=reviewer,
        reviewer_name=reviewer.get_username(),
        notes=redact(notes),
        auto_accept=auto_accept,
    )
    if len(earlier) + 1 < required:
        return None
    said = [f"{a.reviewer_name}: {a.notes}" for a in earlier if a.notes]
    if said and notes:
        said.append(f"{reviewer.get_username()}: {notes}")
        return "\n\n".join(said)
    return "\n\n".join(said) or notes


def check_may_decide(user: AbstractBaseUser, plan: Plan) -> None:
    """Only the reviewers of the plan's session decide it, comment on it or take a decision
    back (`dashboard.core.visibility`); to anyone who does not see the session it is not
    there."""
    session = plan.session
    audience = audience_of(user)
    if not audience.may_see(session):
        raise plan_not_found(plan.pk)
    if not audience.may_decide(session):
        raise ServiceError(
            "not_allowed",
            "Only reviewers can decide on plans, and this project's team has its own; "
            "ask an admin to make you one of its reviewers."
            if session.team_id is not None
            else "Only reviewers can decide on plans; ask an admin for the review permission.",
            status=403,
        )


def plan_not_found(plan_id: int) -> ServiceError:
    return ServiceError(
        "plan_not_found",
        f"There is no plan {plan_id}; use the id returned when the plan was submitted.",
        status=404,
    )


def plan_message(plan: Plan) -> str:
    """The text an agent hands its model as the ExitPlanMode tool result, in our own words."""
    if plan.status == PlanStatus.APPROVED:
        if plan.agent.is_main:
            auto = (
                " File edits will be accepted without asking."
                if plan.mode_after == ModeAfter.ACCEPT_EDITS
                else ""
            )
            text = (
                "The reviewer approved your plan, so plan mode is over and you may start."
                f"{auto} Before the first change, update your todo list so it follows the "
                "plan, then work through it item by item."
            )
        else:
            text = "The reviewer approved this plan. Nothing more is needed from you for it."
        if plan.notes:
            text += f"\n\nNotes from the reviewer:\n{plan.notes}"
        return text
    if plan.status == PlanStatus.REJECTED:
        return (
            "The reviewer did not approve the plan, so you stay in plan mode: keep to "
            "reading and research, and do not edit anything yet. Their feedback:\n"
            f"{plan.feedback}\n\nRework the plan with this in mind and submit it again."
        )
    if plan.status == PlanStatus.WITHDRAWN:
        return (
            "This plan was replaced by a newer revision from the same agent before anyone "
            "decided; only the newest revision will be decided."
        )
    if plan.status == PlanStatus.ANSWERED_IN_TERMINAL:
        return (
            "This plan was answered in your terminal before a reviewer decided on the board; "
            "go on as you were told there."
        )
    if plan.status == PlanStatus.EXPIRED:
        return (
            "Nobody decided on this plan in time, so it expired. Ask the user directly, "
            "or submit the plan again."
        )
    return "The plan is waiting for a reviewer's decision; keep waiting and do not start yet."


def plan_state(plan: Plan) -> dict[str, Any]:
    """The plan as agents see it (API.md plan state): same over HTTP, socket and hooks."""
    return {
        "id": plan.pk,
        "session_id": plan.session.session_id,
        "agent_id": plan.agent.agent_id,
        "revision": plan.revision,
        "status": plan.status,
        "mode_after": plan.mode_after,
        "feedback": plan.feedback or plan.notes,
        "decided_by": plan.decided_by.get_username() if plan.decided_by else None,
        "decided_at": plan.decided_at.isoformat() if plan.decided_at else None,
        "message": plan_message(plan),
    }
