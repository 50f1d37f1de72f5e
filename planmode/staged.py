"""The undo window: a decision a person makes in the browser is held back for a few seconds.

Approving or rejecting a plan on its review page, or allowing or denying a permission request
in the inbox, stores the answer on the row (`staged_answer`, `sends_at`) and leaves the row
pending: the waiting agent hears nothing, and every page shows the decision as made but not sent
yet, with an Undo. An undo before `sends_at` clears it, and the item waits as before. At
`sends_at` the decision is made through the same services as an immediate one
(`services.plan_decide`, `permissions.permission_decide`), so what the agent receives is the
same. The deciding process schedules that moment (`release_later`); every process's periodic
sweep also releases whatever is due (`staged_release_due`), so a decision staged by a process
that stopped is still sent. Decisions by tokens, push notifications and team rules are never
staged: there is no page to undo them from.

Exactly one decision wins, whatever the number of processes: staging is a conditional update
of a row still pending with nothing staged (on PostgreSQL the second of two concurrent ones
waits for the first's row lock, then matches nothing), and a decision sent at once
(`plan_decide`, `permission_decide`) refuses a row with a decision staged, in the same way. An
Undo and the window's end race on one conditional update too.

A window never outlasts the wait of the hook that holds the request: it ends
`SEND_BEFORE_DEADLINE` before the hook gives up (or at once, when less is left), and the pages
say so, since an answer that reached nobody would be a click that did nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from dashboard.core import reader
from dashboard.core.audit import Via, audit
from dashboard.core.changes import Changes, Outcome
from dashboard.core.errors import ServiceError
from dashboard.core.loops import PerLoop
from dashboard.core.redaction import redact
from dashboard.core.writer import write_behind
from dashboard.models import AuditAction
from planmode import permissions, services
from planmode.models import PermissionRequest, Plan, PlanStatus, RequestStatus
from planmode.tool_display import describe

logger = logging.getLogger(__name__)

# At most this many of each kind per release: one write of the writer's.
RELEASE_BATCH = 100
# A staged decision is sent at least this long before the hook that waits for it gives up, so
# that it still reaches the hook on a busy server.
SEND_BEFORE_DEADLINE = timedelta(seconds=2)


def undo_seconds() -> float:
    """How long a person's decision waits before it is sent; 0 sends it at once."""
    return float(settings.AGENTBOARD_UNDO_SECONDS)


@dataclass
class Staged:
    """Decisions held back until the times in `sends_at` (one each, or a sooner one for a
    hook that stops waiting before the window ends): the plans or requests, and what pages
    show."""

    sends_at: set[datetime]
    plan_ids: list[int] = field(default_factory=list)
    request_ids: list[int] = field(default_factory=list)
    # Requests of a bulk answer someone (or something) else answered first, each with why.
    missed: list[str] = field(default_factory=list)
    changes: Changes = field(default_factory=Changes)


def _who(user: AbstractBaseUser, via: Via | None = None) -> dict[str, Any]:
    """Who staged the answer, and from where (recorded in the audit log when it is sent)."""
    return {"by": user.pk, "by_name": user.get_username(), "via": (via or Via()).as_data()}


def _plan_changes(plan: Plan) -> Changes:
    # Not a decision yet: the queue, boards, review pages, cards and counts re-render; no
    # waiting agent is woken.
    return Changes(plans={plan.pk}).agent(plan.agent_id, plan.session_id)


def _window(
    *, now: datetime, seconds: float, held_until: datetime | None
) -> tuple[datetime, dict[str, Any]]:
    """When a decision staged `now` is sent: after `seconds`, or sooner when the hook that
    holds the request stops waiting before then (with what the pages say about it)."""
    sends_at = now + timedelta(seconds=seconds)
    if held_until is None or sends_at <= held_until - SEND_BEFORE_DEADLINE:
        return sends_at, {}
    return max(now, held_until - SEND_BEFORE_DEADLINE), {"stops_waiting_at": held_until.isoformat()}


