"""The right reviewer is asked: a project's own reviewers first (their inbox, their
notifications; everyone else later), and two approvals where the project asks for them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client
from django.utils import timezone

from dashboard.core.changes import Changes
from dashboard.core.visibility import audience_of
from dashboard.models import Membership, Session, TeamRole
from dashboard.notifications import outbox
from dashboard.notifications.models import Delivery, PushDevice, WebhookTarget
from planmode.inbox import inbox_count, inbox_items
from planmode.models import PermissionRequest, Plan, PlanApproval
from planmode.permissions import input_key
from planmode.services import plan_submit
from tests.conftest import parse_html
from tests.notifications.receivers import PushBrowser
from tests.teams.conftest import World

pytestmark = pytest.mark.django_db


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def mia(world: World) -> User:
    """A second reviewer of the Shop team."""
    mia = User.objects.create_user("mia", password="a-long-password-6")
    Membership.objects.create(team=world.shop, user=mia, role=TeamRole.REVIEWER)
    return mia


def decide(user: User, plan: Plan, action: str, text: str = ""):
    return signed_in(user).post(f"/plans/{plan.pk}/decide/", {"action": action, "text": text})


def two_approvals(world: World) -> None:
    world.project.approvals_required = 2
    world.project.save()


def test_with_two_approvals_the_plan_waits_for_a_second_different_reviewer(world, mia):
    two_approvals(world)
    assert decide(world.sam, world.plan, "approve", "Fine by me.").status_code == 302
    plan = Plan.objects.get(pk=world.plan.pk)
    assert plan.status == "pending" and plan.decided_by is None
    page = parse_html(signed_in(mia).get(f"/plans/{plan.pk}/").content)
    assert page.find(id="plan-approvals").text().startswith("1 of 2 approvals : approved by sam")

    again = decide(world.sam, plan, "approve")
    assert again.status_code == 409
    assert "You have approved this plan already" in again.content.decode()
    assert PlanApproval.objects.filter(plan=plan).count() == 1

    assert decide(mia, plan, "approve", "Ship it.").status_code == 302
    plan.refresh_from_db()
    assert (plan.status, plan.decided_by) == ("approved", mia)
    # The agent hears both reviewers' notes, each named.
    assert "sam: Fine by me." in plan.notes and "mia: Ship it." in plan.notes


def test_a_rejection_by_either_reviewer_ends_it(world, mia):
    two_approvals(world)
    decide(world.sam, world.plan, "approve")
    assert decide(mia, world.plan, "reject", "Page by id, not by date.").status_code == 302
    plan = Plan.objects.get(pk=world.plan.pk)
    assert (plan.status, plan.decided_by) == ("rejected", mia)


def test_with_one_approval_the_first_decides_as_before(world):
    assert decide(world.sam, world.plan, "approve").status_code == 302
    assert Plan.objects.get(pk=world.plan.pk).status == "approved"
    assert not PlanApproval.objects.exists()


def test_a_projects_own_reviewer_finds_its_waits_at_the_top_of_the_inbox(world, mia):
    # An older wait of a session no team owns, which mia decides as well (review permission).
    older = plan_submit(
        owner=world.ana, session_id="open-1", agent_id="open-1", plan="# Older",
        plan_file_path=None, source=Plan.Source.API,
    ).plan  # fmt: skip
    Plan.objects.filter(pk=older.pk).update(submitted_at=timezone.now() - timedelta(hours=1))
    from django.contrib.auth.models import Permission

    mia.user_permissions.add(Permission.objects.get(codename="review_plan"))
    mia = User.objects.get(pk=mia.pk)
    assert [item.pk for item in inbox_items(audience_of(mia)) if item.kind == "plan"] == [
        older.pk,
        world.plan.pk,
    ]
    world.project.reviewers.add(mia)
    mia = User.objects.get(pk=mia.pk)
    assert [item.pk for item in inbox_items(audience_of(mia)) if item.kind == "plan"] == [
        world.plan.pk,
        older.pk,
    ]


def test_a_projects_own_reviewer_finds_its_permission_requests_at_the_top_of_the_inbox(world, mia):
    # An older request in a session no team owns, which mia answers as well (review
    # permission).
    open_plan = plan_submit(
        owner=world.ana, session_id="open-1", agent_id="open-1", plan="# Older",
        plan_file_path=None, source=Plan.Source.API,
    ).plan  # fmt: skip
    older = PermissionRequest.objects.create(
        session=open_plan.session, agent=open_plan.agent, tool_name="Bash",
        tool_input={"command": "make docs"}, input_key=input_key("Bash", {"command": "make docs"}),
        requested_at=timezone.now() - timedelta(hours=1),
    )  # fmt: skip
    from django.contrib.auth.models import Permission

    mia.user_permissions.add(Permission.objects.get(codename="review_plan"))

    def requests_in_her_inbox() -> list[int]:
        her = audience_of(User.objects.get(pk=mia.pk))
        return [item.pk for item in inbox_items(her) if item.kind == "permission"]

    assert requests_in_her_inbox() == [older.pk, world.request.pk]
    world.project.reviewers.add(mia)
    assert requests_in_her_inbox() == [world.request.pk, older.pk]
    page = parse_html(signed_in(mia).get("/inbox/").content)
    rows = [
        row.attrs["id"]
        for row in page.iter()
        if (row.attrs.get("id") or "").startswith("inbox-permission-")
    ]
    assert rows == [f"inbox-permission-{world.request.pk}", f"inbox-permission-{older.pk}"]


def test_a_named_member_decides_the_projects_plans(world):
    assert decide(world.dana, world.plan, "approve").status_code == 403
    world.project.reviewers.add(world.dana)
    assert decide(world.dana, world.plan, "approve").status_code == 302
    assert Plan.objects.get(pk=world.plan.pk).status == "approved"


WAITS = ["plan", "permission"]


def the_wait(world: World, kind: str) -> Plan | PermissionRequest:
    return world.plan if kind == "plan" else world.request


def answer(user: User, world: World, kind: str) -> None:
    """The reviewer answers it in the browser: approves the plan, allows the request."""
    if kind == "plan":
        assert decide(user, world.plan, "approve").status_code == 302
    else:
        url = f"/inbox/requests/{world.request.pk}/decide/"
        assert signed_in(user).post(url, {"action": "allow"}).status_code == 302
    wait = the_wait(world, kind)
    wait.refresh_from_db()
    assert wait.status != "pending"


def waited_since(world: World, kind: str, minutes: float) -> None:
    """It began to wait this long ago."""
    since = timezone.now() - timedelta(minutes=minutes)
    if kind == "plan":
        Plan.objects.filter(pk=world.plan.pk).update(submitted_at=since)
    else:
        PermissionRequest.objects.filter(pk=world.request.pk).update(requested_at=since)


def add_phone(user: User) -> PushDevice:
    subscription = PushBrowser().subscription(f"https://push.example/{user.username}")
    return PushDevice.objects.create(
        user=user, name="phone", endpoint=subscription["endpoint"],
        p256dh=subscription["keys"]["p256dh"], auth=subscription["keys"]["auth"],
        base_url="http://board.test",
    )  # fmt: skip


@pytest.mark.parametrize("kind", WAITS)
def test_its_own_reviewers_are_told_at_once_and_the_others_later_unless_answered(world, mia, kind):
    world.project.reviewers.add(world.sam)
    for person in (world.sam, mia):
        WebhookTarget.objects.create(
            owner=person, name=person.username, url="https://chat.example/hook",
            events=["waiting"], kind="json",
        )  # fmt: skip
        add_phone(person)
    Delivery.objects.all().delete()
    changes = (
        Changes(plans={world.plan.pk})
        if kind == "plan"
        else Changes(permission_requests={world.request.pk})
    )
    with transaction.atomic():
        outbox.enqueue(changes)
    soon = timezone.now() + timedelta(minutes=1)
    due = {
        (d.target.owner.username if d.target else f"{d.device.user.username}'s phone"): (
            d.next_attempt_at <= soon
        )
        for d in Delivery.objects.select_related("target__owner", "device__user")
    }
    assert due == {"sam": True, "sam's phone": True, "mia": False, "mia's phone": False}

    answer(world.sam, world, kind)
    # Answered: mia is not told of it later, on her webhook or her phone.
    waiting = Delivery.objects.filter(event="waiting")
    told = {d.target.owner.username if d.target else "sam's phone" for d in waiting}
    assert told == {"sam", "sam's phone"}


def desktop(user: User) -> dict:
    """What the user's open page is to show as desktop notifications now."""
    response = signed_in(user).get("/settings/notifications/waiting.json")
    assert response.status_code == 200
    return response.json()


