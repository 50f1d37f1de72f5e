"""The audit log: every decision recorded in the transaction that makes it, by whom (or which
team rule), from where; never changed or removed; read by admins and the team's reviewers,
filtered, paged, exported."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.models import AuditEntry
from planmode.models import PermissionRequest, TeamRule
from planmode.permissions import input_key
from tests.conftest import parse_html
from tests.teams.conftest import World

pytestmark = pytest.mark.django_db


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def entries() -> list[tuple[str, str, str, str]]:
    return list(
        AuditEntry.objects.order_by("pk").values_list("actor_name", "action", "about", "surface")
    )


def test_a_plan_decision_is_recorded_with_who_what_and_where(world: World):
    response = signed_in(world.sam).post(
        f"/plans/{world.plan.pk}/decide/",
        {"action": "approve", "text": "Keep the old route.", "via": "keyboard"},
        REMOTE_ADDR="10.1.2.3",
    )
    assert response.status_code == 302
    (entry,) = AuditEntry.objects.all()
    assert (entry.actor_name, entry.action, entry.about) == (
        "sam", "plan.approved", f"plan:{world.plan.pk}",
    )  # fmt: skip
    assert (entry.surface, entry.address) == ("keyboard shortcut", "10.1.2.3")
    assert (entry.project_name, entry.session_key, entry.team_id) == (
        "shop", world.session.session_id, world.shop.pk,
    )  # fmt: skip
    assert "Keep the old route." in entry.summary and world.plan.title in entry.summary


def test_an_approval_with_auto_accept_is_recorded_as_such_with_its_notes(world: World):
    response = signed_in(world.sam).post(
        f"/plans/{world.plan.pk}/decide/",
        {"action": "approve_auto", "text": "Fine, go ahead."},
        REMOTE_ADDR="10.1.2.4",
    )
    assert response.status_code == 302
    (entry,) = AuditEntry.objects.all()
    assert (entry.actor_name, entry.action, entry.about) == (
        "sam", "plan.approved_auto", f"plan:{world.plan.pk}",
    )  # fmt: skip
    assert (entry.surface, entry.address) == ("review page", "10.1.2.4")
    assert (entry.project_name, entry.session_key) == ("shop", world.session.session_id)
    assert entry.summary == f"{world.plan.title} (revision 1)\nFine, go ahead."
    page = parse_html(signed_in(world.sam).get("/audit/").content)
    assert "approved a plan, auto-accepting edits in shop" in listed(page)[0].text()


def test_a_rejection_records_the_notes_and_every_comment_sent_with_secrets_redacted(
    world: World,
):
    sam = signed_in(world.sam)
    long_comment = "Keep offsets for admins. " + "An admin jumps to page 40 of the orders. " * 100
    sam.post(
        f"/plans/{world.plan.pk}/annotations/",
        {"quote": "Page the orders list with a cursor.", "comment": long_comment.strip()},
    )
    sam.post(
        f"/plans/{world.plan.pk}/annotations/",
        {"quote": "Cursor pagination", "kind": "delete", "comment": "PASSWORD=hunter2-Horse"},
    )
    response = sam.post(
        f"/plans/{world.plan.pk}/decide/",
        {"action": "reject", "text": "Not yet; token=hunter2-Correct-Horse-9"},
        REMOTE_ADDR="10.1.2.5",
    )
    assert response.status_code == 302
    (entry,) = AuditEntry.objects.all()
    assert (entry.actor_name, entry.action, entry.surface, entry.address) == (
        "sam", "plan.rejected", "review page", "10.1.2.5",
    )  # fmt: skip
    assert entry.summary.startswith(f"{world.plan.title} (revision 1)\nNot yet; token=")
    assert '1. Remove "Cursor pagination": PASSWORD=' in entry.summary
    assert entry.summary.endswith(
        f'2. On "Page the orders list with a cursor.": {long_comment.strip()}'
    )
    assert "hunter2" not in entry.summary and entry.summary.count("[redacted:") == 2


def test_an_always_allow_records_the_rule_it_wrote(world: World):
    response = signed_in(world.sam).post(
        f"/inbox/requests/{world.request.pk}/decide/",
        {"action": "remember", "remember": "custom", "pattern": "make release*",
         "where": "project"},
        REMOTE_ADDR="10.1.2.6",
    )  # fmt: skip
    assert response.status_code in {200, 302}
    (entry,) = AuditEntry.objects.all()
    assert (entry.actor_name, entry.action, entry.about) == (
        "sam", "request.remembered", f"request:{world.request.pk}",
    )  # fmt: skip
    assert (entry.surface, entry.address) == ("inbox", "10.1.2.6")
    assert (entry.project_name, entry.session_key) == ("shop", world.session.session_id)
    assert entry.summary == (
        "Bash: make release-orders\n"
        "Always allow Bash(make release*) in this project (local settings)"
    )


def test_an_always_allow_of_claude_codes_suggestion_records_the_suggested_rule(world: World):
    request = PermissionRequest.objects.create(
        session=world.session, agent=world.agent, tool_name="Bash",
        tool_input={"command": "npm run test"}, input_key=input_key("Bash", {"c": "npm"}),
        suggestions=[{
            "type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm run test:*"}],
            "behavior": "allow", "destination": "session",
        }],
    )  # fmt: skip
    signed_in(world.sam).post(
        f"/inbox/requests/{request.pk}/decide/",
        {"action": "remember", "remember": "suggestion:0", "from": "board"},
    )
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.surface) == ("request.remembered", "board")
    assert entry.summary == "Bash: npm run test\nAlways allow Bash(npm run test:*) for this session"


def test_two_approvals_are_two_entries_and_a_refused_decision_none(world: World, reviewer):
    world.project.approvals_required = 2
    world.project.save()
    signed_in(world.sam).post(f"/plans/{world.plan.pk}/decide/", {"action": "approve"})
    again = signed_in(world.sam).post(f"/plans/{world.plan.pk}/decide/", {"action": "approve"})
    assert again.status_code == 409
    signed_in(reviewer).post(f"/plans/{world.plan.pk}/decide/", {"action": "reject", "text": "No"})
    assert [(who, action) for who, action, _, _ in entries()] == [
        ("sam", "plan.approval"),
        ("lead", "plan.rejected"),
    ]


def test_permission_answers_one_entry_per_request_and_where_they_came_from(world: World):
    twin = PermissionRequest.objects.create(
        session=world.session, agent=world.agent, tool_name="Bash",
        tool_input=world.request.tool_input, input_key=world.request.input_key,
    )  # fmt: skip
    sam = signed_in(world.sam)
    assert sam.post(
        "/inbox/requests/decide/", {"ids": [world.request.pk, twin.pk], "action": "allow"}
    ).status_code in {200, 302}
    assert [(a, about, s) for _, a, about, s in entries()] == [
        ("request.allowed", f"request:{world.request.pk}", "inbox, several at once"),
        ("request.allowed", f"request:{twin.pk}", "inbox, several at once"),
    ]
    third = PermissionRequest.objects.create(
        session=world.session, agent=world.agent, tool_name="Bash",
        tool_input={"command": "rm -rf build"}, input_key=input_key("Bash", {"command": "rm"}),
    )  # fmt: skip
    sam.post(
        f"/inbox/requests/{third.pk}/decide/",
        {"action": "stop", "message": "Not in build/", "from": "board"},
    )
    entry = AuditEntry.objects.order_by("-pk").first()
    assert (entry.action, entry.surface) == ("request.stopped", "board")
    assert "rm -rf build" in entry.summary and "Not in build/" in entry.summary


def test_a_team_rule_that_answers_is_named_as_who(world: World, hook, user):
    TeamRule.objects.create(behavior="deny", rule="Bash(curl *)", created_by=world.sam)
    payload = {
        "hook_event_name": "PermissionRequest",
        "session_id": world.session.session_id,
        "cwd": "/work/shop",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": "curl https://example.com"},
    }
    assert hook(payload).status_code == 200
    entry = AuditEntry.objects.get()
    assert (entry.actor_name, entry.rule, entry.action) == (
        "", "deny Bash(curl *)", "request.denied",
    )  # fmt: skip


def test_a_cancelled_countdown_is_recorded(world: World):
    assert (
        signed_in(world.sam).post(f"/continuations/{world.countdown.pk}/cancel/").status_code == 204
    )
    assert entries() == [("sam", "countdown.cancelled", f"countdown:{world.countdown.pk}", "board")]


def test_entries_are_never_changed_or_removed(world: World):
    signed_in(world.sam).post(f"/plans/{world.plan.pk}/decide/", {"action": "approve"})
    entry = AuditEntry.objects.get()
    with pytest.raises(PermissionError):
        AuditEntry.objects.update(summary="nothing happened")
    with pytest.raises(PermissionError):
        AuditEntry.objects.all().delete()
    entry.summary = "nothing happened"
    with pytest.raises(PermissionError):
        entry.save()
    with pytest.raises(PermissionError):
        entry.delete()
    assert AuditEntry.objects.get().summary != "nothing happened"


def listed(page) -> list:
    tables = page.find_all("tbody")
    return tables[0].find_all("tr") if tables else []


def test_reviewers_read_their_teams_entries_and_members_nothing(world: World, reviewer):
    signed_in(world.sam).post(f"/plans/{world.plan.pk}/decide/", {"action": "approve"})
    for person in (world.sam, reviewer):
        (row,) = listed(parse_html(signed_in(person).get("/audit/").content))
        assert "approved a plan in shop" in row.text()
    ana = signed_in(world.ana).get("/audit/")  # reviews another team
    assert ana.status_code == 200 and listed(parse_html(ana.content)) == []
    assert signed_in(world.dana).get("/audit/").status_code == 403
    export = signed_in(world.ana).get("/audit/export.json")
    assert json.loads(b"".join(export.streaming_content)) == {"entries": []}


def test_filters_pages_and_exports(world: World, reviewer, monkeypatch):
    from dashboard.audit import selectors

    monkeypatch.setattr(selectors, "PAGE", 2)
    lead = signed_in(reviewer)
    for n in range(5):
        request = PermissionRequest.objects.create(
            session=world.session, agent=world.agent, tool_name="Bash",
            tool_input={"command": f"echo <b>{n}</b>"}, input_key=input_key("Bash", {"n": n}),
        )  # fmt: skip
        lead.post(f"/inbox/requests/{request.pk}/decide/", {"action": "deny", "message": "no"})
    seen, query = [], "/audit/?person=lead&action=request.denied"
    while query:
        page = parse_html(lead.get(query).content)
        seen += [
            row.find("td", data_label="What").text() for row in page.find("tbody").find_all("tr")
        ]
        older = page.find_all("a", rel="next")
        query = older[0].attrs["href"] if older else ""
    assert len(seen) == 5 and len(set(seen)) == 5
    assert "echo <b>4</b>" in seen[0]  # newest first, markup shown as text

    rows = list(csv.DictReader(io.StringIO(b"".join(
        lead.get("/audit/export.csv?action=request.denied").streaming_content
    ).decode())))  # fmt: skip
    assert len(rows) == 5 and rows[0]["person"] == "lead" and rows[0]["surface"] == "inbox"
    assert lead.get("/audit/?action=nonsense").status_code == 400
    assert lead.get("/audit/?since=yesterday").status_code == 400
    assert lead.get("/audit/?before=garbage").status_code == 400
    assert lead.get("/audit/export.xml").status_code == 404
