"""The team rules page: each rule with what it did and saved, the suggested rules, the form with
its backtest (live, and as a plain submit), and who may change what; the inbox's suggestions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard.models import AuditEntry, Client, Team
from dashboard.policy.models import DismissedSuggestion
from planmode.models import RuleMode, TeamRule
from planmode.permissions import team_rule_activate, team_rule_add
from tests.conftest import parse_html
from tests.policy.conftest import shell

pytestmark = pytest.mark.django_db

RULES = "/inbox/rules/"


@pytest.fixture
def lead(client, reviewer):
    client.force_login(reviewer)
    return client


def text_of(response) -> str:
    return " ".join(parse_html(response.content).find("main").text().split())


def rows(response) -> list:
    return parse_html(response.content).find_all("li", cls="rule-row")


def add(user: User, rule: str = "Bash(npm test*)", behavior: str = "allow", **fields) -> TeamRule:
    fields.setdefault("project", "shop")
    return team_rule_add(rule=rule, behavior=behavior, user=user, **fields)


# --- writing, editing, removing ------------------------------------------------------------------


def test_a_reviewer_adds_edits_and_removes_a_team_rule(lead):
    response = lead.post(
        RULES, {"behavior": "allow", "rule": "Bash(git status*)", "project": "shop"}
    )
    assert response.status_code == 302
    rule = TeamRule.objects.get()
    assert (rule.rule, rule.behavior, rule.project, rule.mode, rule.created_by.username) == (
        "Bash(git status*)", "allow", "shop", "active", "lead",
    )  # fmt: skip

    form = parse_html(lead.get(f"{RULES}{rule.pk}/edit/").content).find("form", id="rule-form")
    assert form.find("input", name="rule").attrs["value"] == "Bash(git status*)"
    edited = lead.post(
        f"{RULES}{rule.pk}/edit/",
        {"behavior": "deny", "rule": "Bash(git status*)", "project": "shop",
         "message": "Ask first.", "expires": "2099-01-31", "shadow": "on"},
    )  # fmt: skip
    assert edited.status_code == 302
    rule.refresh_from_db()
    assert (rule.behavior, rule.message, rule.mode) == ("deny", "Ask first.", "shadow")
    assert timezone.localtime(rule.expires_at).date().isoformat() == "2099-02-01"
    assert AuditEntry.objects.filter(action="rule.changed", surface="team rules page").exists()

    assert lead.post(f"{RULES}{rule.pk}/delete/").status_code == 302
    assert not TeamRule.objects.exists()


def test_an_edit_that_leaves_an_expired_rules_day_alone_keeps_it(lead, reviewer):
    rule = add(reviewer, expires_at=timezone.now() + timedelta(days=1))
    TeamRule.objects.filter(pk=rule.pk).update(expires_at=timezone.now() - timedelta(days=1))
    page = parse_html(lead.get(f"{RULES}{rule.pk}/edit/").content)
    day = page.find("input", name="expires").attrs["value"]

    edited = lead.post(
        f"{RULES}{rule.pk}/edit/",
        {"behavior": "allow", "rule": rule.rule, "project": "shop", "message": "Now with words.",
         "expires": day, "expires_before": day},
    )  # fmt: skip

    assert edited.status_code == 302
    assert TeamRule.objects.get().message == "Now with words."


def test_a_shadow_rule_is_made_active_from_its_row(lead, reviewer):
    rule = add(reviewer, mode=RuleMode.SHADOW)
    row = rows(lead.get(RULES))[0]
    assert "shadow: decides nothing" in row.text()

    assert lead.post(f"{RULES}{rule.pk}/activate/").status_code == 302

    rule.refresh_from_db()
    assert rule.mode == "active"
    assert "● active" in rows(lead.get(RULES))[0].text()
    assert "Make active" not in rows(lead.get(RULES))[0].text()


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"rule": "Bash(git"}, "tool name with an optional pattern in brackets"),
        ({"rule": "<script>alert(1)</script>"}, "The rule has HTML in it"),
        ({"rule": "Bash(echo <img src=x onerror=alert(1)>)"}, "The rule has HTML in it"),
        ({"message": "<b>stop</b>"}, "The message has HTML in it"),
        ({"rule": "Bash(" + "x" * 600 + ")"}, "A rule has at most 500 characters"),
        ({"message": "m" * 6000}, "keep it under 5000"),
        ({"rule": "Bash(ls\x00)"}, "cannot be stored"),
        ({"expires": "31/01/2099"}, "Write the expiry as a day"),
        ({"expires": "2001-01-01"}, "Choose an expiry in the future"),
        ({"behavior": "maybe"}, "Choose allow or deny"),
    ],
)
def test_hostile_or_broken_input_is_refused_with_one_sentence_and_changes_nothing(
    lead, fields, said
):
    posted = {"behavior": "allow", "rule": "Bash(ls *)", "project": "shop", **fields}

    response = lead.post(RULES, posted)

    assert response.status_code == 422
    error = parse_html(response.content).find("p", cls="rules-error").text()
    assert said in error and error.count(".") <= 2
    assert "<script>" not in response.content.decode()
    assert not TeamRule.objects.exists() and not AuditEntry.objects.exists()


def test_a_rule_that_names_a_dangerous_shape_asks_for_confirmation_and_says_which(lead):
    posted = {"behavior": "allow", "rule": "Bash(sudo apt-get update)", "project": ""}

    panel = lead.post(f"{RULES}backtest/", posted)
    refused = lead.post(RULES, posted)

    confirm = parse_html(panel.content).find("label", cls="dangerous-confirm")
    assert "dangerous shape (sudo)" in confirm.text()
    assert refused.status_code == 422
    assert "allows a dangerous shape (sudo): confirm" in text_of(refused)
    assert not TeamRule.objects.exists()
    assert lead.post(RULES, {**posted, "allows_dangerous": "on"}).status_code == 302
    assert TeamRule.objects.get().allows_dangerous
    # A rule that names no dangerous shape has nothing to confirm.
    plain = lead.post(f"{RULES}backtest/", {"behavior": "allow", "rule": "Bash(ls *)"})
    assert "dangerous-confirm" not in plain.content.decode()


def test_only_reviewers_change_team_rules(client, user, reviewer):
    rule = add(reviewer, mode=RuleMode.SHADOW)
    client.force_login(user)

    answers = [
        client.post(RULES, {"behavior": "allow", "rule": "Bash"}),
        client.post(f"{RULES}{rule.pk}/edit/", {"behavior": "deny", "rule": "Bash"}),
        client.post(f"{RULES}{rule.pk}/activate/"),
        client.post(f"{RULES}{rule.pk}/delete/"),
        client.post(f"{RULES}suggestions/accept/", {"behavior": "allow", "rule": "Read(*)"}),
        client.post(f"{RULES}suggestions/dismiss/", {"key": "0" * 64, "evidence": "0" * 64}),
    ]

    assert [answer.status_code for answer in answers] == [403] * 6
    assert "Only reviewers can change team rules" in text_of(answers[0])
    assert list(TeamRule.objects.values_list("rule", "mode")) == [("Bash(npm test*)", "shadow")]
    assert not DismissedSuggestion.objects.exists()
    # They still read the rules, without the controls.
    page = client.get(RULES)
    assert "Bash(npm test*)" in text_of(page) and "Make active" not in text_of(page)
    assert parse_html(page.content).find_all("form", id="rule-form") == []


def test_an_unknown_rule_is_not_found(lead):
    assert lead.post(f"{RULES}999/delete/").status_code == 404
    assert lead.post(f"{RULES}999/activate/").status_code == 404
    assert lead.get(f"{RULES}999/edit/").status_code == 404


# --- what each rule did -----------------------------------------------------------------------


def test_each_rule_shows_its_hits_agreement_waiting_saved_and_who_made_and_changed_it(
    lead, history, reviewer
):
    sam = User.objects.create_superuser("sam", password="a-long-password-6")
    # The month before it existed: three allowed, one denied.
    history.many(3, "Bash", shell("npm test"), waited=120.0)
    history.decided("Bash", shell("npm test -- -u"), allow=False)
    rule = add(reviewer, mode=RuleMode.SHADOW, message="Tests are fine.")
    # In shadow: it records what it would have answered; a person answers.
    history.decided("Bash", shell("npm test"), days_ago=0)
    history.decided("Bash", shell("npm test -- --ci"), allow=False, days_ago=0)
    team_rule_activate(rule_id=rule.pk, user=sam)
    hit = history.ask("Bash", shell("npm test"))  # answered by the rule at once
    assert hit.status == "allowed" and hit.rule_id == rule.pk

    row = rows(lead.get(RULES))[0]
    said = " ".join(row.text().split())

    assert "✓ allow Bash(npm test*) shop ● active" in said
    assert "Tells the agent: “Tests are fine.”" in said
    assert "Hits 1 · last" in said
    assert "Shadow verdicts agrees with people on 1 of 2 · 1 not" in said
    assert "Before it existed agrees with 3 of 4 decisions of the month before · 1 not" in said
    assert "Waiting saved 2 min" in said
    assert "Made by lead" in said and "changed by sam" in said


def test_an_expired_rule_says_it_decides_nothing(lead, reviewer):
    rule = add(reviewer, expires_at=timezone.now() + timedelta(days=1))
    TeamRule.objects.filter(pk=rule.pk).update(expires_at=timezone.now() - timedelta(hours=1))

    row = rows(lead.get(RULES))[0]

    assert "◷ expired: decides nothing" in row.text()
    assert "state-expired" in row.classes


def test_the_figures_count_only_the_requests_the_viewer_may_see(client, history, reviewer, user):
    other = User.objects.create_user("raj", password="a-long-password-7")
    add(reviewer)
    history.ask("Bash", shell("npm test"), team=Team.objects.create(name="Shop"))

    client.force_login(other)
    seen_by_raj = " ".join(rows(client.get(RULES))[0].text().split())
    client.force_login(user)
    seen_by_dana = " ".join(rows(client.get(RULES))[0].text().split())

    assert "Hits 0" in seen_by_raj
    assert "Hits 1" in seen_by_dana


def test_the_page_asks_the_same_number_of_queries_however_many_rules(lead, history, reviewer):
    history.many(3, "Bash", shell("make lint"))
    add(reviewer, rule="Read(*)", mode=RuleMode.SHADOW)
    lead.get(RULES)  # caches warm: the viewer's audience, the rulebook
    with CaptureQueriesContext(connection) as one:
        assert lead.get(RULES).status_code == 200
    for n in range(30):
        add(reviewer, rule=f"Bash(tool{n} *)", behavior="deny" if n % 2 else "allow")
    lead.get(RULES)
    with CaptureQueriesContext(connection) as many:
        response = lead.get(RULES)

    assert len(rows(response)) == 31
    assert len(many) == len(one)


# --- suggestions --------------------------------------------------------------------------------


def test_a_suggested_rule_shows_its_evidence_and_what_it_would_have_answered(lead, history):
    history.many(3, "Bash", [shell("npm test"), shell("npm test -- --watch=false")], waited=60.0)

    page = parse_html(lead.get(RULES).content)
    [suggestion] = page.find_all("li", cls="suggestion")
    said = " ".join(suggestion.text().split())

    assert "✓ allow Bash(npm test*) shop" in said
    assert "People allowed 3 such requests, never otherwise" in said
    assert "would have answered all 3 the same, and saved 3 min of waiting" in said
    assert "npm test -- --watch=false lead" in said
    edit = suggestion.find("a", cls="button").attrs["href"]
    assert edit.startswith("/inbox/rules/?rule=Bash%28npm%20test%2A%29&behavior=allow&project=shop")
    prefilled = parse_html(lead.get(edit).content).find("form", id="rule-form")
    assert prefilled.find("input", name="rule").attrs["value"] == "Bash(npm test*)"
    assert prefilled.find("input", name="project").attrs["value"] == "shop"


@pytest.mark.parametrize(
    ("kind", "tool"),
    [(Client.CLAUDE_CODE, "Bash"), (Client.CODEX, "Bash"), (Client.GEMINI, "run_shell_command"),
     (Client.OPENCODE, "Bash")],
)  # fmt: skip
def test_every_agent_kinds_requests_are_suggested_and_backtested(lead, history, kind, tool):
    history.many(3, tool, shell("make lint"), kind=kind)

    page = parse_html(lead.get(RULES).content)
    panel = lead.post(f"{RULES}backtest/", {"rule": f"{tool}(make lint)", "behavior": "allow"})

    assert [li.find("code").text() for li in page.find_all("li", cls="suggestion")] == [
        f"{tool}(make lint)"
    ]
    assert "it matches 3 that people decided and agrees with 3" in " ".join(
        parse_html(panel.content).text().split()
    )


def test_a_suggestion_accepted_in_shadow_becomes_a_shadow_rule_and_is_no_longer_suggested(
    lead, history
):
    history.many(3, "Bash", shell("npm test"))
    fields = {"rule": "Bash(npm test)", "behavior": "allow", "project": "shop", "shadow": "on"}

    response = lead.post(f"{RULES}suggestions/accept/", fields)

    assert response.status_code == 302 and response["Location"] == RULES
    assert list(TeamRule.objects.values_list("rule", "mode", "project")) == [
        ("Bash(npm test)", "shadow", "shop")
    ]
    assert parse_html(lead.get(RULES).content).find_all("li", cls="suggestion") == []


def test_a_dismissed_suggestion_does_not_come_back_for_the_same_evidence(lead, history):
    history.many(3, "Bash", shell("npm test"))
    page = parse_html(lead.get(RULES).content)
    form = page.find("li", cls="suggestion").find_all("form")[1]
    key = form.find("input", name="key").attrs["value"]
    evidence = form.find("input", name="evidence").attrs["value"]

    assert (
        lead.post(f"{RULES}suggestions/dismiss/", {"key": key, "evidence": evidence}).status_code
        == 302
    )

    assert parse_html(lead.get(RULES).content).find_all("li", cls="suggestion") == []
    refused = lead.post(f"{RULES}suggestions/dismiss/", {"key": "<b>", "evidence": "x"})
    assert refused.status_code == 400
    assert "not a suggestion this page showed" in text_of(refused)


def test_the_inbox_shows_the_suggestions_to_reviewers_only(client, lead, history, user):
    history.many(3, "Bash", shell("npm test"))

    inbox = lead.get("/inbox/").content.decode()
    fragment = parse_html(lead.get(f"{RULES}suggestions/inbox/").content)
    accept = fragment.find("form").find("input", name="from").attrs["value"]
    answered = lead.post(
        f"{RULES}suggestions/accept/",
        {"from": "inbox", "rule": "Bash(npm test)", "behavior": "allow", "project": "shop",
         "shadow": "on"},
    )  # fmt: skip

    assert 'hx-get="/inbox/rules/suggestions/inbox/"' in inbox
    assert "Bash(npm test)" in fragment.text() and accept == "inbox"
    assert answered["Location"] == "/inbox/"
    client.force_login(user)
    assert client.get(f"{RULES}suggestions/inbox/").content == b""
    assert "suggestions/inbox" not in client.get("/inbox/").content.decode()


# --- the backtest -----------------------------------------------------------------------------


def test_the_backtest_panel_shows_matches_agreement_each_disagreement_and_the_warning(
    lead, history
):
    sam = User.objects.create_superuser("sam", password="a-long-password-6")
    history.many(3, "Bash", shell("npm test"), waited=30.0)
    history.decided("Bash", shell("npm test -- -u"), allow=False, by=sam)

    panel = lead.post(
        f"{RULES}backtest/", {"rule": "Bash(npm test*)", "behavior": "allow", "days": "90"}
    )
    said = " ".join(parse_html(panel.content).text().split())

    assert "On the last 90 days" in said
    assert "it matches 4 that people decided and agrees with 3" in said
    assert "it disagrees with 1" in said
    assert "⚠ It would have allowed 1 request that a person denied." in said
    assert "npm test -- -u sam denied it" in said and "the rule would have allowed it" in said
    assert "They waited 2 min 30 s for a person in all, 30 s as a median." in said
    assert 'role="alert"' in panel.content.decode()


def test_without_javascript_the_backtest_renders_the_page_and_saves_nothing(lead, history):
    history.many(3, "Bash", shell("npm test"))

    response = lead.post(
        RULES,
        {"rule": "Bash(npm test*)", "behavior": "allow", "project": "shop", "days": "all",
         "message": "", "backtest": "1"},
    )  # fmt: skip

    assert response.status_code == 200
    assert "On all of the requests you may see, it matches 3" in text_of(response)
    form = parse_html(response.content).find("form", id="rule-form")
    assert form.find("input", name="rule").attrs["value"] == "Bash(npm test*)"
    assert not TeamRule.objects.exists()


def test_a_broken_rule_gets_one_sentence_in_the_backtest_panel(lead):
    panel = lead.post(f"{RULES}backtest/", {"rule": "Bash(git", "behavior": "allow"})

    assert panel.status_code == 200
    assert "Write the rule as a tool name" in parse_html(panel.content).find("p").text()