def plan_stage(
    *,
    plan_id: int,
    reviewer: AbstractBaseUser,
    approve: bool,
    auto_accept: bool = False,
    feedback: str = "",
    seconds: float,
    via: Via | None = None,
) -> Staged:
    """A reviewer's approval or rejection, checked as `plan_decide` checks it, held back for
    `seconds`; the plan stays pending."""
    feedback = services.decision_feedback_check(approve=approve, feedback=feedback)
    with transaction.atomic(savepoint=False):
        plan = (
            Plan.objects.select_for_update(of=("self",))
            .select_related("decided_by", "session")
            .filter(pk=plan_id)
            .first()
        )
        if plan is None:
            raise services.plan_not_found(plan_id)
        services.check_may_decide(reviewer, plan)
        if not plan.is_pending:
            raise services.plan_already_decided(plan)
        if plan.staged_answer is not None:
            raise services.already_staged(plan.staged_answer, "plan")
        if services.nobody_waits(plan.held_until):
            raise services.nobody_waiting("plan")
        sends_at, note = _window(now=timezone.now(), seconds=seconds, held_until=plan.held_until)
        answer = {"approve": approve, "auto_accept": auto_accept, "feedback": feedback}
        staged_answer = {**answer, **_who(reviewer, via), **note}
        won = Plan.objects.filter(
            pk=plan.pk, status=PlanStatus.PENDING, staged_answer__isnull=True
        ).update(staged_answer=staged_answer, sends_at=sends_at)
        if not won:
            raise _refusal(Plan.objects.select_related("decided_by").get(pk=plan.pk))
        plan.staged_answer, plan.sends_at = staged_answer, sends_at
    return Staged({sends_at}, plan_ids=[plan.pk], changes=_plan_changes(plan))


def _refusal(row: Plan | PermissionRequest) -> ServiceError:
    """Why a decision on `row` (read again after another one won) was refused."""
    if isinstance(row, Plan):
        if row.staged_answer is not None:
            return services.already_staged(row.staged_answer, "plan")
        return services.plan_already_decided(row)
    return permissions.decided_first(row)


def _stage_request(
    request: PermissionRequest,
    *,
    user: AbstractBaseUser,
    answer: permissions.Answer,
    seconds: float,
    via: Via | None = None,
) -> datetime | str:
    """Stage one request: when it is sent, or why it cannot be."""
    if not request.is_pending or request.staged_answer is not None:
        return permissions.decided_first(request).message
    if services.nobody_waits(request.held_until):
        return services.nobody_waiting("request").message
    if answer.allow and answer.remember:
        # Refused now, while the person still looks, not when it is sent.
        permissions.remembered_permissions(
            request, choice=answer.remember, pattern=answer.pattern, where=answer.where
        )
    sends_at, note = _window(now=timezone.now(), seconds=seconds, held_until=request.held_until)
    # The deny message waits redacted, as it is stored once sent.
    said = {"message": redact(answer.message.strip())}
    staged = {**asdict(answer), **said, **_who(user, via), **note}
    won = PermissionRequest.objects.filter(
        pk=request.pk, status=RequestStatus.PENDING, staged_answer__isnull=True
    ).update(staged_answer=staged, sends_at=sends_at)
    if not won:
        return _refusal(permissions.request_load(request.pk)).message
    request.staged_answer, request.sends_at = staged, sends_at
    return sends_at


def _request_changes(requests: Sequence[PermissionRequest]) -> Changes:
    return Changes(permission_requests={request.pk for request in requests})


def permission_stage(
    *,
    request_ids: Sequence[int],
    user: AbstractBaseUser,
    answer: permissions.Answer,
    seconds: float,
    via: Via | None = None,
) -> Staged:
    """A person's answer to one request, or the same answer to several identical ones (as
    `permission_decide` and `permission_decide_many` check them), held back for `seconds`."""
    answer.check()
    ids = sorted(set(request_ids))
    if not ids:
        raise ServiceError("nothing_selected", "Select the requests to answer first.")
    with transaction.atomic(savepoint=False):
        requests = [permissions.request_load(pk) for pk in ids]
        if len({request.input_key for request in requests}) > 1:
            raise ServiceError(
                "not_identical",
                "Only identical requests (the same tool with the same input) can be answered "
                "together; answer the others one by one.",
            )
        for request in requests:
            permissions.check_may_answer(user, request)
        staged, missed, sends_at = [], [], set()
        for request in requests:
            sent = _stage_request(request, user=user, answer=answer, seconds=seconds, via=via)
            if isinstance(sent, str):
                missed.append(sent)
            else:
                staged.append(request)
                sends_at.add(sent)
        if not staged:
            if len(ids) == 1:
                raise ServiceError("already_decided", missed[0], status=409)
            raise ServiceError(
                "already_decided",
                "Every selected request was already answered; nothing changed.",
                status=409,
            )
    return Staged(
        sends_at,
        request_ids=[request.pk for request in staged],
        missed=missed,
        changes=_request_changes(staged),
    )


