"""Team rules as the request path applies them: shadow rules record what they would have
answered, expired rules decide nothing, dangerous shapes wait for a person, a change made
anywhere is seen at the next request, and each change is in the audit log."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard.models import Agent, AuditEntry, Session
from planmode.models import (
    PermissionRequest,
    RequestStatus,
    RuleMode,
    RuleVerdict,
    TeamRule,
)
from planmode.permissions import (
    model_message,
    permission_request_open,
    team_rule_activate,
    team_rule_add,
    team_rule_update,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(user) -> Agent:
    session = Session.objects.create(session_id="sess-1", owner=user, cwd="/home/dev/shop")
    return Agent.objects.create(session=session, agent_id="sess-1")


def ask(agent: Agent, command: str = "npm test", tool: str = "Bash") -> PermissionRequest:
    with transaction.atomic():
        return permission_request_open(
            agent=agent, tool_name=tool, tool_input={"command": command}, suggestions=[]
        ).request


def add(reviewer, rule: str, behavior: str = "allow", **options) -> TeamRule:
    options.setdefault("project", "")
    return team_rule_add(rule=rule, behavior=behavior, user=reviewer, **options)


# --- what decides -------------------------------------------------------------------------------


def test_a_shadow_rule_decides_nothing_but_records_what_it_would_have_answered(agent, reviewer):
    rule = add(reviewer, "Bash(npm test*)", mode=RuleMode.SHADOW)

    request = ask(agent)

    assert request.status == RequestStatus.PENDING
    verdict = RuleVerdict.objects.get()
    assert (verdict.rule_id, verdict.request_id, verdict.would) == (rule.pk, request.pk, "allow")


def test_shadow_rules_record_beside_the_active_rule_that_answered(agent, reviewer):
    active = add(reviewer, "Bash(npm *)")
    shadow = add(reviewer, "Bash(npm test)", "deny", mode=RuleMode.SHADOW)
    add(reviewer, "Bash(make *)", "deny", mode=RuleMode.SHADOW)

    request = ask(agent)

    assert (request.status, request.rule_id) == (RequestStatus.ALLOWED, active.pk)
    assert list(RuleVerdict.objects.values_list("rule_id", "would")) == [(shadow.pk, "deny")]


def test_a_shadow_rule_made_active_answers_from_then_on(agent, reviewer):
    rule = add(reviewer, "Bash(npm test*)", mode=RuleMode.SHADOW)
    assert ask(agent).status == RequestStatus.PENDING

    team_rule_activate(rule_id=rule.pk, user=reviewer)

    assert ask(agent, "npm test -- --watch").status == RequestStatus.ALLOWED
    entry = AuditEntry.objects.filter(action="rule.changed").get()
    assert entry.summary == (
        "allow Bash(npm test*) for every project, in shadow (deciding nothing) → "
        "allow Bash(npm test*) for every project"
    )


def test_an_expired_rule_decides_nothing(agent, reviewer):
    rule = add(reviewer, "Bash(npm test*)", expires_at=timezone.now() + timedelta(days=1))
    TeamRule.objects.filter(pk=rule.pk).update(
        expires_at=timezone.now() - timedelta(minutes=1), updated_at=timezone.now()
    )

    assert ask(agent).status == RequestStatus.PENDING
    assert TeamRule.objects.get().is_expired()


def test_a_deny_rule_still_beats_an_allow_rule_among_500(agent, reviewer):
    TeamRule.objects.bulk_create(
        [TeamRule(rule=f"Bash(tool-{n} *)", behavior="allow") for n in range(497)]
        + [
            TeamRule(rule="Bash(*)", behavior="allow"),
            TeamRule(rule="Bash(npm publish*)", behavior="deny", project="shop"),
            TeamRule(rule="Bash(npm publish*)", behavior="deny", project="other"),
        ]
    )

    assert ask(agent, "npm publish --tag next").status == RequestStatus.DENIED
    assert ask(agent, "tool-7 --help").status == RequestStatus.ALLOWED


def test_a_rule_with_its_own_message_tells_the_agent_that(agent, reviewer):
    add(reviewer, "Bash(npm publish*)", "deny", message="Releases go through CI; open a PR.")

    request = ask(agent, "npm publish")

    assert request.status == RequestStatus.DENIED
    assert model_message(request) == "Releases go through CI; open a PR."


# --- dangerous shapes ---------------------------------------------------------------------------


def test_a_broad_allow_rule_leaves_sudo_to_a_person(agent, reviewer):
    add(reviewer, "Bash(*)")

    assert ask(agent, "sudo apt-get install -y jq").status == RequestStatus.PENDING
    assert ask(agent, "git push --force origin main").status == RequestStatus.PENDING
    assert ask(agent, "npm ci").status == RequestStatus.ALLOWED


def test_a_confirmed_rule_that_names_sudo_allows_it(agent, reviewer):
    add(reviewer, "Bash(sudo apt-get update)", allows_dangerous=True)

    assert ask(agent, "sudo apt-get update").status == RequestStatus.ALLOWED


def test_a_rule_that_names_sudo_without_confirmation_leaves_it_to_a_person(agent, reviewer):
    add(reviewer, "Bash(sudo apt-get update)")

    assert ask(agent, "sudo apt-get update").status == RequestStatus.PENDING


def test_gemini_writes_to_env_wait_for_a_person(agent, reviewer):
    add(reviewer, "write_file(*)")
    with transaction.atomic():
        request = permission_request_open(
            agent=agent,
            tool_name="write_file",
            tool_input={"file_path": "/home/dev/shop/.env", "content": "KEY=1"},
            suggestions=[],
        ).request

    assert request.status == RequestStatus.PENDING


def test_a_reworded_rule_loses_its_confirmation(reviewer):
    rule = add(reviewer, "Bash(sudo apt-get update)", allows_dangerous=True)

    changed = team_rule_update(rule_id=rule.pk, user=reviewer, rule="Bash(sudo apt-get *)")

    assert changed is not None and not changed.allows_dangerous
    assert changed.updated_by == reviewer


# --- every process sees a change at its next request ------------------------------------------


def test_a_rule_added_elsewhere_answers_the_next_request(agent, reviewer):
    assert ask(agent).status == RequestStatus.PENDING

    # As another server process writes it: straight to the database.
    TeamRule.objects.create(rule="Bash(npm test*)", behavior="allow")

    assert ask(agent, "npm test -- -x").status == RequestStatus.ALLOWED


def test_a_rule_removed_or_changed_elsewhere_stops_answering(agent, reviewer):
    rule = TeamRule.objects.create(rule="Bash(npm test*)", behavior="allow")
    assert ask(agent).status == RequestStatus.ALLOWED

    rule.behavior = "deny"
    rule.save()
    assert ask(agent, "npm test a").status == RequestStatus.DENIED

    TeamRule.objects.all().delete()
    assert ask(agent, "npm test b").status == RequestStatus.PENDING


def test_the_rules_are_read_again_only_when_one_changed(agent, reviewer):
    TeamRule.objects.bulk_create(
        [TeamRule(rule=f"Bash(tool-{n} *)", behavior="allow") for n in range(50)]
    )
    ask(agent, "tool-1 a")

    with CaptureQueriesContext(connection) as queries:
        ask(agent, "tool-2 b")

    read = [q["sql"] for q in queries.captured_queries if "planmode_teamrule" in q["sql"]]
    assert len(read) == 1 and "COUNT" in read[0].upper()


# --- what may be written ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"rule": "Bash(ls \ud800)"}, "cannot be stored"),
        ({"rule": "Bash(" + "x" * 600 + ")"}, "at most 500"),
        ({"rule": "Bash(ls)", "mode": "sometimes"}, "active or shadow"),
        ({"rule": "Bash(ls)", "message": "x" * 6000}, "keep it under"),
        ({"rule": "Bash(ls)", "allows_dangerous": True}, "names no dangerous shape"),
        ({"rule": "Bash(sudo ls)", "behavior": "deny", "allows_dangerous": True}, "allow rule"),
        ({"rule": "Bash(ls)", "expires_at": timezone.now() - timedelta(days=1)}, "future"),
    ],
)
def test_a_rule_that_cannot_be_stored_is_refused_in_one_sentence(reviewer, options, says):
    options.setdefault("behavior", "allow")
    with pytest.raises(ValueError) as refused:
        team_rule_add(project="", user=reviewer, **options)

    assert says in str(refused.value)
    assert not TeamRule.objects.exists()


def test_markup_in_a_rule_stays_text_on_the_rules_page(reviewer):
    add(reviewer, "Bash(echo <script>alert(1)</script>)", "deny", message="<b>no</b>")
    client = Client()
    client.force_login(reviewer)

    page = client.get("/inbox/rules/").content.decode()

    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_an_edit_is_audited_with_what_it_was(reviewer):
    rule = add(reviewer, "Bash(npm test*)", project="shop")
    until = timezone.now() + timedelta(days=7)

    team_rule_update(rule_id=rule.pk, user=reviewer, behavior="deny", expires_at=until)

    entry = AuditEntry.objects.order_by("-pk").first()
    assert entry.action == "rule.changed"
    before, after = entry.summary.split(" → ")
    assert before == "allow Bash(npm test*) for project shop"
    assert after.startswith("deny Bash(npm test*) for project shop, until ")


def test_an_edit_that_changes_nothing_is_not_audited(reviewer):
    rule = add(reviewer, "Bash(npm test*)")
    entries = AuditEntry.objects.count()

    team_rule_update(rule_id=rule.pk, user=reviewer, rule="Bash(npm test*)")

    assert AuditEntry.objects.count() == entries


def test_editing_a_rule_that_is_gone_says_so(reviewer):
    assert team_rule_update(rule_id=12345, user=reviewer, behavior="deny") is None


def test_an_expired_rule_can_still_be_edited_or_given_a_new_expiry(reviewer):
    rule = add(reviewer, "Bash(make lint)", expires_at=timezone.now() + timedelta(hours=1))
    TeamRule.objects.filter(pk=rule.pk).update(expires_at=timezone.now() - timedelta(hours=1))

    changed = team_rule_update(rule_id=rule.pk, user=reviewer, message="Use make check.")
    assert changed is not None and changed.is_expired()

    with pytest.raises(ValueError, match="future"):
        team_rule_update(rule_id=rule.pk, user=reviewer, expires_at=timezone.now())
    renewed = team_rule_update(rule_id=rule.pk, user=reviewer, expires_at=None)
    assert renewed is not None and not renewed.is_expired()
