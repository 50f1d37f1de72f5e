"""A rule tested on the team's history before it is saved: what it matches, where it agrees
with the people and where not (a person's denial it would have allowed flagged apart), how
long those requests waited, for every agent kind, in a bounded number of queries."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dashboard.models import Client, Team
from dashboard.policy.backtest import MAX_LISTED, rule_backtest
from planmode.permissions import team_rule_add
from tests.policy.conftest import edit, shell

pytestmark = pytest.mark.django_db


def backtest(viewer, rule: str, behavior: str = "allow", project: str = "", days=30, **options):
    return rule_backtest(
        rule=rule, behavior=behavior, project=project, days=days, viewer=viewer, **options
    )


def test_a_rule_is_shown_what_it_would_have_done_to_the_last_30_days(history, reviewer):
    sam = User.objects.create_superuser("sam", password="a-long-password-6")
    history.many(3, "Bash", shell("npm test"), waited=30.0)
    denied = history.decided(
        "Bash", shell("npm test -- --update-snapshots"), allow=False, by=sam, waited=90.0
    )
    history.decided("Bash", shell("npm publish"), waited=600.0)

    found = backtest(reviewer, "Bash(npm test*)")

    assert (found.matched, found.agreed, found.disagreed) == (4, 3, 1)
    assert found.allowed_denied == 1
    [disagreement] = found.disagreements
    assert disagreement.request_pk == denied.pk
    assert (disagreement.decided_by, disagreement.decided) == ("sam", "deny")
    assert disagreement.headline == "npm test -- --update-snapshots"
    assert found.allowed_denied_listed == [disagreement]
    assert found.waited_total == pytest.approx(180.0)
    assert found.waited_median == pytest.approx(30.0)


def test_a_deny_rule_that_denies_what_people_allowed_is_not_flagged_as_dangerous(history, reviewer):
    history.many(2, "Bash", shell("npm test"))

    found = backtest(reviewer, "Bash(npm *)", "deny")

    assert (found.matched, found.agreed, found.disagreed, found.allowed_denied) == (2, 0, 2, 0)


def test_the_window_is_30_days_90_or_all(history, reviewer):
    for days_ago in (10, 60, 200):
        history.decided("Bash", shell("make lint"), days_ago=days_ago)

    assert [backtest(reviewer, "Bash(make lint)", days=d).matched for d in (30, 90, None)] == [
        1, 2, 3,
    ]  # fmt: skip


def test_a_project_rule_only_sees_that_project(history, reviewer):
    history.decided("Bash", shell("make lint"), project="shop")
    history.decided("Bash", shell("make lint"), project="billing")

    assert backtest(reviewer, "Bash(make lint)", project="shop").matched == 1
    assert backtest(reviewer, "Bash(make lint)").matched == 2


def test_every_agent_kind_is_tested_with_its_own_tool_names(history, reviewer):
    history.decided("Bash", shell("npm install left-pad"), kind=Client.CODEX)
    history.decided("run_shell_command", shell("npm install"), kind=Client.GEMINI)
    history.decided("write_file", edit("src/a.ts"), kind=Client.GEMINI)
    history.decided("Edit", edit("src/b.ts", Client.OPENCODE), kind=Client.OPENCODE)
    history.decided("Edit", edit("src/c.ts"))

    assert backtest(reviewer, "Bash(npm install*)").matched == 1
    assert backtest(reviewer, "run_shell_command(npm install*)").matched == 1
    assert backtest(reviewer, "write_file(src/**)").matched == 1
    assert backtest(reviewer, "Edit(src/**)").matched == 2


def test_a_deny_rule_finds_the_command_hidden_in_a_chain(history, reviewer):
    history.decided("Bash", shell("npm ci && rm -rf node_modules/.cache"), allow=False)

    assert backtest(reviewer, "Bash(rm -rf*)", "deny").matched == 1
    assert backtest(reviewer, "Bash(npm ci*)", "allow").matched == 0


def test_a_dangerous_request_is_held_unless_the_rule_names_it_and_is_confirmed(history, reviewer):
    history.decided("Bash", shell("sudo apt-get update"))

    assert backtest(reviewer, "Bash(*)").held_dangerous == 1
    named = backtest(reviewer, "Bash(sudo apt-get update)")
    assert (named.matched, named.held_dangerous) == (0, 1)
    confirmed = backtest(reviewer, "Bash(sudo apt-get update)", allows_dangerous=True)
    assert (confirmed.matched, confirmed.held_dangerous) == (1, 0)


def test_requests_other_rules_answered_are_counted_apart(history, reviewer):
    team_rule_add(rule="Bash(make *)", behavior="allow", project="", user=reviewer)
    history.ask("Bash", shell("make lint"))
    history.decided("Bash", shell("npm test"), allow=False)

    found = backtest(reviewer, "Bash(make lint)")

    assert (found.matched, found.answered_by_rules) == (0, 1)


def test_only_requests_the_viewer_may_see_are_tested(history, reviewer):
    infra = Team.objects.create(name="Infra")
    history.decided("Bash", shell("terraform plan"), project="infra", team=infra)
    outsider = User.objects.create_user("olu", password="a-long-password-9")

    assert backtest(reviewer, "Bash(terraform *)").matched == 1
    assert backtest(outsider, "Bash(terraform *)").matched == 0


def test_the_disagreements_listed_are_the_newest_and_bounded(history, reviewer):
    history.many(MAX_LISTED + 5, "Bash", shell("npm test"), allow=False)

    found = backtest(reviewer, "Bash(npm test)")

    assert found.disagreed == MAX_LISTED + 5
    assert len(found.disagreements) == MAX_LISTED
    times = [d.decided_at for d in found.disagreements]
    assert times == sorted(times, reverse=True)


def test_a_backtest_reads_the_history_in_one_query_however_long(history, reviewer):
    history.many(5, "Bash", shell("npm test"))
    backtest(reviewer, "Bash(npm test)")  # the viewer's audience, read once

    with CaptureQueriesContext(connection) as few:
        backtest(reviewer, "Bash(npm test)")
    history.many(30, "Bash", [shell("npm test"), shell("npm test -- -x")], allow=False)
    with CaptureQueriesContext(connection) as many:
        found = backtest(reviewer, "Bash(npm test*)")

    assert found.matched == 35
    assert len(few.captured_queries) == len(many.captured_queries) == 1


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"rule": "Bash(<script>alert(1)</script>"}, "tool name with an optional pattern"),
        ({"rule": "Bash(" + "x" * 600 + ")"}, "at most 500"),
        ({"rule": "Bash(ls \ud800)"}, "cannot be stored"),
        ({"project": "shop\ud800"}, "cannot be stored"),
        ({"behavior": "maybe"}, "allow or deny"),
        ({"days": float("nan")}, "30 days"),
        ({"days": float("inf")}, "30 days"),
        ({"days": 7}, "30 days"),
        ({"days": True}, "30 days"),
    ],
)
def test_what_cannot_be_tested_is_refused_in_one_sentence(reviewer, options, says):
    arguments = {"rule": "Bash(ls)", "behavior": "allow", "project": "", "days": 30} | options
    with pytest.raises(ValueError, match=says):
        rule_backtest(viewer=reviewer, **arguments)


def test_markup_in_a_rule_is_tested_as_text(history, reviewer):
    history.decided("Bash", shell("echo <b>hi</b>"), allow=False)

    found = backtest(reviewer, "Bash(echo <b>*)", "deny")

    assert found.matched == 1
