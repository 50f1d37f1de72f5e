"""Held requests whose server process died: nobody can answer them any more, so they expire.

A held hook (a plan's or a tool's PermissionRequest) waits in one server process until its
`held_until`; that process expires the request itself when nobody decided in time. When the
process is killed instead, the request would stay pending for ever: shown as waiting, and a
late answer would be recorded as given although no agent received it. So every process sweeps
(`dashboard.board.idle`): a request still pending ORPHAN_GRACE after its hold ended is expired,
with the reason, by whichever process is alive, or by the next one to start. Answers after
`held_until` are refused (`nobody_waits`).
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from dashboard.core.changes import Outcome
from planmode.models import PermissionRequest, Plan, PlanStatus, RequestStatus
from planmode.permissions import permission_expire
from planmode.services import plan_expire
from planmode.staged import staged_release_due

# A live holder expires its own request at `held_until`; this leaves it time to.
ORPHAN_GRACE = timedelta(seconds=3)
# At most this many of each kind per sweep: a sweep is one write of the writer's.
SWEEP_BATCH = 100
# Said after "Expired:" and in sentences, as "nobody decided in time" is.
ORPHAN_REASON = "the server process that held the agent's request stopped before anyone decided"


def orphans_expire() -> Outcome[int]:
    """Expire the held requests that no live process holds any more; how many it expired."""
    cutoff = timezone.now() - ORPHAN_GRACE
    # First the decisions whose undo window closed: a process that stopped cannot send them.
    changes = staged_release_due().changes
    expired = 0
    with transaction.atomic(savepoint=False):
        plans = Plan.objects.filter(status=PlanStatus.PENDING, held_until__lt=cutoff)
        for plan_id in list(plans.values_list("pk", flat=True)[:SWEEP_BATCH]):
            ended = plan_expire(plan_id=plan_id)
            if ended.changes:
                Plan.objects.filter(pk=plan_id).update(end_reason=ORPHAN_REASON)
                ended.plan.end_reason = ORPHAN_REASON
                changes.merge(ended.changes)
                expired += 1
        requests = PermissionRequest.objects.filter(
            status=RequestStatus.PENDING, held_until__lt=cutoff
        )
        for request_id in list(requests.values_list("pk", flat=True)[:SWEEP_BATCH]):
            ended_request = permission_expire(request_id=request_id)
            if ended_request.changes:
                PermissionRequest.objects.filter(pk=request_id).update(end_reason=ORPHAN_REASON)
                changes.merge(ended_request.changes)
                expired += 1
    return Outcome(expired, changes)
