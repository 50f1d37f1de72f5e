"""Team rules as one TOML file: `manage.py rules export` and `rules import FILE [--check]`, and
the same through the API for reviewers' tokens; every mistake named with its line, nothing
changed when any is wrong."""

from __future__ import annotations

import io
import json
import tomllib
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from dashboard.models import AgentToken, AuditEntry
from planmode.models import RuleMode, TeamRule
from planmode.permissions import team_rule_add
from tests.conftest import AgentApi
from tests.policy.conftest import shell

pytestmark = pytest.mark.django_db

FILE = """\
# The team's rules.
[[rule]]
rule = "Bash(npm test *)"
effect = "allow"
project = "shop"
mode = "shadow"
author = "lead"

[[rule]]
rule = "Bash(git push --force*)"
effect = "deny"
message = "Open a pull request instead."
expires = 2099-01-31T00:00:00Z
"""


def export() -> str:
    out = io.StringIO()
    call_command("rules", "export", stdout=out)
    return out.getvalue()


def import_file(tmp_path, text: str | bytes, *options: str) -> str:
    path = tmp_path / "rules.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("rules", "import", str(path), *options, stdout=out, stderr=err)
    except CommandError as error:
        return f"{err.getvalue()}{error}"
    return out.getvalue()


def rules_now() -> list[tuple[str, str, str, str]]:
    return sorted(TeamRule.objects.values_list("rule", "behavior", "project", "mode"))


@pytest.fixture
def lead_api(client, reviewer) -> AgentApi:
    return AgentApi(client, AgentToken.issue(owner=reviewer, label="ci")[1])


# --- the command ----------------------------------------------------------------------------------


def test_every_rule_is_exported_as_one_toml_file_with_all_it_says(reviewer):
    expiry = timezone.now() + timedelta(days=10)
    team_rule_add(
        rule="Bash(sudo apt-get update)", behavior="allow", project="", user=reviewer,
        mode=RuleMode.SHADOW, message="", expires_at=expiry, allows_dangerous=True,
    )  # fmt: skip
    team_rule_add(
        rule="Read(*)", behavior="deny", project="shop", user=reviewer, message="Not secrets."
    )

    read = tomllib.loads(export())["rule"]

    assert read[0] == {
        "rule": "Bash(sudo apt-get update)", "effect": "allow", "project": "", "message": "",
        "expires": expiry.replace(microsecond=0), "mode": "shadow", "author": "lead",
        "allows_dangerous": True,
    }  # fmt: skip
    assert (read[1]["rule"], read[1]["effect"], read[1]["message"]) == (
        "Read(*)", "deny", "Not secrets.",
    )  # fmt: skip
    assert "expires" not in read[1]


def test_an_exported_file_imported_again_changes_nothing_and_keeps_each_rules_history(
    tmp_path, reviewer
):
    rule = team_rule_add(rule="Bash(ls *)", behavior="allow", project="shop", user=reviewer)
    before = AuditEntry.objects.count()

    said = import_file(tmp_path, export())

    assert "0 added, 0 changed, 0 removed, 1 kept as they were" in said
    assert TeamRule.objects.get().pk == rule.pk
    assert AuditEntry.objects.count() == before


def test_an_import_replaces_the_rule_set_and_says_what_it_did(tmp_path, reviewer):
    kept = team_rule_add(rule="Bash(npm test *)", behavior="allow", project="shop", user=reviewer)
    team_rule_add(rule="Edit(src/**)", behavior="allow", project="", user=reviewer)

    said = import_file(tmp_path, FILE)

    assert "1 added, 1 changed, 1 removed, 0 kept" in said
    assert rules_now() == [
        ("Bash(git push --force*)", "deny", "", "active"),
        ("Bash(npm test *)", "allow", "shop", "shadow"),
    ]
    # The equal rule is the same rule, now in shadow: its hits and verdicts stay with it.
    assert TeamRule.objects.get(rule="Bash(npm test *)").pk == kept.pk
    denying = TeamRule.objects.get(behavior="deny")
    assert denying.message == "Open a pull request instead."
    assert denying.expires_at.year == 2099
    actions = list(AuditEntry.objects.order_by("pk").values_list("action", "surface"))[-3:]
    assert sorted(actions) == [
        ("rule.added", "command line"), ("rule.changed", "command line"),
        ("rule.removed", "command line"),
    ]  # fmt: skip


