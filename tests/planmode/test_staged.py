"""The undo window at the level of pages and services: what is staged, refused and counted.
(A held hook hearing nothing until the window closes is in tests/hooks/test_undo_window.py.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from dashboard.core.errors import ServiceError
from dashboard.core.visibility import EVERYONE
from dashboard.models import AuditAction, AuditEntry
from planmode import selectors, staged
from planmode.inbox import inbox_count, inbox_items
from planmode.models import PermissionRequest, Plan
from planmode.permissions import Answer, permission_decide, permission_decide_many
from planmode.services import plan_decide
from tests.conftest import parse_html
from tests.planmode.test_inbox_views import make_request, make_session

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def undo_window(settings) -> None:
    settings.AGENTBOARD_UNDO_SECONDS = 30


@pytest.fixture
def lead(reviewer) -> Client:
    client = Client()
    client.force_login(reviewer)
    return client


def test_a_decision_on_the_review_page_is_staged_and_the_plan_stays_pending(submit, lead):
    plan = submit()

    response = lead.post(f"/plans/{plan.pk}/decide/", {"action": "approve_auto", "text": "Go."})

    assert response.status_code == 302
    plan.refresh_from_db()
    assert plan.status == "pending" and plan.decided_by is None
    assert plan.staged_answer == {
        "approve": True,
        "auto_accept": True,
        "feedback": "Go.",
        "by": plan.staged_answer["by"],
        "by_name": "lead",
        # Where it came from, for the audit log's entry when it is sent.
        "via": {"surface": "review page", "address": "127.0.0.1"},
    }
    assert timedelta(seconds=29) < plan.sends_at - timezone.now() <= timedelta(seconds=30)
    page = lead.get(f"/plans/{plan.pk}/").content.decode()
    staged_note = " ".join(parse_html(page).find(id="staged-decision").text().split())
    assert staged_note.startswith("◔ Approved with auto-accept edits by lead — not sent yet;")
    assert 'value="reject"' in page  # kept on the page, hidden until an undo


def test_staged_plans_do_not_count_as_waiting_anywhere(submit, lead):
    plan = submit()
    lead.post(f"/plans/{plan.pk}/decide/", {"action": "approve"})

    assert inbox_count(EVERYONE).plans == 0
    assert selectors.pending_plans() == [] and selectors.pending_plan_count() == 0
    assert selectors.pending_by_session([plan.session_id]) == {}
    assert selectors.sessions_with_pending_plans() == []
    assert [p.pk for p in selectors.staged_plans()] == [plan.pk]
    # The inbox still shows it, as decided and not sent yet.
    (item,) = inbox_items(EVERYONE)
    assert item.staged["by_name"] == "lead"
    inbox = parse_html(lead.get("/inbox/").content)
    assert " ".join(inbox.find("h2", cls="inbox-count").text().split()) == (
        "0 waiting · 1 decided, not sent yet"
    )


def test_an_undo_puts_the_plan_back_exactly_as_it_was(submit, lead):
    plan = submit()
    lead.post(f"/plans/{plan.pk}/decide/", {"action": "reject", "text": "Smaller."})

    assert lead.post(f"/plans/{plan.pk}/undo/").status_code == 302

    plan.refresh_from_db()
    assert (plan.status, plan.staged_answer, plan.sends_at) == ("pending", None, None)
    assert inbox_count(EVERYONE).plans == 1


def test_an_undo_is_in_the_audit_log_with_what_was_taken_back(submit, user, lead):
    plan = submit()
    lead.post(f"/plans/{plan.pk}/decide/", {"action": "reject", "text": "Smaller."})
    lead.post(f"/plans/{plan.pk}/undo/")
    _, agent = make_session(user, "sess-undo")
    request = make_request(agent)
    lead.post(f"/inbox/requests/{request.pk}/decide/", {"action": "allow"})
    lead.post(f"/inbox/requests/{request.pk}/undo/")

    entries = AuditEntry.objects.filter(action=AuditAction.DECISION_UNDONE).order_by("number")
    assert [(entry.actor_name, entry.about, entry.surface) for entry in entries] == [
        ("lead", f"plan:{plan.pk}", "review page"),
        ("lead", f"request:{request.pk}", "inbox"),
    ]
    assert entries[0].summary.endswith("The rejection by lead was taken back before it was sent")
    assert entries[1].summary == (
        "Bash: make release\nThe allow by lead was taken back before it was sent"
    )


def test_an_undo_with_nothing_staged_is_refused_with_one_sentence(submit, lead):
    plan = submit()

    response = lead.post(f"/plans/{plan.pk}/undo/", headers={"HX-Request": "true"})

    assert response.status_code == 409
    assert response.content.decode() == (
        "This plan has no decision waiting to be sent (it was sent, or undone already); "
        "nothing was changed."
    )


def test_a_watcher_cannot_undo(submit, lead, user):
    plan = submit()
    lead.post(f"/plans/{plan.pk}/decide/", {"action": "approve"})
    watcher = Client()
    watcher.force_login(user)

    assert watcher.post(f"/plans/{plan.pk}/undo/").status_code == 403

    plan.refresh_from_db()
    assert plan.staged_answer is not None


def test_a_rejection_without_words_is_refused_before_anything_is_staged(submit, lead):
    plan = submit()

    response = lead.post(f"/plans/{plan.pk}/decide/", {"action": "reject", "text": "  "})

    assert response.status_code == 422
    assert "Write what should change in the feedback box" in response.content.decode()
    plan.refresh_from_db()
    assert plan.staged_answer is None


def test_the_release_sends_only_what_is_due(submit, reviewer):
    due, later = submit(session_id="s-due"), submit(session_id="s-later")
    staged.plan_stage(plan_id=due.pk, reviewer=reviewer, approve=True, seconds=30)
    staged.plan_stage(plan_id=later.pk, reviewer=reviewer, approve=True, seconds=30)
    Plan.objects.filter(pk=due.pk).update(sends_at=timezone.now() - timedelta(seconds=1))

    released = staged.staged_release_due()

    assert released.value == 1 and set(released.changes.decided_plans) == {due.pk}
    due.refresh_from_db()
    later.refresh_from_db()
    assert (due.status, due.staged_answer, due.decided_by) == ("approved", None, reviewer)
    assert (later.status, later.staged_answer is not None) == ("pending", True)


def test_a_staged_decision_on_a_plan_decided_meanwhile_is_dropped(submit, reviewer):
    plan = submit()
    staged.plan_stage(plan_id=plan.pk, reviewer=reviewer, approve=True, seconds=30)
    Plan.objects.filter(pk=plan.pk).update(
        status="answered_in_terminal", sends_at=timezone.now() - timedelta(seconds=1)
    )

    assert staged.staged_release_due().value == 0
    plan.refresh_from_db()
    assert plan.status == "answered_in_terminal"


def test_a_deny_without_a_message_is_refused_and_nothing_is_staged(user, reviewer):
    _, agent = make_session(user)
    request = make_request(agent)

    with pytest.raises(ServiceError) as refused:
        staged.permission_stage(
            request_ids=[request.pk], user=reviewer, answer=Answer(allow=False), seconds=30
        )

    assert refused.value.code == "message_required"
    request.refresh_from_db()
    assert request.staged_answer is None


def test_an_inbox_answer_is_staged_then_sent_as_given(user, reviewer):
    _, agent = make_session(user)
    request = make_request(agent)
    staged.permission_stage(
        request_ids=[request.pk],
        user=reviewer,
        answer=Answer(allow=False, message="Not on main.", interrupt=True),
        seconds=30,
    )
    assert inbox_count(EVERYONE).permissions == 0
    PermissionRequest.objects.filter(pk=request.pk).update(
        sends_at=timezone.now() - timedelta(seconds=1)
    )

    staged.staged_release_due()

    request.refresh_from_db()
    assert (request.status, request.message, request.interrupt) == ("denied", "Not on main.", True)
    assert request.decided_by == reviewer and request.staged_answer is None


def test_a_second_answer_in_the_window_is_refused(user, reviewer):
    _, agent = make_session(user)
    request = make_request(agent)
    staged.permission_stage(
        request_ids=[request.pk], user=reviewer, answer=Answer(allow=True), seconds=30
    )

    with pytest.raises(ServiceError) as refused:
        staged.permission_stage(
            request_ids=[request.pk], user=reviewer, answer=Answer(allow=True), seconds=30
        )

    assert refused.value.status == 409 and "undo that first" in refused.value.message


def test_the_board_shows_a_staged_decision_with_its_undo_instead_of_the_wait(user, lead):
    session, agent = make_session(user)
    request = make_request(agent)

    lead.post(f"/inbox/requests/{request.pk}/decide/", {"action": "allow", "from": "board"})

    banner = parse_html(lead.get(f"/sessions/{session.session_id}/").content).find(
        id="session-attention"
    )
    assert "hidden" not in banner.attrs
    text = " ".join(banner.text().split())
    assert "Allowed by lead — not sent yet" in text and "make release" in text
    assert banner.find("button").text().strip() == "Undo"
    assert not banner.find_all("button", cls="button-approve")


def test_words_waiting_in_the_window_are_redacted_like_those_sent(submit, user, reviewer, lead):
    """A secret in a deny message or in a rejection's feedback is never stored, not even for
    the seconds of the undo window."""
    secret = "AKIAIOSFODNN7EXAMPLE"
    _, agent = make_session(user, "sess-deny")
    request = make_request(agent)
    staged.permission_stage(
        request_ids=[request.pk],
        user=reviewer,
        answer=Answer(allow=False, message=f"Use the role, not {secret}."),
        seconds=30,
    )
    request.refresh_from_db()
    assert secret not in str(request.staged_answer)
    assert "[redacted:aws-key]" in request.staged_answer["message"]

    plan = submit()
    lead.post(f"/plans/{plan.pk}/decide/", {"action": "reject", "text": f"Drop {secret}."})
    plan.refresh_from_db()
    assert plan.staged_answer is not None and secret not in str(plan.staged_answer)


def test_a_decision_sent_at_once_is_refused_while_another_waits_in_its_window(
    user, reviewer, second_reviewer
):
    """An API token's or a notification's answer is not staged; it still comes second to a
    person's answer waiting in its undo window, and says whose."""
    _, agent = make_session(user)
    request = make_request(agent)
    staged.permission_stage(
        request_ids=[request.pk], user=reviewer, answer=Answer(allow=True), seconds=30
    )

    with pytest.raises(ServiceError) as refused:
        permission_decide(
            request_id=request.pk,
            user=second_reviewer,
            answer=Answer(allow=False, message="No."),
        )

    assert refused.value.status == 409
    assert refused.value.message.startswith("lead already decided this request and it is about")
    request.refresh_from_db()
    assert request.status == "pending" and request.staged_answer["allow"] is True
    PermissionRequest.objects.filter(pk=request.pk).update(
        sends_at=timezone.now() - timedelta(seconds=1)
    )
    staged.staged_release_due()
    request.refresh_from_db()
    assert (request.status, request.decided_by) == ("allowed", reviewer)


