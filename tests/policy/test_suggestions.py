"""Suggested rules: the same answer given to equivalent requests, for every agent kind,
written as narrow as the evidence, never for what a rule covers or for a dangerous shape, and
kept away once dismissed until new evidence arrives."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from dashboard.models import Client, Team
from dashboard.policy.evidence import rule_text, stem_of
from dashboard.policy.suggestions import rule_suggestions, suggestion_dismiss
from planmode import rules
from planmode.models import PermissionRequest, RuleMode
from planmode.permissions import team_rule_add
from tests.policy.conftest import CWD, edit, shell

pytestmark = pytest.mark.django_db


def suggested(viewer) -> dict[str, tuple[str, str, int]]:
    return {s.rule: (s.behavior, s.project, s.count) for s in rule_suggestions(viewer=viewer)}


# --- what is the same request ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("commands", "rule"),
    [
        (["npm test -- --grep x", "npm test", "npm test -- --watch"], "Bash(npm test*)"),
        (["pytest tests/api/test_a.py -x", "pytest tests/ui", "pytest tests/b.py"],
         "Bash(pytest tests/*)"),
        (["make lint", "make lint", "make lint"], "Bash(make lint)"),
        (["rm -rf build/orders", "rm -rf build/cart", "rm -rf build/x"], "Bash(rm -rf build/*)"),
        (["ls ../a/b", "ls ../c/d", "ls ../e/f"], "Bash(ls *)"),
    ],
)  # fmt: skip
def test_commands_are_the_same_up_to_their_variable_arguments(commands, rule):
    stems = {stem_of("Bash", shell(command), CWD) for command in commands}
    assert len(stems) == 1
    text = rule_text("Bash", stems.pop(), [(shell(command), CWD) for command in commands])
    assert text == rule
    for command in commands:
        assert rules.rule_matches(
            rules.parse_rule(text), tool_name="Bash", tool_input=shell(command), cwd=CWD,
            allowing=True,
        )  # fmt: skip


@pytest.mark.parametrize(
    "command", ["npm test && rm -rf ~", "FOO=1 npm test", "echo $HOME", "'quoted' x", "  "]
)
def test_a_command_that_does_more_than_one_thing_has_no_stem(command):
    assert stem_of("Bash", shell(command), CWD) is None


def test_paths_outside_the_project_have_no_stem():
    assert stem_of("Read", {"file_path": "/etc/passwd"}, CWD) is None
    assert stem_of("Edit", {"file_path": f"{CWD}/../other/a.py"}, CWD) is None


# --- suggested from the decisions of every agent kind -------------------------------------------


def test_three_allowed_test_runs_suggest_a_rule_for_that_project(history, reviewer):
    history.many(3, "Bash", [shell("npm test"), shell("npm test -- --grep cart")])

    [suggestion] = rule_suggestions(viewer=reviewer)

    assert (suggestion.rule, suggestion.behavior, suggestion.project) == (
        "Bash(npm test*)", "allow", "shop",
    )  # fmt: skip
    assert suggestion.count == 3
    assert suggestion.waited == pytest.approx(180.0)
    assert suggestion.evidence[0].decided_at > suggestion.evidence[-1].decided_at


def test_two_decisions_are_not_enough_and_the_setting_says_how_many(history, reviewer, settings):
    history.many(2, "Bash", shell("terraform plan"))
    assert suggested(reviewer) == {}

    settings.AGENTBOARD_SUGGEST_AFTER = 2
    assert suggested(reviewer) == {"Bash(terraform plan)": ("allow", "shop", 2)}


def test_each_agent_kind_gets_suggestions_with_its_own_tool_names(history, reviewer):
    gemini, opencode = Client.GEMINI, Client.OPENCODE
    history.many(3, "Bash", shell("npm install left-pad"), kind=Client.CODEX, project="api")
    history.many(3, "run_shell_command", shell("npm test"), kind=gemini, project="web")
    history.many(3, "replace", edit("src/ui/a.ts", project="web"), kind=gemini, project="web")
    edits = [edit("src/orders/a.py", opencode), edit("src/cart/b.py", opencode)]
    history.many(3, "Edit", edits, kind=opencode, project="shop")
    history.many(3, "mcp__github__create_issue", {"owner": "dev", "title": "x"}, project="docs")
    fetch = {"url": "https://docs.djangoproject.com/en/5.2/", "prompt": "p"}
    history.many(3, "WebFetch", fetch, project="docs")

    assert suggested(reviewer) == {
        "Bash(npm install left-pad)": ("allow", "api", 3),
        "run_shell_command(npm test)": ("allow", "web", 3),
        "replace(src/ui/**)": ("allow", "web", 3),
        "Edit(src/**)": ("allow", "shop", 3),
        "mcp__github__create_issue": ("allow", "docs", 3),
        "WebFetch(domain:docs.djangoproject.com)": ("allow", "docs", 3),
    }


def test_denials_suggest_a_deny_rule(history, reviewer):
    history.many(3, "Bash", shell("terraform apply -auto-approve"), allow=False)

    assert suggested(reviewer) == {"Bash(terraform apply -auto-approve)": ("deny", "shop", 3)}


def test_a_group_with_both_answers_suggests_nothing(history, reviewer):
    history.many(3, "Bash", shell("npm test"))
    history.decided("Bash", shell("npm test -- --ci"), allow=False)

    assert suggested(reviewer) == {}


def test_each_project_gets_its_own_rule(history, reviewer):
    history.many(3, "Bash", shell("make lint"), project="shop")
    history.many(3, "Bash", shell("make lint"), project="billing")

    assert {s.project for s in rule_suggestions(viewer=reviewer)} == {"shop", "billing"}


def test_decisions_older_than_two_weeks_do_not_count(history, reviewer):
    history.many(2, "Bash", shell("make lint"))
    old = history.decided("Bash", shell("make lint"))
    PermissionRequest.objects.filter(pk=old.pk).update(
        decided_at=timezone.now() - timedelta(days=15)
    )

    assert suggested(reviewer) == {}


def test_decisions_by_rules_are_not_evidence(history, reviewer):
    team_rule_add(rule="Bash(make lint)", behavior="allow", project="", user=reviewer)
    for _ in range(3):
        history.ask("Bash", shell("make lint"))

    assert suggested(reviewer) == {}


# --- what is never suggested --------------------------------------------------------------------


def test_nothing_is_suggested_that_a_rule_already_covers(history, reviewer):
    history.many(3, "Bash", shell("npm test"))
    team_rule_add(
        rule="Bash(npm *)", behavior="allow", project="shop", user=reviewer, mode=RuleMode.SHADOW
    )

    assert suggested(reviewer) == {}


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Bash", shell("sudo apt-get update")),
        ("Bash", shell("git push --force origin main")),
        ("Write", {"file_path": f"{CWD}/.env", "content": "KEY=1"}),
        ("write_file", {"file_path": f"{CWD}/certs/site.pem", "content": "x"}),
    ],
)
def test_allowing_a_dangerous_shape_is_never_suggested(history, reviewer, tool, tool_input):
    history.many(4, tool, tool_input)

    assert suggested(reviewer) == {}


def test_a_suggested_rule_is_never_every_command(history, reviewer):
    history.many(3, "Bash", [shell("ls"), shell("ls -la"), shell("ls src")])

    assert "Bash(*)" not in suggested(reviewer)
    assert all(s.rule != "Bash" for s in rule_suggestions(viewer=reviewer))


def test_markup_in_the_evidence_is_text_in_the_rule(history, reviewer):
    history.many(3, "mcp__x__<script>", {"q": "<script>alert(1)</script>"})

    assert suggested(reviewer) == {}  # not a tool name a rule can spell


# --- who sees what --------------------------------------------------------------------------------


def test_only_the_decisions_the_viewer_may_see_count(history, reviewer):
    infra = Team.objects.create(name="Infra")
    history.many(3, "Bash", shell("terraform plan"), project="infra", team=infra)
    outsider = User.objects.create_user("olu", password="a-long-password-9")

    assert suggested(reviewer) == {"Bash(terraform plan)": ("allow", "infra", 3)}
    assert suggested(outsider) == {}


# --- dismissed ------------------------------------------------------------------------------------


def test_a_dismissed_suggestion_stays_away_until_new_evidence(history, reviewer):
    history.many(3, "Bash", shell("make lint"))
    [suggestion] = rule_suggestions(viewer=reviewer)

    suggestion_dismiss(
        key=suggestion.key, evidence_digest=suggestion.evidence_digest, user=reviewer
    )
    assert rule_suggestions(viewer=reviewer) == []

    for _ in range(2):
        history.decided("Bash", shell("make lint"), days_ago=0)
    assert rule_suggestions(viewer=reviewer) == []

    history.decided("Bash", shell("make lint"), days_ago=0)
    [back] = rule_suggestions(viewer=reviewer)
    assert back.key == suggestion.key and back.count == 6


@pytest.mark.parametrize("key", ["", "x" * 64, "\ud800" * 64, "a" * 65])
def test_dismissing_something_that_is_no_suggestion_is_refused(reviewer, key):
    with pytest.raises(ValueError, match="reload the page"):
        suggestion_dismiss(key=key, evidence_digest="0" * 64, user=reviewer)
