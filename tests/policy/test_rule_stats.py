"""What each rule did and saved: its hits and last hit, a shadow rule's agreement so far, the
people's decisions of the month before it existed, and the waiting it saved; in a bounded
number of queries however many rules."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard.models import Client, Team
from dashboard.policy.stats import rule_stats
from planmode.models import PermissionRequest, RuleMode, RuleVerdict, TeamRule
from planmode.permissions import team_rule_add
from tests.policy.conftest import shell

pytestmark = pytest.mark.django_db


def add(reviewer, rule: str, behavior: str = "allow", **options) -> TeamRule:
    options.setdefault("project", "")
    return team_rule_add(rule=rule, behavior=behavior, user=reviewer, **options)


def test_an_active_rule_counts_its_hits_and_the_waiting_it_saved(history, reviewer):
    history.many(3, "Bash", shell("npm test"), waited=120.0)
    history.decided("Bash", shell("npm test -- -x"), allow=False, waited=600.0)
    rule = add(reviewer, "Bash(npm test*)")
    for _ in range(5):
        history.ask("Bash", shell("npm test"))

    found = rule_stats(team_rules=[rule], viewer=reviewer)[rule.pk]

    assert found.hits == 5
    assert found.last_hit is not None
    assert (found.before_matched, found.before_agreed, found.before_disagreed) == (4, 3, 1)
    assert found.before_waited_median == pytest.approx(120.0)
    assert found.waiting_saved == pytest.approx(600.0)


def test_a_shadow_rule_shows_its_agreement_with_the_people(history, reviewer):
    rule = add(reviewer, "run_shell_command(npm *)", mode=RuleMode.SHADOW)
    history.many(3, "run_shell_command", shell("npm test"), kind=Client.GEMINI)
    history.decided("run_shell_command", shell("npm publish"), allow=False, kind=Client.GEMINI)
    history.ask("run_shell_command", shell("npm ci"), kind=Client.GEMINI)  # nobody answered yet

    found = rule_stats(team_rules=[rule], viewer=reviewer)[rule.pk]

    assert RuleVerdict.objects.filter(rule=rule).count() == 5
    assert (found.shadow_compared, found.shadow_agreed, found.shadow_disagreed) == (4, 3, 1)
    assert found.hits == 0


def test_the_month_before_a_rule_is_all_that_counts_before_it(history, reviewer):
    history.decided("Bash", shell("make lint"), days_ago=45)
    history.decided("Bash", shell("make lint"), days_ago=5)
    rule = add(reviewer, "Bash(make lint)", project="shop")
    TeamRule.objects.filter(pk=rule.pk).update(created_at=timezone.now() - timedelta(days=2))
    rule.refresh_from_db()
    history.decided("Bash", shell("make lint"), days_ago=1, project="other")

    found = rule_stats(team_rules=[rule], viewer=reviewer)[rule.pk]

    assert found.before_matched == 1


def test_an_expired_rule_says_so(reviewer):
    rule = add(reviewer, "Bash(make lint)", expires_at=timezone.now() + timedelta(days=1))
    TeamRule.objects.filter(pk=rule.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    rule.refresh_from_db()

    assert rule_stats(team_rules=[rule], viewer=reviewer)[rule.pk].expired


def test_only_requests_the_viewer_may_see_count(history, reviewer):
    infra = Team.objects.create(name="Infra")
    rule = add(reviewer, "Bash(terraform *)")
    for _ in range(2):
        history.ask("Bash", shell("terraform plan"), project="infra", team=infra)
    outsider = User.objects.create_user("olu", password="a-long-password-9")

    assert rule_stats(team_rules=[rule], viewer=reviewer)[rule.pk].hits == 2
    assert rule_stats(team_rules=[rule], viewer=outsider)[rule.pk].hits == 0


def test_the_figures_of_many_rules_take_as_many_queries_as_one(history, reviewer):
    history.many(3, "Bash", shell("npm test"))
    one = [add(reviewer, "Bash(npm test*)", mode=RuleMode.SHADOW)]
    history.ask("Bash", shell("npm test"))
    rule_stats(team_rules=one, viewer=reviewer)  # the viewer's audience, read once
    with CaptureQueriesContext(connection) as few:
        rule_stats(team_rules=one, viewer=reviewer)

    many = one + [add(reviewer, f"Bash(tool-{n} *)") for n in range(40)]
    for n in range(10):
        history.ask("Bash", shell(f"tool-{n} run"))
    with CaptureQueriesContext(connection) as lots:
        found = rule_stats(team_rules=many, viewer=reviewer)

    assert len(few.captured_queries) == len(lots.captured_queries) <= 3
    assert sum(stats.hits for stats in found.values()) == 10
    assert PermissionRequest.objects.filter(rule__isnull=False).count() == 10


def test_no_rules_need_no_query(reviewer):
    with CaptureQueriesContext(connection) as queries:
        assert rule_stats(team_rules=[], viewer=reviewer) == {}
    assert queries.captured_queries == []