def test_a_bulk_answer_sent_at_once_skips_a_request_staged_by_someone_else(
    user, reviewer, second_reviewer
):
    _, agent = make_session(user)
    first, second = make_request(agent), make_request(agent)
    staged.permission_stage(
        request_ids=[first.pk], user=reviewer, answer=Answer(allow=True), seconds=30
    )

    answered = permission_decide_many(
        request_ids=[first.pk, second.pk],
        user=second_reviewer,
        answer=Answer(allow=False, message="Not now."),
    )

    assert [request.pk for request in answered.decided] == [second.pk]
    assert answered.missed == [
        "lead already decided this request and it is about to be sent; undo that first to "
        "decide differently."
    ]
    first.refresh_from_db()
    assert first.status == "pending" and first.staged_answer["by_name"] == "lead"


def test_a_plan_decided_at_once_is_refused_while_another_decision_waits(
    submit, reviewer, second_reviewer
):
    plan = submit()
    staged.plan_stage(plan_id=plan.pk, reviewer=reviewer, approve=True, seconds=30)

    with pytest.raises(ServiceError) as refused:
        plan_decide(plan_id=plan.pk, reviewer=second_reviewer, approve=False, feedback="No.")

    assert refused.value.status == 409 and "lead already decided this plan" in refused.value.message
    plan.refresh_from_db()
    assert plan.status == "pending" and plan.staged_answer["approve"] is True