def test_check_reads_the_file_and_changes_nothing(tmp_path, reviewer):
    team_rule_add(rule="Edit(src/**)", behavior="allow", project="", user=reviewer)
    before = (rules_now(), AuditEntry.objects.count())

    said = import_file(tmp_path, FILE, "--check")

    assert "The file is valid" in said and "2 added, 0 changed, 1 removed" in said
    assert "Nothing was changed." in said
    assert (rules_now(), AuditEntry.objects.count()) == before


MISTAKES = [
    ("[[rule]\nrule = 'Read(*)'\n", "The file is not valid TOML", "at line 1"),
    ('[[rule]]\nrule = "Read(*)"\neffect = "deny"\n\n[[rule]]\nrule = "Read(*)"\neffect = 3\n',
     "line 7: effect must be allow or deny", ""),
    ('[[rule]]\nrule = "Read(*)"\neffect = "deny"\ncolour = "red"\n',
     "line 4: there is no key 'colour' in a rule", ""),
    ('[[rule]]\nrule = "Bash(sudo apt-get update)"\neffect = "allow"\n',
     "line 1: This rule allows a dangerous shape (sudo)", "allows_dangerous = true"),
    ('[[rule]]\nrule = "Read(*)"\neffect = "deny"\n\n[[rule]]\nrule = "Read(*)"\neffect = "deny"\n',
     "line 5: the same rule as on line 1", ""),
    ('[[rule]]\nrule = "Bash(git"\neffect = "deny"\n', "line 1: Write the rule as a tool name", ""),
    ('[[rule]]\nrule = "Read(*)"\neffect = "deny"\nexpires = 2001-01-01T00:00:00Z\n',
     "line 1: Choose an expiry in the future", ""),
    ('[[rule]]\nrule = "Read(*)"\neffect = "deny"\nexpires = "soon"\n',
     "line 4: expires: write the expiry as 2027-01-31", ""),
    ('[[rule]]\nrule = "' + "x" * 600 + '"\neffect = "deny"\n', "line 2: rule is too long", ""),
    ('[rule]\nrule = "Read(*)"\n', "not [rule]", ""),
    ('[[rule]]\nrule = "Read(*)"\neffect = "deny"\nmessage = "<script>alert(1)</script>"\n',
     "line 1: The message has HTML in it", ""),
    (b'[[rule]]\nrule = "Read(\xed\xa0\x80)"\neffect = "deny"\n', "line 2: this is not UTF-8", ""),
    ('[[rule]]\nrule = "Read(\\ud800)"\neffect = "deny"\n', "The file is not valid TOML", ""),
]  # fmt: skip


@pytest.mark.parametrize(("text", "said", "also"), MISTAKES)
def test_a_file_with_a_mistake_is_refused_naming_its_line_and_nothing_changes(
    tmp_path, reviewer, text, said, also
):
    rule = team_rule_add(rule="Edit(src/**)", behavior="allow", project="", user=reviewer)
    before = (rules_now(), AuditEntry.objects.count())

    refused = import_file(tmp_path, text)

    assert said in refused and also in refused
    assert "nothing was changed" in refused
    assert (rules_now(), AuditEntry.objects.count()) == before
    assert TeamRule.objects.get().pk == rule.pk


def test_every_mistake_of_a_file_is_named_at_once(tmp_path, reviewer):
    text = '[[rule]]\nrule = "Read(*)"\neffect = "maybe"\n\n[[rule]]\nrule = 1\neffect = "deny"\n'

    refused = import_file(tmp_path, text)

    assert "line 3: effect must be allow or deny" in refused
    assert "line 6: rule must be text in quotes" in refused
    assert "has 2 mistake(s)" in refused


def test_a_dangerous_allow_the_file_confirms_is_imported(tmp_path, reviewer):
    text = (
        '[[rule]]\nrule = "Bash(sudo apt-get update)"\neffect = "allow"\nallows_dangerous = true\n'
    )

    import_file(tmp_path, text)

    assert TeamRule.objects.get().allows_dangerous


def test_a_rule_whose_author_has_an_account_keeps_its_author(tmp_path, reviewer, user):
    import_file(tmp_path, '[[rule]]\nrule = "Read(*)"\neffect = "deny"\nauthor = "dana"\n')

    assert TeamRule.objects.get().created_by == user


# --- the API ----------------------------------------------------------------------------------