def keys(answer: dict) -> set[str]:
    return {item["key"] for item in answer["items"]}


@pytest.mark.parametrize("kind", WAITS)
def test_the_desktop_tells_its_own_reviewers_at_once_and_the_others_after_the_fallback(
    world, mia, kind, settings
):
    settings.AGENTBOARD_REVIEW_FALLBACK_MINUTES = 10
    world.project.reviewers.add(world.sam)
    key = f"{kind}-{the_wait(world, kind).pk}"
    assert key in keys(desktop(world.sam))
    assert key in keys(desktop(world.dana))  # the session's owner
    held = desktop(mia)
    assert key not in keys(held)
    # What the project does not ask its reviewers first about reaches her at once.
    assert f"countdown-{world.countdown.pk}" in keys(held)
    # Her page asks again when her turn comes.
    assert 9 * 60 < held["later_in"] <= 10 * 60
    # Only the notification waits: her inbox lists it and counts it from the start.
    inbox = signed_in(mia).get("/inbox/").content.decode()
    shown = world.plan.title if kind == "plan" else "make release-orders"
    assert shown in inbox
    assert inbox_count(audience_of(User.objects.get(pk=mia.pk))).total == 4

    waited_since(world, kind, minutes=11)
    assert key in keys(desktop(mia))