def test_the_window_ends_before_the_hook_stops_waiting_and_the_page_says_so(user, lead):
    """A hook that gives up in 10 s must still hear a decision whose window is 30 s."""
    _, agent = make_session(user)
    stops = timezone.now() + timedelta(seconds=10)
    request = make_request(agent, held_until=stops)

    lead.post(f"/inbox/requests/{request.pk}/decide/", {"action": "allow"})

    request.refresh_from_db()
    assert request.status == "pending"
    assert request.sends_at == stops - staged.SEND_BEFORE_DEADLINE
    assert request.staged_answer["stops_waiting_at"] == stops.isoformat()
    page = parse_html(lead.get("/inbox/").content)
    note = " ".join(page.find("p", cls="staged-what").text().split())
    assert "not sent yet; sends sooner than usual, in 0:0" in note
    assert ": the agent stops waiting in 0:" in note


def test_a_hook_about_to_stop_waiting_gets_the_decision_at_once(user, reviewer):
    _, agent = make_session(user)
    request = make_request(agent, held_until=timezone.now() + timedelta(seconds=1))

    held = staged.permission_stage(
        request_ids=[request.pk], user=reviewer, answer=Answer(allow=True), seconds=30
    )

    (sends_at,) = held.sends_at
    assert sends_at <= timezone.now()
    assert staged.staged_release_due().value == 1
    request.refresh_from_db()
    assert request.status == "allowed"


def test_a_decision_for_a_hook_that_stopped_waiting_is_refused_not_stored_as_expired(user, lead):
    _, agent = make_session(user)
    request = make_request(agent, held_until=timezone.now() - timedelta(seconds=1))

    response = lead.post(f"/inbox/requests/{request.pk}/decide/", {"action": "allow"})

    assert response.status_code == 409
    assert "The agent stopped waiting for an answer to this request" in response.content.decode()
    request.refresh_from_db()
    assert (request.status, request.staged_answer) == ("pending", None)