def _not_undoable(what: str) -> ServiceError:
    return ServiceError(
        "not_undoable",
        f"This {what} has no decision waiting to be sent (it was sent, or undone already); "
        "nothing was changed.",
        status=409,
    )


def _undone_words(staged_answer: dict[str, Any] | None) -> str:
    """What was taken back, for the audit log: "approved (by ana)", "denied (by raj)"."""
    answer = staged_answer or {}
    if "approve" in answer:
        what = "approval" if answer["approve"] else "rejection"
    else:
        what = "allow" if answer.get("allow") else "deny"
    return f"The {what} by {answer.get('by_name') or 'someone'} was taken back before it was sent"


def plan_undo(*, plan_id: int, user: AbstractBaseUser, via: Via | None = None) -> Outcome[Plan]:
    """Take back a staged decision before it is sent: the plan waits exactly as before."""
    with transaction.atomic(savepoint=False):
        plan = Plan.objects.select_related("session").filter(pk=plan_id).first()
        if plan is None:
            raise services.plan_not_found(plan_id)
        services.check_may_decide(user, plan)
        undone = Plan.objects.filter(
            pk=plan_id,
            status=PlanStatus.PENDING,
            staged_answer__isnull=False,
            sends_at__gt=timezone.now(),
        ).update(staged_answer=None, sends_at=None)
        if not undone:
            raise _not_undoable("plan")
        audit(
            AuditAction.DECISION_UNDONE, actor=user, via=via, session=plan.session,
            about=f"plan:{plan.pk}",
            summary=f"{plan.title} (revision {plan.revision})\n{_undone_words(plan.staged_answer)}",
        )  # fmt: skip
        plan.staged_answer = plan.sends_at = None
    return Outcome(plan, _plan_changes(plan))


def permission_undo(
    *, request_id: int, user: AbstractBaseUser, via: Via | None = None
) -> Outcome[PermissionRequest]:
    """Take back a staged answer before it is sent: the request waits exactly as before."""
    with transaction.atomic(savepoint=False):
        request = permissions.request_load(request_id)
        permissions.check_may_answer(user, request)
        undone = PermissionRequest.objects.filter(
            pk=request_id,
            status=RequestStatus.PENDING,
            staged_answer__isnull=False,
            sends_at__gt=timezone.now(),
        ).update(staged_answer=None, sends_at=None)
        if not undone:
            raise _not_undoable("request")
        view = describe(request.tool_name, request.tool_input)
        audit(
            AuditAction.DECISION_UNDONE, actor=user, via=via, session=request.session,
            about=f"request:{request.pk}",
            summary=f"{view.tool}: {view.headline}\n{_undone_words(request.staged_answer)}",
        )  # fmt: skip
        request.staged_answer = request.sends_at = None
    return Outcome(request, _request_changes([request]))


def _decider(staged_answer: dict[str, Any]) -> AbstractBaseUser | None:
    return get_user_model().objects.filter(pk=staged_answer.get("by")).first()


def _release_plan(plan: Plan, now: datetime) -> Changes:
    staged_answer = plan.staged_answer or {}
    cleared = Plan.objects.filter(pk=plan.pk, sends_at__lte=now, staged_answer__isnull=False)
    if not cleared.update(staged_answer=None, sends_at=None):
        return Changes()  # another process released it, or it was undone just now
    reviewer = _decider(staged_answer)
    try:
        if reviewer is None:
            raise ServiceError("reviewer_gone", "The reviewer's account was deleted.")
        with transaction.atomic():
            decided = services.plan_decide(
                plan_id=plan.pk,
                reviewer=reviewer,
                approve=bool(staged_answer.get("approve")),
                auto_accept=bool(staged_answer.get("auto_accept")),
                feedback=str(staged_answer.get("feedback", "")),
                via=Via.from_data(staged_answer.get("via")),
            )
    except ServiceError as error:
        # Decided meanwhile another way (the terminal, an API call), or nobody waits any more:
        # the plan shows that, and waits no longer as staged.
        logger.info("staged decision on plan %s not sent: %s", plan.pk, error.message)
        return _plan_changes(plan)
    return decided.changes


