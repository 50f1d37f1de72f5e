"""The audit log of what people change: team rules, agent tokens, teams and their members,
projects, notification targets and roles changed in the admin. Each entry says who, what, where
from and what it concerns, is written in the change's own transaction (a refused or rolled
back change leaves none), holds no secret, and is read only by those it concerns."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from dashboard.core.audit import Via
from dashboard.core.writer import write_sync
from dashboard.models import AgentToken, AuditEntry, Membership, Project, Team, TeamRole
from dashboard.notifications.models import PushDevice, WebhookTarget
from dashboard.teams import services as teams
from planmode.models import TeamRule
from tests.conftest import parse_html
from tests.teams.conftest import World

pytestmark = pytest.mark.django_db

ADDRESS = "10.9.8.7"


def signed_in(user: User) -> Client:
    client = Client(REMOTE_ADDR=ADDRESS)
    client.force_login(user)
    return client


def last() -> AuditEntry:
    return AuditEntry.objects.order_by("-pk").first()


def actions() -> list[str]:
    return list(AuditEntry.objects.order_by("pk").values_list("action", flat=True))


def listed(user: User) -> list[str]:
    page = parse_html(signed_in(user).get("/audit/").content)
    tables = page.find_all("tbody")
    return [row.text() for row in tables[0].find_all("tr")] if tables else []


def links(user: User) -> list[str]:
    page = parse_html(signed_in(user).get("/audit/").content)
    return [a.attrs["href"] for a in page.find("tbody").find_all("a")]


# --- team rules ---------------------------------------------------------------------------------


def test_a_team_rule_added_and_removed_on_its_page_is_recorded(world: World, reviewer):
    lead = signed_in(reviewer)
    response = lead.post(
        "/inbox/rules/", {"behavior": "allow", "rule": "Bash(npm test *)", "project": "shop"}
    )
    assert response.status_code == 302
    rule = TeamRule.objects.get()
    entry = last()
    assert (entry.actor_name, entry.action, entry.about) == (
        "lead",
        "rule.added",
        f"rule:{rule.pk}",
    )
    assert (entry.surface, entry.address) == ("team rules page", ADDRESS)
    assert entry.summary == "allow Bash(npm test *) for project shop"
    # The rule names a project: its team's reviewers read it.
    assert (entry.project_id, entry.team_id) == (world.project.pk, world.shop.pk)
    lead.post(f"/inbox/rules/{rule.pk}/delete/")
    assert (last().action, last().summary) == (
        "rule.removed", "allow Bash(npm test *) for project shop",
    )  # fmt: skip


def test_a_refused_team_rule_writes_no_entry(world: World, reviewer):
    bad = signed_in(reviewer).post("/inbox/rules/", {"behavior": "allow", "rule": "Bash("})
    assert bad.status_code == 422
    # sam reviews one team: team rules are for admins and holders of the review permission.
    refused = signed_in(world.sam).post("/inbox/rules/", {"behavior": "deny", "rule": "Read(*)"})
    assert refused.status_code == 403
    rule = TeamRule.objects.create(behavior="deny", rule="Read(*)")
    assert signed_in(world.sam).post(f"/inbox/rules/{rule.pk}/delete/").status_code == 403
    assert signed_in(reviewer).post("/inbox/rules/999/delete/").status_code == 404
    assert not AuditEntry.objects.exists()


def test_a_rule_with_a_secret_in_it_is_recorded_redacted(world: World, reviewer):
    signed_in(reviewer).post(
        "/inbox/rules/",
        {"behavior": "allow", "rule": "Bash(PASSWORD=hunter2-Correct-Horse ./deploy.sh)"},
    )
    assert "hunter2" not in last().summary and "[redacted" in last().summary


def test_a_rule_changed_in_the_admin_says_what_it_was(world: World, reviewer):
    rule = TeamRule.objects.create(behavior="allow", rule="Bash(ls *)", project="")
    response = signed_in(reviewer).post(
        f"/admin/planmode/teamrule/{rule.pk}/change/",
        {"project": "", "rule": "Bash(ls -la *)", "behavior": "deny", "mode": "active",
         "created_at_0": "2026-11-26", "created_at_1": "10:00:00"},
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:2000]
    entry = last()
    assert (entry.action, entry.surface, entry.address) == ("rule.changed", "admin", ADDRESS)
    assert (
        entry.summary
        == "allow Bash(ls *) for every project → deny Bash(ls -la *) for every project"
    )


# --- agent tokens -------------------------------------------------------------------------------


def test_a_token_made_and_revoked_in_settings_is_recorded_without_its_secret(world: World):
    dana = signed_in(world.dana)
    page = dana.post("/settings/tokens/", {"label": "laptop"}).content.decode()
    token = AgentToken.objects.get(owner=world.dana, label="laptop")
    created = last()
    assert (created.actor_name, created.action, created.about) == (
        "dana", "token.created", f"token:{token.pk}",
    )  # fmt: skip
    assert (created.surface, created.address) == ("settings", ADDRESS)
    assert created.summary == "token 'laptop' of dana created"
    secret = parse_html(page).find("input", id="new-token").attrs["value"]
    assert secret.startswith("ab_") and secret[3:] not in created.summary
    assert token.hint not in created.summary
    dana.post(f"/settings/tokens/{token.pk}/revoke/")
    dana.post(f"/settings/tokens/{token.pk}/revoke/")  # already revoked: nothing more
    assert actions() == ["token.created", "token.revoked"]
    assert last().summary == "token 'laptop' of dana revoked"


def test_nobody_revokes_anothers_token_and_nothing_is_recorded(world: World):
    token, _ = AgentToken.issue(owner=world.dana, label="laptop")
    assert signed_in(world.ana).post(f"/settings/tokens/{token.pk}/revoke/").status_code == 404
    assert not AuditEntry.objects.exists()


def test_a_token_from_the_command_line_is_recorded_as_such(world: World):
    out = StringIO()
    call_command("create_token", "dana", "--label", "ci", stdout=out)
    entry = last()
    assert (entry.actor_name, entry.action, entry.surface) == ("", "token.created", "command line")
    assert out.getvalue().strip() not in entry.summary


def test_a_token_revoked_or_deleted_in_the_admin_is_recorded(world: World, reviewer):
    token, _ = AgentToken.issue(owner=world.dana, label="laptop")
    lead = signed_in(reviewer)
    assert lead.get("/admin/dashboard/agenttoken/add/").status_code == 403
    response = lead.post(
        f"/admin/dashboard/agenttoken/{token.pk}/change/",
        {"label": "laptop", "revoked_at_0": "2026-11-26", "revoked_at_1": "10:00:00"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert (last().action, last().surface, last().actor_name) == ("token.revoked", "admin", "lead")
    lead.post(f"/admin/dashboard/agenttoken/{token.pk}/delete/", {"post": "yes"})
    assert not AgentToken.objects.exists()
    assert actions() == ["token.revoked", "token.revoked"]
    assert last().summary == "token 'laptop' of dana deleted"


# --- teams and their members --------------------------------------------------------------------


def test_team_changes_on_the_teams_page_are_recorded_for_the_team(world: World, reviewer):
    lead = signed_in(reviewer)
    assert lead.post("/teams/new/", {"name": "Data"}).status_code == 302
    data = Team.objects.get(name="Data")
    lead.post(f"/teams/{data.pk}/rename/", {"name": "Data platform"})
    lead.post(f"/teams/{data.pk}/members/", {"username": "ana", "role": "member"})
    membership = Membership.objects.get(team=data, user=world.ana)
    lead.post(f"/teams/{data.pk}/members/{membership.pk}/role/", {"role": "reviewer"})
    lead.post(f"/teams/{data.pk}/members/{membership.pk}/role/", {"role": "reviewer"})  # no change
    lead.post(f"/teams/{data.pk}/members/{membership.pk}/remove/")
    lead.post(f"/teams/{data.pk}/delete/")
    rows = list(
        AuditEntry.objects.order_by("pk").values_list(
            "actor_name", "action", "team_id", "about", "surface", "address", "summary"
        )
    )
    about = f"team:{data.pk}"
    assert rows == [
        ("lead", "team.created", data.pk, about, "teams page", ADDRESS, "team Data created"),
        ("lead", "team.changed", data.pk, about, "teams page", ADDRESS,
         "team Data renamed to Data platform"),
        ("lead", "team.member_added", data.pk, about, "teams page", ADDRESS,
         "ana as member added to Data platform"),
        ("lead", "team.member_changed", data.pk, about, "teams page", ADDRESS,
         "ana: member → reviewer of Data platform"),
        ("lead", "team.member_removed", data.pk, about, "teams page", ADDRESS,
         "ana as reviewer removed from Data platform"),
        ("lead", "team.removed", data.pk, about, "teams page", ADDRESS,
         "team Data platform removed"),
    ]  # fmt: skip


def test_a_persons_full_name_is_how_the_entry_names_them(world: World, reviewer):
    world.sam.first_name, world.sam.last_name = "Sam", "Okafor"
    world.sam.save()
    membership = Membership.objects.get(team=world.shop, user=world.sam)
    signed_in(reviewer).post(
        f"/teams/{world.shop.pk}/members/{membership.pk}/role/", {"role": "member"}
    )
    assert last().summary == "Sam Okafor (sam): reviewer → member of Shop"


def test_refused_team_changes_write_no_entry(world: World, reviewer):
    assert signed_in(world.sam).post("/teams/new/", {"name": "Mine"}).status_code == 403
    lead = signed_in(reviewer)
    assert lead.post("/teams/new/", {"name": "shop"}).status_code == 409
    assert lead.post("/teams/new/", {"name": "  "}).status_code == 422
    assert lead.post(f"/teams/{world.shop.pk}/delete/").status_code == 409  # owns a project
    added = lead.post(f"/teams/{world.shop.pk}/members/", {"username": "nobody", "role": "member"})
    assert added.status_code == 422
    assert not AuditEntry.objects.exists()


def test_a_change_and_its_entry_roll_back_together(world: World, reviewer):
    with pytest.raises(RuntimeError), transaction.atomic():
        teams.team_create(name="Gone", actor=reviewer, via=Via(surface="teams page"))
        raise RuntimeError("the change fails after its entry")
    assert not Team.objects.filter(name="Gone").exists()
    assert not AuditEntry.objects.exists()


def test_a_change_whose_entry_cannot_be_written_is_not_made(world: World, reviewer, monkeypatch):
    def refuse(*args, **kwargs):
        raise RuntimeError("the audit log is unavailable")

    monkeypatch.setattr(AuditEntry, "save", refuse)
    with pytest.raises(RuntimeError):
        write_sync(teams.team_create, name="Unrecorded", actor=reviewer, via=None)
    assert not Team.objects.filter(name="Unrecorded").exists()
    with pytest.raises(RuntimeError):
        signed_in(world.dana).post("/settings/tokens/", {"label": "unrecorded"})
    assert not AgentToken.objects.filter(label="unrecorded").exists()


def test_team_changes_in_the_admin_are_recorded(world: World, reviewer):
    lead = signed_in(reviewer)
    response = lead.post(
        "/admin/dashboard/team/add/",
        {
            "name": "Mobile",
            "created_at_0": "2026-11-26", "created_at_1": "10:00:00",
            "memberships-TOTAL_FORMS": "1", "memberships-INITIAL_FORMS": "0",
            "memberships-MIN_NUM_FORMS": "0", "memberships-MAX_NUM_FORMS": "1000",
            "memberships-0-user": str(world.ana.pk), "memberships-0-role": "reviewer",
        },
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:3000]
    mobile = Team.objects.get(name="Mobile")
    rows = AuditEntry.objects.order_by("pk").values_list("action", "surface", "team_id", "summary")
    assert list(rows) == [
        ("team.created", "admin", mobile.pk, "team Mobile created"),
        ("team.member_added", "admin", mobile.pk, "ana as reviewer added to Mobile"),
    ]  # fmt: skip


# --- projects -----------------------------------------------------------------------------------


def test_project_changes_are_recorded_for_its_team(world: World, reviewer):
    sam = signed_in(world.sam)
    pk = world.project.pk
    sam.post(f"/projects/{pk}/rename/", {"name": "Shop web"})
    sam.post(f"/projects/{pk}/reviewers/", {"username": "dana"})
    sam.post(f"/projects/{pk}/reviewers/{world.dana.pk}/remove/")
    sam.post(f"/projects/{pk}/approvals/", {"approvals": "2"})
    signed_in(reviewer).post(f"/projects/{pk}/team/", {"team": str(world.infra.pk)})
    rows = list(
        AuditEntry.objects.order_by("pk").values_list(
            "actor_name", "action", "project_id", "team_id", "about", "surface", "summary"
        )
    )
    about = f"project:{pk}"
    shop, infra = world.shop.pk, world.infra.pk
    assert rows == [
        ("sam", "project.changed", pk, shop, about, "project page",
         "project shop renamed to Shop web"),
        ("sam", "project.changed", pk, shop, about, "project page",
         "dana named a reviewer of Shop web"),
        ("sam", "project.changed", pk, shop, about, "project page",
         "dana no longer a named reviewer of Shop web"),
        ("sam", "project.changed", pk, shop, about, "project page",
         "Shop web: approvals each plan needs 1 → 2"),
        ("lead", "project.changed", pk, infra, about, "project page",
         "Shop web: team Shop → Infra"),
    ]  # fmt: skip
    assert AuditEntry.objects.filter(project_name="Shop web").count() == 5


def test_refused_project_changes_write_no_entry(world: World):
    pk = world.project.pk
    dana = signed_in(world.dana)  # a member, not a reviewer
    assert dana.post(f"/projects/{pk}/rename/", {"name": "Mine"}).status_code == 403
    assert dana.post(f"/projects/{pk}/approvals/", {"approvals": "2"}).status_code == 403
    sam = signed_in(world.sam)
    assert sam.post(f"/projects/{pk}/team/", {"team": str(world.infra.pk)}).status_code == 403
    assert sam.post(f"/projects/{pk}/rename/", {"name": " "}).status_code == 422
    assert sam.post(f"/projects/{pk}/approvals/", {"approvals": "3"}).status_code == 422
    assert sam.post(f"/projects/{pk}/reviewers/", {"username": "ana"}).status_code == 422
    sam.post(f"/projects/{pk}/approvals/", {"approvals": "1"})  # as it is: nothing changes
    assert not AuditEntry.objects.exists()


# --- notification targets -----------------------------------------------------------------------

SECRET_URL = "http://127.0.0.1:9/services/T0/B0/very-secret-path?token=s3cr3t-query"


@pytest.fixture(autouse=True)
def loopback_webhooks(settings):
    settings.AGENTBOARD_WEBHOOK_ALLOW_PRIVATE = True


def test_a_webhook_is_recorded_by_its_host_only(world: World, reviewer):
    lead = signed_in(reviewer)
    response = lead.post(
        "/settings/notifications/webhooks/",
        {"name": "Ops chat", "kind": "json", "url": SECRET_URL, "events": ["waiting"],
         "projects": "shop"},
    )  # fmt: skip
    assert response.status_code == 200
    target = WebhookTarget.objects.get()
    entry = last()
    assert (entry.action, entry.about, entry.surface, entry.address) == (
        "notify.target_added", f"webhook:{target.pk}", "settings", ADDRESS,
    )  # fmt: skip
    assert entry.summary == (
        "webhook Ops chat (JSON webhook signed with HMAC-SHA256) to 127.0.0.1: "
        "waiting on a person; shop added"
    )
    lead.post(f"/settings/notifications/webhooks/{target.pk}/remove/")
    assert actions() == ["notify.target_added", "notify.target_removed"]
    text = json.dumps(list(AuditEntry.objects.values()), default=str)
    assert "very-secret-path" not in text and "s3cr3t" not in text
    assert target.secret not in text


def test_a_refused_webhook_writes_no_entry(world: World):
    dana = signed_in(world.dana)  # watches only
    response = dana.post(
        "/settings/notifications/webhooks/",
        {"name": "x", "kind": "slack", "url": SECRET_URL, "events": ["waiting"]},
    )
    assert response.status_code == 403
    bad = signed_in(world.sam).post(
        "/settings/notifications/webhooks/", {"name": "x", "kind": "slack", "url": SECRET_URL}
    )
    assert bad.status_code == 422
    assert not AuditEntry.objects.exists()


def test_a_push_device_added_renamed_and_removed_is_recorded(world: World):
    dana = signed_in(world.dana)
    body = {
        "endpoint": "https://push.example.com/send/device-secret-id",
        "keys": {"p256dh": "key", "auth": "auth"},
        "name": "Dana's phone",
    }
    response = dana.post(
        "/settings/notifications/devices/", json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 201
    device = PushDevice.objects.get()
    dana.post(f"/settings/notifications/devices/{device.pk}/rename/", {"name": "Work phone"})
    dana.post(f"/settings/notifications/devices/{device.pk}/remove/")
    assert list(AuditEntry.objects.order_by("pk").values_list("action", "summary")) == [
        ("notify.target_added", "push device Dana's phone (push.example.com) added"),
        ("notify.target_changed",
         "push device Work phone (push.example.com) renamed from Dana's phone"),
        ("notify.target_removed", "push device Work phone (push.example.com) removed"),
    ]  # fmt: skip
    assert not AuditEntry.objects.filter(summary__contains="device-secret-id").exists()
    bad = dana.post("/settings/notifications/devices/", "{}", content_type="application/json")
    assert bad.status_code == 422 and AuditEntry.objects.count() == 3


# --- roles in the admin -------------------------------------------------------------------------


def _user_form(user: User, **changes) -> dict:
    form = {
        "username": user.username, "first_name": user.first_name, "last_name": user.last_name,
        "email": user.email, "date_joined_0": "2026-11-01", "date_joined_1": "10:00:00",
        "is_active": "on",
    }  # fmt: skip
    form.update(changes)
    return {key: value for key, value in form.items() if value is not None}


def test_a_role_changed_in_the_admin_is_recorded(world: World, reviewer):
    review = Permission.objects.get(codename="review_plan")
    reviewers = Group.objects.create(name="reviewers")
    lead = signed_in(reviewer)
    response = lead.post(
        f"/admin/auth/user/{world.dana.pk}/change/",
        _user_form(world.dana, is_superuser="on", groups=[str(reviewers.pk)],
                   user_permissions=[str(review.pk)]),
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:3000]
    entry = last()
    assert (entry.actor_name, entry.action, entry.about, entry.surface, entry.address) == (
        "lead", "role.changed", f"user:{world.dana.pk}", "admin", ADDRESS,
    )  # fmt: skip
    assert entry.summary == (
        "dana: admin yes; groups added reviewers; permissions added planmode.review_plan"
    )
    lead.post(f"/admin/auth/user/{world.dana.pk}/change/", _user_form(world.dana, is_active=None))
    assert last().summary == (
        "dana: admin no; active no; groups removed reviewers; "
        "permissions removed planmode.review_plan"
    )
    # Saving without a change records nothing.
    lead.post(f"/admin/auth/user/{world.dana.pk}/change/", _user_form(world.dana, is_active=None))
    assert AuditEntry.objects.count() == 2


def test_a_groups_permissions_changed_in_the_admin_are_recorded(world: World, reviewer):
    review = Permission.objects.get(codename="review_plan")
    group = Group.objects.create(name="leads")
    world.sam.groups.add(group)
    response = signed_in(reviewer).post(
        f"/admin/auth/group/{group.pk}/change/", {"name": "leads", "permissions": [str(review.pk)]}
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert (last().action, last().about, last().summary) == (
        "role.changed", f"group:{group.pk}",
        "group leads (1 member): permissions added planmode.review_plan",
    )  # fmt: skip


def test_the_admin_offers_no_way_to_change_or_remove_an_entry(world: World, reviewer):
    signed_in(world.sam).post(f"/plans/{world.plan.pk}/decide/", {"action": "approve"})
    assert AuditEntry not in admin.site._registry
    lead = signed_in(reviewer)
    entry = AuditEntry.objects.get()
    for url in (
        "/admin/dashboard/auditentry/",
        f"/admin/dashboard/auditentry/{entry.pk}/change/",
        f"/admin/dashboard/auditentry/{entry.pk}/delete/",
    ):
        assert lead.get(url).status_code in {404, 302}
        assert lead.post(url, {"post": "yes"}).status_code in {404, 302}
    assert AuditEntry.objects.get().summary == entry.summary


# --- who reads them -----------------------------------------------------------------------------


def test_who_reads_which_change(world: World, reviewer):
    lead = signed_in(reviewer)
    lead.post(f"/teams/{world.shop.pk}/rename/", {"name": "Shop team"})
    signed_in(world.sam).post(f"/projects/{world.project.pk}/approvals/", {"approvals": "2"})
    signed_in(world.dana).post("/settings/tokens/", {"label": "laptop"})
    lead.post("/inbox/rules/", {"behavior": "deny", "rule": "Bash(rm -rf *)"})
    # An admin reads everything.
    assert len(listed(reviewer)) == 4
    # The team's reviewer: the team's and its project's changes, not someone's token.
    sam = listed(world.sam)
    assert len(sam) == 2
    assert "changed a team" in sam[1] and "changed a project's settings in shop" in sam[0]
    assert set(links(world.sam)) == {f"/teams/{world.shop.pk}/", f"/projects/{world.project.pk}/"}
    # A reviewer of another team reads none of it.
    assert listed(world.ana) == []
    export = signed_in(world.ana).get("/audit/export.json")
    assert json.loads(b"".join(export.streaming_content)) == {"entries": []}
    # The review permission reads the rules of every project, still no one's token.
    world.ana.user_permissions.add(Permission.objects.get(codename="review_plan"))
    ana = listed(User.objects.get(pk=world.ana.pk))
    assert len(ana) == 1 and "added a team rule" in ana[0]


def test_the_page_links_an_admin_to_what_each_change_concerns(world: World, reviewer):
    signed_in(world.dana).post("/settings/tokens/", {"label": "laptop"})
    token = AgentToken.objects.get(label="laptop")
    lead = signed_in(reviewer)
    lead.post(f"/teams/{world.shop.pk}/members/", {"username": "ana", "role": "member"})
    lead.post("/inbox/rules/", {"behavior": "deny", "rule": "Bash(rm -rf *)"})
    assert links(reviewer) == [
        "/inbox/rules/", f"/teams/{world.shop.pk}/",
        f"/admin/dashboard/agenttoken/{token.pk}/change/",
    ]  # fmt: skip


def test_markup_in_names_is_shown_as_text(world: World, reviewer):
    signed_in(reviewer).post("/teams/new/", {"name": "<b>Ops</b>"})
    page = signed_in(reviewer).get("/audit/").content.decode()
    assert "<b>Ops</b>" not in page and "&lt;b&gt;Ops&lt;/b&gt;" in page


def test_the_action_filter_offers_the_changes_in_groups(world: World, reviewer):
    signed_in(reviewer).post("/teams/new/", {"name": "Data"})
    page = parse_html(signed_in(reviewer).get("/audit/?action=team.created").content)
    groups = [group.attrs["label"] for group in page.find_all("optgroup")]
    assert groups[:2] == ["Decisions", "Rules and tokens"] and "People and teams" in groups
    assert len(listed(reviewer)) == 1


def test_the_page_reads_a_bounded_number_of_queries_however_many_changes(world: World, reviewer):
    def count(user: User) -> int:
        client = signed_in(user)
        client.get("/audit/")
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/audit/").status_code == 200
        return len(queries)

    def changes(n: int) -> None:
        for i in range(n):
            name = f"Team {Team.objects.count()}-{i}"
            write_sync(teams.team_create, name=name, actor=reviewer, via=None)
            write_sync(
                teams.member_add, team_pk=Team.objects.get(name=name).pk, username="sam",
                role=TeamRole.REVIEWER, actor=reviewer, via=None,
            )  # fmt: skip
            project = Project.objects.create(key=f"p{name}", name=name, team=world.shop)
            from dashboard.projects.services import project_rename

            write_sync(project_rename, project_pk=project.pk, name=f"{name}!", actor=reviewer)
        signed_in(world.dana).post("/settings/tokens/", {"label": f"t{n}"})

    changes(2)
    few = (count(reviewer), count(world.sam))
    changes(8)
    assert (count(reviewer), count(world.sam)) == few


def test_an_account_added_in_the_admin_is_recorded(world: World, reviewer):
    response = signed_in(reviewer).post(
        "/admin/auth/user/add/",
        {"username": "mei", "usable_password": "true",
         "password1": "a-long-password-9", "password2": "a-long-password-9"},
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:3000]
    mei = User.objects.get(username="mei")
    assert (last().action, last().about, last().summary) == (
        "role.changed", f"user:{mei.pk}", "mei: account created",
    )  # fmt: skip


def test_a_secret_in_a_name_people_give_is_recorded_redacted(world: World, reviewer):
    signed_in(reviewer).post("/teams/new/", {"name": "PASSWORD=hunter2-Correct-Horse"})
    signed_in(world.dana).post("/settings/tokens/", {"label": "PASSWORD=hunter2-Correct-Horse"})
    assert AuditEntry.objects.count() == 2
    assert not AuditEntry.objects.filter(summary__contains="hunter2").exists()


def test_the_first_start_records_the_first_admin_and_token(db):
    from dashboard.management.commands.serve import Command as ServeCommand

    out = StringIO()
    ServeCommand(stdout=out)._bootstrap(host="127.0.0.1", port=8000)
    rows = AuditEntry.objects.order_by("pk").values_list(
        "actor_name", "action", "surface", "summary"
    )
    assert list(rows) == [
        ("", "role.changed", "first start", "lead: account created; admin yes"),
        ("", "token.created", "first start", "token 'first token' of lead created"),
    ]
    printed = out.getvalue()
    token = printed.split("Bearer <token>'):", 1)[1].split()[0]
    assert (
        token.startswith("ab_")
        and not AuditEntry.objects.filter(summary__contains=token[3:]).exists()
    )
