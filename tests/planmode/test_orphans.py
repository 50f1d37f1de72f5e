"""Held requests whose holder is gone: a late answer is refused and recorded nowhere, and the
sweep expires them with the reason, which every page shows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from dashboard.core.errors import ServiceError
from dashboard.models import Agent, Session
from planmode.models import Decision, PermissionDecision, PermissionRequest, Plan
from planmode.orphans import ORPHAN_REASON, orphans_expire
from planmode.permissions import (
    Answer,
    permission_decide,
    permission_decide_many,
    permission_request_open,
)
from tests.conftest import parse_html
from tests.domain import plan_decide

pytestmark = pytest.mark.django_db

HOLD = 540.0


def held_plan(submit, session_id: str = "sess-held") -> Plan:
    return submit(session_id=session_id, source=Plan.Source.HOOK, held_for=HOLD)


def held_request(user, session_id: str = "sess-held") -> PermissionRequest:
    session = Session.objects.create(session_id=session_id, owner=user)
    agent = Agent.objects.create(session=session, agent_id=session_id)
    with transaction.atomic():
        return permission_request_open(
            agent=agent,
            tool_name="Bash",
            tool_input={"command": "make deploy"},
            suggestions=[],
            held_for=HOLD,
        ).request


def hold_ended(row: Plan | PermissionRequest, seconds_ago: float) -> None:
    """The holder's wait ended this long ago (as it does when its process was killed)."""
    type(row).objects.filter(pk=row.pk).update(
        held_until=timezone.now() - timedelta(seconds=seconds_ago)
    )


def test_a_held_plan_and_request_are_answerable_until_their_hold_ends(submit, user):
    plan, request = held_plan(submit), held_request(user, "sess-request")

    for row in (plan, request):
        row.refresh_from_db()
        assert (
            timedelta(seconds=HOLD - 5) < row.held_until - timezone.now() <= timedelta(seconds=HOLD)
        )
    assert submit(session_id="api-agent").held_until is None


def test_a_late_approve_is_refused_and_recorded_nowhere(submit, reviewer):
    plan = held_plan(submit)
    hold_ended(plan, 1)

    with pytest.raises(ServiceError) as refused:
        plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=True)

    assert (refused.value.status, refused.value.code) == (409, "nobody_waiting")
    assert refused.value.message == (
        "The agent stopped waiting for an answer to this plan, so nothing was sent or "
        "recorded; it asks in its terminal instead."
    )
    plan.refresh_from_db()
    assert (plan.status, plan.decided_by) == ("pending", None)
    assert not Decision.objects.exists()


def test_a_late_allow_is_refused_alone_and_in_a_bulk_answer(user, reviewer):
    late, on_time = held_request(user, "sess-late"), held_request(user, "sess-on-time")
    hold_ended(late, 1)

    with pytest.raises(ServiceError) as refused:
        permission_decide(request_id=late.pk, user=reviewer, answer=Answer(allow=True))
    both = permission_decide_many(
        request_ids=[late.pk, on_time.pk], user=reviewer, answer=Answer(allow=True)
    )

    assert refused.value.code == "nobody_waiting"
    assert [request.pk for request in both.decided] == [on_time.pk]
    assert both.missed == [refused.value.message]
    late.refresh_from_db()
    assert late.status == "pending"
    assert not PermissionDecision.objects.filter(request=late).exists()


def test_the_sweep_expires_what_no_process_holds_any_more_with_the_reason(submit, user):
    orphaned_plan, orphaned_request = held_plan(submit, "sess-a"), held_request(user, "sess-b")
    hold_ended(orphaned_plan, 10)
    hold_ended(orphaned_request, 10)
    # A holder that is still alive expires its own at the end of its wait: left to it.
    just_ended = held_plan(submit, "sess-c")
    hold_ended(just_ended, 0.5)
    polled = submit(session_id="sess-api")

    expired = orphans_expire()

    assert expired.value == 2
    assert expired.changes.decided_plans.keys() == {orphaned_plan.pk}
    assert expired.changes.permission_requests == {orphaned_request.pk}
    statuses = {
        row.pk: (row.status, row.end_reason)
        for row in Plan.objects.filter(pk__in=[orphaned_plan.pk, just_ended.pk, polled.pk])
    }
    assert statuses == {
        orphaned_plan.pk: ("expired", ORPHAN_REASON),
        just_ended.pk: ("pending", ""),
        polled.pk: ("pending", ""),
    }
    orphaned_request.refresh_from_db()
    assert (orphaned_request.status, orphaned_request.end_reason) == ("expired", ORPHAN_REASON)
    assert orphans_expire().value == 0


def test_the_pages_say_why_an_orphaned_request_expired(submit, user, client, reviewer):
    plan, request = held_plan(submit), held_request(user, "sess-b")
    hold_ended(plan, 10)
    hold_ended(request, 10)
    orphans_expire()
    client.force_login(reviewer)

    review = parse_html(client.get(f"/plans/{plan.pk}/").content)
    inbox = parse_html(client.get("/inbox/").content)
    late = client.post(f"/plans/{plan.pk}/decide/", {"action": "approve", "text": ""})

    assert ORPHAN_REASON in review.find(cls="decision-panel").text()
    assert f"{ORPHAN_REASON}; the terminal asked" in inbox.text()
    assert late.status_code == 409
    assert f"This plan expired: {ORPHAN_REASON}" in parse_html(late.content).text()