def _release_request(request: PermissionRequest, now: datetime) -> Changes:
    staged_answer = dict(request.staged_answer or {})
    cleared = PermissionRequest.objects.filter(
        pk=request.pk, sends_at__lte=now, staged_answer__isnull=False
    )
    if not cleared.update(staged_answer=None, sends_at=None):
        return Changes()
    user = _decider(staged_answer)
    for said_by_the_page in ("by", "by_name", "stops_waiting_at"):
        staged_answer.pop(said_by_the_page, None)
    via = Via.from_data(staged_answer.pop("via", None))
    try:
        if user is None:
            raise ServiceError("user_gone", "The account that answered was deleted.")
        with transaction.atomic():
            decided = permissions.permission_decide(
                request_id=request.pk,
                user=user,
                answer=permissions.Answer(**staged_answer),
                via=via,
            )
    except ServiceError as error:
        logger.info("staged answer to request %s not sent: %s", request.pk, error.message)
        return _request_changes([request])
    return decided.changes


def staged_release_due() -> Outcome[int]:
    """Send every staged decision whose undo window has closed; how many it handled."""
    now = timezone.now()
    changes = Changes()
    released = 0
    with transaction.atomic(savepoint=False):
        plans = Plan.objects.filter(status=PlanStatus.PENDING, sends_at__lte=now)
        for plan in list(plans.order_by("sends_at", "pk")[:RELEASE_BATCH]):
            changes.merge(_release_plan(plan, now))
            released += 1
        requests = PermissionRequest.objects.filter(status=RequestStatus.PENDING, sends_at__lte=now)
        for request in list(requests.order_by("sends_at", "pk")[:RELEASE_BATCH]):
            changes.merge(_release_request(request, now))
            released += 1
    return Outcome(released, changes)


def staged_due() -> list[tuple[str, int]]:
    """The plans and requests whose undo window has closed, oldest first (at most
    `RELEASE_BATCH` of each)."""
    now = timezone.now()
    due: list[tuple[str, int]] = []
    for kind, model in (("plan", Plan), ("request", PermissionRequest)):
        closed = model.objects.filter(status="pending", sends_at__lte=now).order_by(
            "sends_at", "pk"
        )
        due += [(kind, pk) for pk in closed.values_list("pk", flat=True)[:RELEASE_BATCH]]
    return due


def staged_release(*, kind: str, pk: int) -> Outcome[int]:
    """Send one staged decision whose window has closed (1), or nothing (0) when another
    process sent it, or it was undone, just now."""
    now = timezone.now()
    model = Plan if kind == "plan" else PermissionRequest
    row = model.objects.filter(pk=pk, status="pending", sends_at__lte=now).first()
    if row is None:
        return Outcome(0)
    with transaction.atomic(savepoint=False):
        if isinstance(row, Plan):
            changes = _release_plan(row, now)
        else:
            changes = _release_request(row, now)
    return Outcome(1, changes)


class _Releaser:
    """Sends what is due, from one event loop: each decision in a write of its own behind the
    others' (`write_behind`), so three hundred windows that end together cost another agent's
    write at most one of them at a time, instead of holding the writer (SQLite's one writer,
    for a team on one machine) for seconds. Windows that end while it sends are sent in the
    same run."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.task: asyncio.Task[None] | None = None
        self.again = False

    def wake(self) -> None:
        if self.task is not None and not self.task.done():
            self.again = True
            return
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            while True:
                self.again = False
                due = await reader.read(staged_due)
                if due:
                    await asyncio.gather(
                        *(write_behind(staged_release, kind=kind, pk=pk) for kind, pk in due)
                    )
                if not self.again and len(due) < RELEASE_BATCH:
                    return
        except Exception:
            logger.exception("could not send staged decisions")


_releasers = PerLoop(_Releaser)


def release_later(sends_at: set[datetime]) -> None:
    """Send what is due at each of `sends_at`, from this process's loop (the periodic sweep
    sends it too, should this process stop before then)."""
    loop = asyncio.get_running_loop()
    releaser = _releasers(loop)
    for when in sends_at:
        loop.call_later(max(0.0, (when - timezone.now()).total_seconds()), releaser.wake)