def test_a_reviewers_token_reads_the_rules_as_toml_or_json(lead_api, reviewer):
    team_rule_add(rule="Bash(npm test *)", behavior="allow", project="shop", user=reviewer)

    toml = lead_api.get("/api/v1/rules")
    as_json = lead_api.get("/api/v1/rules?format=json")

    assert toml.status_code == 200 and toml["Content-Type"].startswith("application/toml")
    assert tomllib.loads(toml.content.decode())["rule"][0]["rule"] == "Bash(npm test *)"
    assert as_json.json()["rules"][0] == {
        "rule": "Bash(npm test *)", "effect": "allow", "project": "shop", "message": "",
        "expires": None, "mode": "active", "author": "lead", "allows_dangerous": False,
    }  # fmt: skip


def post_toml(api: AgentApi, path: str, text: str | bytes):
    return api.client.post(path, data=text, content_type="application/toml", headers=api.headers())


def test_a_reviewers_token_imports_a_file_or_only_checks_it(lead_api, reviewer):
    checked = post_toml(lead_api, "/api/v1/rules/import?check=1", FILE)
    assert checked.status_code == 200
    assert checked.json()["checked_only"] and not TeamRule.objects.exists()

    imported = post_toml(lead_api, "/api/v1/rules/import", FILE)

    assert imported.status_code == 200
    assert (imported.json()["added"], imported.json()["checked_only"]) == (2, False)
    assert len(rules_now()) == 2
    assert AuditEntry.objects.filter(action="rule.added", surface="API").count() == 2


def test_a_file_with_mistakes_is_refused_through_the_api_with_each_line(lead_api, reviewer):
    team_rule_add(rule="Edit(src/**)", behavior="allow", project="", user=reviewer)
    text = '[[rule]]\nrule = "Read(*)"\neffect = "maybe"\n\n[[rule]]\nrule = 1\neffect = "deny"\n'

    refused = post_toml(lead_api, "/api/v1/rules/import", text)

    assert refused.status_code == 422
    error = refused.json()["error"]
    assert error["message"].startswith("line 3: effect must be allow or deny (1 more")
    assert error["message"].endswith("nothing was changed.")
    assert [item["msg"] for item in error["detail"]][1] == "line 6: rule must be text in quotes"
    assert rules_now() == [("Edit(src/**)", "allow", "", "active")]


def test_an_oversized_file_is_refused_with_413(lead_api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    refused = post_toml(lead_api, "/api/v1/rules/import", "# " + "x" * 2000)

    assert refused.status_code == 413
    assert not TeamRule.objects.exists()


def test_only_reviewers_tokens_read_import_or_backtest_rules(agent_api, reviewer):
    team_rule_add(rule="Read(*)", behavior="deny", project="", user=reviewer)

    answers = [
        agent_api.get("/api/v1/rules"),
        post_toml(agent_api, "/api/v1/rules/import", FILE),
        agent_api.post("/api/v1/rules/backtest", {"rule": "Read(*)", "effect": "deny"}),
    ]

    assert [answer.status_code for answer in answers] == [403, 403, 403]
    assert answers[1].json()["error"]["message"].startswith("Only reviewers can change")
    assert rules_now() == [("Read(*)", "deny", "", "active")]


def test_a_backtest_through_the_api_says_what_the_rule_would_have_done(lead_api, history):
    history.many(3, "Bash", shell("npm test"), waited=20.0)
    history.decided("Bash", shell("npm test -- -u"), allow=False)

    found = lead_api.post(
        "/api/v1/rules/backtest", {"rule": "Bash(npm test*)", "effect": "allow", "days": 30}
    )

    assert found.status_code == 200
    body = found.json()
    assert (body["matched"], body["agreed"], body["disagreed"], body["allowed_denied"]) == (
        4, 3, 1, 1,
    )  # fmt: skip
    assert body["disagreements"][0]["request"] == "npm test -- -u"
    assert body["disagreements"][0]["decided"] == "deny"


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        ({"rule": "Bash(git", "effect": "allow"}, 422, "tool name with an optional pattern"),
        ({"rule": "Read(*)", "effect": "maybe"}, 422, "effect"),
        ({"rule": "Read(*)", "effect": "deny", "days": 7}, 422, "days"),
        ({"rule": "Read(*)", "effect": "deny", "colour": 1}, 422, "colour"),
        ('{"rule": "Read(\\ud800)", "effect": "deny"}', 422, "surrogate"),
        ("{not json", 400, "not valid JSON"),
    ],
)
def test_a_bad_backtest_request_gets_one_sentence(lead_api, body, status, said):
    refused = lead_api.post("/api/v1/rules/backtest", body)

    assert refused.status_code == status
    assert said in json.dumps(refused.json()["error"])
