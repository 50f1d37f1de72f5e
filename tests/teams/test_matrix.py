"""The auth matrix, rows "member of another team": every surface that shows or changes a
session refuses ana, who reviews another team, and raj, a plain member of it, as if the Shop
session did not exist; the same surfaces serve sam, the Shop team's reviewer (so each row can
fail)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client

from dashboard.core.changes import Changes
from dashboard.core.visibility import audience_of
from dashboard.notifications import outbox
from dashboard.notifications.models import Delivery, PushDevice, WebhookTarget
from planmode.inbox import inbox_count
from planmode.models import Annotation, PermissionRequest, Plan, RequestStatus
from tests.conftest import AgentApi, parse_html
from tests.notifications.receivers import PushBrowser
from tests.teams.conftest import World, token_of

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Surface:
    name: str
    # What the person does; returns what they got.
    visit: Callable[[Client, World], object]
    # Whether what they got shows (or did) the Shop session's thing.
    shows: Callable[[object, World], bool]


def status(expected: int) -> Callable[[object, World], bool]:
    return lambda response, world: response.status_code == expected


def mentions(text: Callable[[World], str]) -> Callable[[object, World], bool]:
    return lambda response, world: text(world) in response.content.decode()


def plan_still_pending(response, world: World) -> bool:
    return Plan.objects.get(pk=world.plan.pk).status != "pending"


def request_answered(response, world: World) -> bool:
    return PermissionRequest.objects.get(pk=world.request.pk).status != RequestStatus.PENDING


def a_comment(world: World) -> Annotation:
    return Annotation.objects.create(
        plan=world.plan, quote="Page the orders list", comment="Why?", author=world.sam
    )


SURFACES = [
    Surface("overview", lambda c, w: c.get("/"), mentions(lambda w: "Orders paging")),
    Surface("board", lambda c, w: c.get(f"/sessions/{w.session.session_id}/"), status(200)),
    Surface(
        "timeline",
        lambda c, w: c.get(f"/sessions/{w.session.session_id}/timeline/"),
        status(200),
    ),
    Surface("plan queue", lambda c, w: c.get("/plans/"), mentions(lambda w: w.plan.title)),
    Surface("plan review", lambda c, w: c.get(f"/plans/{w.plan.pk}/"), status(200)),
    Surface(
        "plan decision",
        lambda c, w: c.post(f"/plans/{w.plan.pk}/decide/", {"action": "approve", "text": ""}),
        plan_still_pending,
    ),
    Surface(
        "plan comment",
        lambda c, w: c.post(
            f"/plans/{w.plan.pk}/annotations/",
            {"quote": "Page the orders list", "kind": "comment", "comment": "Why?"},
        ),
        lambda response, world: world.plan.annotations.exists(),
    ),
    Surface(
        "plan comment removal",
        lambda c, w: c.post(f"/plans/{w.plan.pk}/annotations/{a_comment(w).pk}/remove/"),
        lambda response, world: not world.plan.annotations.exists(),
    ),
    Surface("inbox", lambda c, w: c.get("/inbox/"), mentions(lambda w: "make release-orders")),
    Surface(
        "permission request",
        lambda c, w: c.get(f"/inbox/requests/{w.request.pk}/"),
        status(200),
    ),
    Surface(
        "permission answer",
        lambda c, w: c.post(f"/inbox/requests/{w.request.pk}/decide/", {"action": "allow"}),
        request_answered,
    ),
    Surface(
        "countdown cancel",
        lambda c, w: c.post(f"/continuations/{w.countdown.pk}/cancel/"),
        status(204),
    ),
    Surface(
        "loop dismissal",
        lambda c, w: c.post(f"/concerns/{w.concern.pk}/dismiss/"),
        status(204),
    ),
    Surface(
        "enforcer switch",
        lambda c, w: c.post(f"/sessions/{w.session.session_id}/enforcer/", {"enabled": "false"}),
        status(204),
    ),
    Surface("projects", lambda c, w: c.get("/projects/"), mentions(lambda w: "acme/shop")),
    Surface("project", lambda c, w: c.get(f"/projects/{w.project.pk}/"), status(200)),
    Surface(
        "search",
        lambda c, w: c.get("/search/?q=pagination"),
        mentions(lambda w: "Cursor"),
    ),
    Surface(
        "desktop notifications",
        lambda c, w: c.get("/settings/notifications/waiting.json"),
        lambda response, world: bool(response.json()["items"]),
    ),
]


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("surface", SURFACES, ids=lambda surface: surface.name)
def test_a_member_of_another_team_is_refused(world, surface, outsider):
    response = surface.visit(signed_in(outsider), world)
    assert not surface.shows(response, world)
    if hasattr(response, "status_code") and response.status_code >= 400:
        # Not there, rather than forbidden: its existence is not told either.
        assert response.status_code == 404


@pytest.mark.parametrize("surface", SURFACES, ids=lambda surface: surface.name)
def test_the_teams_reviewer_is_served(world, surface):
    response = surface.visit(signed_in(world.sam), world)
    assert surface.shows(response, world), getattr(response, "content", b"")[:300]


def test_the_api_search_finds_nothing_for_another_teams_token(world, client, outsider):
    ana = AgentApi(client, token_of(outsider))
    sam = AgentApi(client, token_of(world.sam))
    assert ana.get("/api/v1/search?q=pagination").json() == {"results": []}
    assert sam.get("/api/v1/search?q=pagination").json()["results"]


def test_the_header_counts_nothing_of_another_team(world, outsider):
    assert inbox_count(audience_of(outsider)).total == 0
    assert inbox_count(audience_of(world.sam)).total == 4


def add_phone(user: User) -> PushDevice:
    """A phone subscribed as a browser subscribes (its own keys), at its push service."""
    subscription = PushBrowser().subscription(f"https://push.example/{user.username}")
    return PushDevice.objects.create(
        user=user,
        name=f"{user.username}'s phone",
        endpoint=subscription["endpoint"],
        p256dh=subscription["keys"]["p256dh"],
        auth=subscription["keys"]["auth"],
        base_url="http://board.test",
    )


@pytest.mark.parametrize("waits", ["plan", "permission request"])
def test_webhooks_and_phones_of_another_team_hear_nothing(world, outsider, waits):
    for person in (outsider, world.sam):
        WebhookTarget.objects.create(
            owner=person, name=person.username, url="https://chat.example/hook",
            events=["waiting"], kind="json",
        )  # fmt: skip
        add_phone(person)
    Delivery.objects.all().delete()
    changes = (
        Changes(plans={world.plan.pk})
        if waits == "plan"
        else Changes(permission_requests={world.request.pk})
    )
    with transaction.atomic():
        outbox.enqueue(changes)
    hooks = set(
        Delivery.objects.filter(target__isnull=False).values_list(
            "target__owner__username", flat=True
        )
    )
    phones = set(
        Delivery.objects.filter(device__isnull=False).values_list(
            "device__user__username", flat=True
        )
    )
    assert (hooks, phones) == ({"sam"}, {"sam"})


def test_the_overview_filters_offer_nothing_of_another_team(world, outsider):
    page = parse_html(signed_in(outsider).get("/").content)
    offered = {option.text() for option in page.find_all("option")}
    assert "shop" not in offered and "dana" not in offered
