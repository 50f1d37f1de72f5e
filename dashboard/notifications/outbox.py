"""The outbox: a write's notifications are stored in the same transaction as the write.

The writer calls `enqueue(changes)` inside each job's savepoint, right after the domain
service returned, so a notification exists exactly when its cause was committed, and the
delivery worker (`worker`) sends it later, whatever the receiver does. Each row's key names
its cause and destination, so the same cause never gives a destination two notifications.

Ingest must stay cheap: changes with nothing notifiable in them (todo lists, tool steps)
cost no query at all; while no webhook target or push device exists, a notifiable one costs
one small one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from dashboard.activity.models import Concern
from dashboard.core.changes import Changes
from dashboard.core.sql import any_row
from dashboard.core.visibility import audiences_of
from dashboard.models import Session
from dashboard.notifications.messages import (
    Notice,
    concern_notice,
    continuation_notice,
    permission_notice,
    plan_notice,
    session_notice,
)
from dashboard.notifications.models import Delivery, Event, PushDevice, WebhookTarget
from dashboard.notifications.routing import ASKED_FIRST, named_reviewers, told_at
from planmode.models import PermissionRequest, Plan
from todos.models import Continuation

logger = logging.getLogger(__name__)

# What a phone is woken for: something waits on its user.
PUSH_EVENTS = frozenset({Event.WAITING, Event.STOPPED_UNFINISHED})


# One plain statement: compiling two ORM queries would cost more than running this.
_ANY_DESTINATION = (
    "SELECT 1 FROM notifications_webhooktarget "
    "UNION ALL SELECT 1 FROM notifications_pushdevice LIMIT 1"
)


def destinations_exist() -> bool:
    """Asked of the database each time, not remembered: another server process may add the
    first target or device at any moment, and its first event must reach it. Only the rare
    writes that may notify (a plan, a request, a countdown, a stop, an end) ask."""
    return any_row(_ANY_DESTINATION)


def notifiable(changes: Changes) -> bool:
    """Whether the changes may hold a notification: attribute checks only, no query."""
    return bool(
        changes.plans
        or changes.permission_requests
        or changes.begun_continuations
        or changes.stopped_unfinished
        or changes.ended_sessions
        or changes.opened_concerns
    )


def enqueue(changes: Changes) -> int:
    """Store the notifications of `changes` (inside the caller's transaction); returns how
    many deliveries were added."""
    if not notifiable(changes) or not destinations_exist():
        return 0
    assert transaction.get_connection().in_atomic_block
    try:
        # Its own savepoint: a notification that cannot be stored never takes its cause down.
        with transaction.atomic():
            _cancel_fallbacks(changes)
            notices = list(_notices(changes))
            rows = _deliveries(notices) if notices else []
            if rows:
                Delivery.objects.bulk_create(rows, ignore_conflicts=True)
    except Exception:
        logger.exception("the notifications of a write could not be stored")
        return 0
    if rows:
        from dashboard.notifications import worker

        transaction.on_commit(worker.wake)
    return len(rows)


def enqueue_batch(written: list[Changes]) -> int:
    """The writer's per-batch step, after the batch's steps were stored: an agent that began
    to need a look (a loop, found then) notifies like a waiting plan, once per episode."""
    opened = set().union(*(changes.opened_concerns for changes in written)) if written else set()
    if not opened:
        return 0
    return enqueue(Changes(opened_concerns=opened))


def _notices(changes: Changes) -> Iterable[Notice]:
    related = ("session", "session__owner", "agent", "agent__session", "decided_by")
    if changes.plans:
        for plan in Plan.objects.filter(pk__in=changes.plans).select_related(*related):
            if plan.is_pending or plan.pk in changes.decided_plans:
                notice = plan_notice(plan)
                if notice:
                    yield notice
    if changes.permission_requests:
        requests = PermissionRequest.objects.filter(pk__in=changes.permission_requests)
        for request in requests.select_related(*related):
            if request.is_pending or request.pk in changes.decided_permissions:
                notice = permission_notice(request)
                if notice:
                    yield notice
    continuations = changes.begun_continuations | changes.stopped_unfinished
    if continuations:
        for continuation in Continuation.objects.filter(pk__in=continuations).select_related(
            "agent", "agent__session"
        ):
            if continuation.status in {Continuation.Status.COUNTING, Continuation.Status.SKIPPED}:
                yield continuation_notice(continuation)
    if changes.opened_concerns:
        concerns = Concern.objects.filter(pk__in=changes.opened_concerns, ended_at__isnull=True)
        for concern in concerns.select_related("session", "session__owner", "agent"):
            yield concern_notice(concern)
    if changes.ended_sessions:
        for session in Session.objects.filter(
            pk__in=changes.ended_sessions, ended_at__isnull=False
        ):
            yield session_notice(session)


def _waiting_kind(notice: Notice) -> str:
    """What waits, as the inbox names it ("plan", "permission"...); "" for what does not wait."""
    return notice.about.partition(":")[0] if notice.event == Event.WAITING else ""


def _cancel_fallbacks(changes: Changes) -> None:
    """What was answered is not told to those who were to hear of it only if nobody did."""
    about = [f"plan:{pk}" for pk in changes.decided_plans] + [
        f"permission:{pk}" for pk in changes.decided_permissions
    ]
    if not about:
        return
    prefixes = Q()
    for cause in about:
        prefixes |= Q(key__startswith=f"{Event.WAITING}:{cause}:")
    Delivery.objects.filter(
        prefixes, status=Delivery.Status.PENDING, attempts=0, next_attempt_at__gt=timezone.now()
    ).delete()


def _deliveries(notices: list[Notice]) -> list[Delivery]:
    targets = list(WebhookTarget.objects.select_related("owner").filter(owner__is_active=True))
    push = any(notice.event in PUSH_EVENTS for notice in notices)
    devices = list(PushDevice.objects.filter(user__is_active=True)) if push else []
    if not targets and not devices:
        return []
    # Who is told: those a notice's session waits on (its reviewers, its owner), by the one
    # rule of `dashboard.core.visibility`.
    audiences = audiences_of(
        [target.owner_id for target in targets] + [device.user_id for device in devices]
    )
    asked_first = [notice for notice in notices if _waiting_kind(notice) in ASKED_FIRST]
    named = named_reviewers(notice.session.project_record_id for notice in asked_first)
    now = timezone.now()

    def when(notice: Notice, user_pk: int) -> dict:
        """A project that names its reviewers asks them (and the session's owner) first: the
        others are told later (`routing`), unless it was answered meanwhile
        (`_cancel_fallbacks`)."""
        kind = _waiting_kind(notice)
        if not kind:
            return {}
        at = told_at(kind=kind, session=notice.session, user_pk=user_pk, since=now, named=named)
        return {"next_attempt_at": at} if at > now else {}

    rows = []
    for notice in notices:
        for target in targets:
            if notice.event not in target.events:
                continue
            if target.projects and notice.session.project not in target.projects:
                continue
            if not audiences[target.owner_id].is_waited_on_in(notice.session):
                continue
            # A personal target is not told what its owner decided; a team target (added by
            # an admin) tells the team about every decision.
            if notice.decided_by_id == target.owner_id and not target.owner.is_staff:
                continue
            rows.append(
                Delivery(
                    key=f"{notice.key}:t{target.pk}",
                    event=notice.event,
                    target=target,
                    payload=notice.payload,
                    **when(notice, target.owner_id),
                )
            )
        if notice.event not in PUSH_EVENTS:
            continue
        for device in devices:
            if audiences[device.user_id].is_waited_on_in(notice.session):
                rows.append(
                    Delivery(
                        key=f"{notice.key}:d{device.pk}",
                        event=notice.event,
                        device=device,
                        payload=notice.payload,
                        **when(notice, device.user_id),
                    )
                )
    return rows
