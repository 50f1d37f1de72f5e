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
from dashboard.notifications.models import Delivery, WebhookTarget
from planmode.inbox import inbox_items
from planmode.models import Plan, PlanApproval
from planmode.services import plan_submit
from tests.conftest import parse_html
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


def test_a_named_member_decides_the_projects_plans(world):
    assert decide(world.dana, world.plan, "approve").status_code == 403
    world.project.reviewers.add(world.dana)
    assert decide(world.dana, world.plan, "approve").status_code == 302
    assert Plan.objects.get(pk=world.plan.pk).status == "approved"


def test_its_own_reviewers_are_told_at_once_and_the_others_later_unless_answered(world, mia):
    world.project.reviewers.add(world.sam)
    for person in (world.sam, mia):
        WebhookTarget.objects.create(
            owner=person, name=person.username, url="https://chat.example/hook",
            events=["waiting"], kind="json",
        )  # fmt: skip
    Delivery.objects.all().delete()
    with transaction.atomic():
        outbox.enqueue(Changes(plans={world.plan.pk}))
    soon = timezone.now() + timedelta(minutes=1)
    due = {
        d.target.owner.username: d.next_attempt_at <= soon
        for d in Delivery.objects.select_related("target__owner")
    }
    assert due == {"sam": True, "mia": False}

    assert decide(world.sam, world.plan, "approve").status_code == 302
    # Answered: mia is not told of it later.
    waiting = Delivery.objects.filter(event="waiting")
    assert set(waiting.values_list("target__owner__username", flat=True)) == {"sam"}


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
