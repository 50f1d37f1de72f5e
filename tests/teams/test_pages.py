"""The teams pages and a project's team: admins change them, everyone reads them, bad input
gets one sentence and changes nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.core.origin import HOST_HEADER, REPOSITORY_HEADER
from dashboard.models import Membership, Project, Session, Team, TeamRole
from tests.conftest import parse_html
from tests.hooks.conftest import load_fixture

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def alert(response) -> str:
    return parse_html(response.content).find(role="alert").text()


def test_an_admin_makes_a_team_adds_people_and_sets_their_roles(db, reviewer, user):
    lead = signed_in(reviewer)
    created = lead.post("/teams/new/", {"name": "  Payments  "})
    team = Team.objects.get(name="Payments")
    assert created.status_code == 302 and created["Location"] == f"/teams/{team.pk}/"

    assert lead.post(f"/teams/{team.pk}/members/", {"username": "dana", "role": "member"})
    membership = Membership.objects.get(team=team, user=user)
    assert membership.role == TeamRole.MEMBER
    lead.post(f"/teams/{team.pk}/members/{membership.pk}/role/", {"role": "reviewer"})
    assert Membership.objects.get(pk=membership.pk).role == TeamRole.REVIEWER

    page = parse_html(lead.get(f"/teams/{team.pk}/").content)
    assert "dana" in page.find("table").text()
    listed = parse_html(lead.get("/teams/").content).find("tbody").text()
    assert "Payments" in listed

    lead.post(f"/teams/{team.pk}/members/{membership.pk}/remove/")
    assert not Membership.objects.filter(pk=membership.pk).exists()


def test_anyone_reads_the_teams_and_only_an_admin_changes_them(world):
    ana = signed_in(world.ana)
    page = ana.get(f"/teams/{world.shop.pk}/")
    assert page.status_code == 200 and "sam" in page.content.decode()
    assert "Add by user name" not in page.content.decode()

    assert ana.post("/teams/new/", {"name": "Mine"}).status_code == 403
    assert (
        ana.post(
            f"/teams/{world.shop.pk}/members/", {"username": "ana", "role": "reviewer"}
        ).status_code
        == 403
    )
    assert not Team.objects.filter(name="Mine").exists()
    assert not Membership.objects.filter(team=world.shop, user=world.ana).exists()


@pytest.mark.parametrize(
    ("name", "status", "sentence"),
    [
        ("", 422, "Give the team a name."),
        ("x" * 101, 422, "A team's name has at most 100 characters."),
        ("Bad\x00name", 422, "A team's name is plain text, without control characters."),
        ("shop", 409, "There is already a team named shop."),
    ],
)
def test_a_bad_team_name_gets_one_sentence(world, reviewer, name, status, sentence):
    response = signed_in(reviewer).post("/teams/new/", {"name": name})
    assert response.status_code == status
    assert alert(response) == sentence
    assert Team.objects.count() == 2


def test_markup_in_a_team_name_is_shown_as_text(db, reviewer):
    lead = signed_in(reviewer)
    lead.post("/teams/new/", {"name": "<script>alert(1)</script>"})
    html = lead.get("/teams/").content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_adding_someone_unknown_says_so_and_changes_nothing(world, reviewer):
    response = signed_in(reviewer).post(
        f"/teams/{world.shop.pk}/members/", {"username": "nobody", "role": "member"}
    )
    assert response.status_code == 422
    assert alert(response).startswith("There is no active account with that user name")
    bad_role = signed_in(reviewer).post(
        f"/teams/{world.shop.pk}/members/", {"username": "ana", "role": "owner"}
    )
    assert bad_role.status_code == 422 and alert(bad_role) == "Choose Member or Reviewer."
    assert world.shop.memberships.count() == 2


def test_a_team_that_owns_projects_is_not_removed(world, reviewer):
    lead = signed_in(reviewer)
    refused = lead.post(f"/teams/{world.shop.pk}/delete/")
    assert refused.status_code == 409
    assert alert(refused) == "Shop owns 1 project; give it to another team first."
    assert lead.post(f"/teams/{world.infra.pk}/delete/").status_code == 302
    assert list(Team.objects.values_list("name", flat=True)) == ["Shop"]


def test_an_admin_gives_a_project_to_a_team_and_its_sessions_go_with_it(world, reviewer):
    lead = signed_in(reviewer)
    response = lead.post(f"/projects/{world.project.pk}/team/", {"team": str(world.infra.pk)})
    assert response.status_code == 302
    assert Project.objects.get(pk=world.project.pk).team == world.infra
    assert Session.objects.get(pk=world.session.pk).team == world.infra
    assert signed_in(world.ana).get(f"/sessions/{world.session.session_id}/").status_code == 200
    assert signed_in(world.sam).get(f"/sessions/{world.session.session_id}/").status_code == 404

    lead.post(f"/projects/{world.project.pk}/team/", {"team": ""})
    assert Session.objects.get(pk=world.session.pk).team is None


def test_only_an_admin_chooses_a_projects_team_and_a_bad_choice_is_refused(world, reviewer):
    assert (
        signed_in(world.sam)
        .post(f"/projects/{world.project.pk}/team/", {"team": str(world.infra.pk)})
        .status_code
        == 403
    )
    refused = signed_in(reviewer).post(f"/projects/{world.project.pk}/team/", {"team": "999"})
    assert refused.status_code == 422 and alert(refused) == "Choose one of the teams listed."
    assert Project.objects.get(pk=world.project.pk).team == world.shop


def test_the_teams_reviewer_renames_its_project_and_a_member_cannot(world):
    assert (
        signed_in(world.dana)
        .post(f"/projects/{world.project.pk}/rename/", {"name": "Webshop"})
        .status_code
        == 403
    )
    signed_in(world.sam).post(f"/projects/{world.project.pk}/rename/", {"name": "Webshop"})
    assert Project.objects.get(pk=world.project.pk).name == "Webshop"


def test_a_new_project_joins_the_team_of_the_person_who_reported_it(world, hook, other_user):
    # The hook reports with dana's token; she is in one team, Shop.
    payload = load_fixture("session_start.json", session_id="new-1")
    headers = {REPOSITORY_HEADER: "git@github.com:acme/infra-tools.git", HOST_HEADER: "box"}
    assert hook(payload, headers=headers).status_code == 200
    session = Session.objects.get(session_id="new-1")
    assert session.project_record.team == world.shop
    assert session.team == world.shop
    # Someone in two teams (or none) leaves a new project to no team, until an admin chooses.
    Membership.objects.create(team=world.infra, user=world.dana)
    payload = load_fixture("session_start.json", session_id="new-2")
    headers = {REPOSITORY_HEADER: "git@github.com:acme/other.git", HOST_HEADER: "box"}
    assert hook(payload, headers=headers).status_code == 200
    assert Session.objects.get(session_id="new-2").team is None