@pytest.mark.parametrize("kind", WAITS)
def test_once_answered_the_others_desktops_never_tell_of_it(world, mia, kind):
    world.project.reviewers.add(world.sam)
    answer(world.sam, world, kind)
    waited_since(world, kind, minutes=11)
    assert f"{kind}-{the_wait(world, kind).pk}" not in keys(desktop(mia))


def test_without_named_reviewers_every_reviewer_is_told_at_once(world, mia):
    told = desktop(mia)
    assert {f"plan-{world.plan.pk}", f"permission-{world.request.pk}"} <= keys(told)
    assert told["later_in"] is None


def test_naming_a_reviewer_is_for_the_projects_reviewers_and_only_of_its_team(world, mia):
    url = f"/projects/{world.project.pk}/reviewers/"
    assert signed_in(world.dana).post(url, {"username": "mia"}).status_code == 403
    refused = signed_in(world.sam).post(url, {"username": "ana"})
    assert refused.status_code == 422
    assert "ana is not in the team that owns this project" in refused.content.decode()
    assert signed_in(world.sam).post(url, {"username": "mia"}).status_code == 302
    assert list(world.project.reviewers.values_list("username", flat=True)) == ["mia"]
    page = signed_in(world.sam).get(f"/projects/{world.project.pk}/").content.decode()
    assert "Asked first:" in page and "mia" in page
    signed_in(world.sam).post(f"{url}{mia.pk}/remove/")
    assert not world.project.reviewers.exists()

    bad = signed_in(world.sam).post(f"/projects/{world.project.pk}/approvals/", {"approvals": "3"})
    assert bad.status_code == 422
    signed_in(world.sam).post(f"/projects/{world.project.pk}/approvals/", {"approvals": "2"})
    world.project.refresh_from_db()
    assert world.project.approvals_required == 2


def test_the_sessions_of_a_project_show_on_its_own_reviewers_board(world):
    world.project.reviewers.add(world.dana)
    assert audience_of(User.objects.get(pk=world.dana.pk)).may_decide(
        Session.objects.get(pk=world.session.pk)
    )
