"""What a lead reads of cost: a project's and a person's today, this week and this month with
a chart by day; an approved plan's implementation; estimates from the price table."""

from __future__ import annotations

from datetime import datetime, timedelta
from importlib import import_module
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard.core.visibility import EVERYONE, audience_of
from dashboard.costs.models import Price, Usage
from dashboard.costs.selectors import cost_summary
from dashboard.models import Agent, Membership, Project, Session, Team, TeamRole
from planmode.models import Plan, PlanStatus
from tests.conftest import parse_html
from tests.costs.test_otlp import codex_events

pytestmark = pytest.mark.django_db

ZONE = ZoneInfo("Europe/Berlin")
# 10:00 in Berlin on Wednesday 2026-11-18.
NOW = datetime(2026, 11, 18, 10, 0, tzinfo=ZONE)


def ns(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000) * 1000


def place(owner: User, session_id: str, project: Project | None, *, team: Team | None = None):
    session = Session.objects.create(
        session_id=session_id,
        owner=owner,
        project_record=project,
        team=team if team is not None else (project.team if project else None),
    )
    agent = Agent.objects.create(session=session, agent_id=session_id)
    return session, agent


def spend(agent: Agent, at: datetime, dollars: float, *, stream="metrics", tokens=100, **extra):
    Usage.objects.create(
        session_id=agent.session_id,
        agent=agent,
        stream=stream,
        identity=f"{agent.pk}-{ns(at)}-{stream}-{dollars}",
        model="claude-opus-4-5",
        input_tokens=tokens,
        cost_micros=round(dollars * 1_000_000),
        observed_ns=ns(at),
        **extra,
    )


@pytest.fixture
def shop(db) -> Project:
    return Project.objects.create(key="github.com/acme/shop", name="shop")


@pytest.fixture
def berlin(settings):
    settings.TIME_ZONE = "Europe/Berlin"
    timezone.activate(ZONE)
    yield
    timezone.deactivate()


def test_today_this_week_and_this_month_by_the_server_clock(berlin, user, shop):
    _, agent = place(user, "s1", shop)
    spend(agent, NOW - timedelta(hours=9, minutes=59), 1.00)  # 00:01 today
    spend(agent, NOW - timedelta(hours=10, minutes=1), 2.00)  # 23:59 yesterday (Tuesday)
    spend(agent, datetime(2026, 11, 16, 0, 0, tzinfo=ZONE), 4.00)  # Monday 00:00
    spend(agent, datetime(2026, 11, 15, 23, 59, tzinfo=ZONE), 8.00)  # Sunday: last week
    spend(agent, datetime(2026, 11, 1, 0, 0, tzinfo=ZONE), 16.00)  # the month's first minute
    spend(agent, datetime(2026, 10, 31, 23, 59, tzinfo=ZONE), 32.00)  # last month, in the chart
    spend(agent, datetime(2026, 10, 1, 12, 0, tzinfo=ZONE), 64.00)  # before the chart
    spend(agent, NOW + timedelta(days=1), 128.00)  # a clock ahead: tomorrow is not counted

    summary = cost_summary(EVERYONE, project_pk=shop.pk, now=NOW)

    assert summary.today.cost_text == "$1.00"
    assert summary.week.cost_text == "$7.00"
    assert summary.month.cost_text == "$31.00"
    assert len(summary.days) == 30
    assert summary.days[-1].day.isoformat() == "2026-11-18"
    by_day = {d.day.isoformat(): d.usage.cost_micros for d in summary.days}
    assert by_day["2026-11-17"] == 2_000_000
    assert by_day["2026-10-31"] == 32_000_000
    assert sum(by_day.values()) == 63_000_000


def test_a_day_of_25_hours_is_one_day(berlin, user, shop):
    """Berlin's clocks went back on 2026-10-25: that day had 25 hours."""
    _, agent = place(user, "s1", shop)
    spend(agent, datetime(2026, 10, 25, 0, 30, tzinfo=ZONE), 1.0)
    spend(agent, datetime(2026, 10, 25, 23, 30, tzinfo=ZONE), 2.0)
    spend(agent, datetime(2026, 10, 26, 0, 30, tzinfo=ZONE), 4.0)

    summary = cost_summary(EVERYONE, project_pk=shop.pk, now=NOW)

    by_day = {d.day.isoformat(): d.usage.cost_micros for d in summary.days}
    assert (by_day["2026-10-25"], by_day["2026-10-26"]) == (3_000_000, 4_000_000)


def test_a_session_counts_its_metrics_or_its_events_never_both(user, shop):
    _, both = place(user, "s1", shop)
    _, events_only = place(user, "s2", shop)
    now = timezone.now()
    spend(both, now, 1.0)
    spend(both, now, 1.0, stream="events")  # the same request, reported again
    spend(events_only, now, 0.5, stream="events")

    assert cost_summary(EVERYONE, project_pk=shop.pk).today.cost_text == "$1.50"


def test_only_the_sessions_the_viewer_sees_count(user, other_user, shop):
    red = Team.objects.create(name="red")
    blue = Team.objects.create(name="blue")
    Membership.objects.create(team=red, user=user, role=TeamRole.MEMBER)
    Membership.objects.create(team=blue, user=other_user, role=TeamRole.MEMBER)
    _, mine = place(user, "s1", shop, team=red)
    _, theirs = place(other_user, "s2", shop, team=blue)
    now = timezone.now()
    spend(mine, now, 1.0)
    spend(theirs, now, 10.0)

    assert cost_summary(audience_of(user), project_pk=shop.pk).today.cost_text == "$1.00"
    assert cost_summary(EVERYONE, project_pk=shop.pk).today.cost_text == "$11.00"
    # Another team's person's cost does not leak through their page either.
    assert cost_summary(audience_of(user), owner_pk=other_user.pk).today.cost_text == "$0.00"


def test_the_project_page_shows_the_cost_and_a_chart_in_one_query(
    client, user, shop, django_assert_max_num_queries
):
    _, agent = place(user, "s1", shop)
    spend(agent, timezone.now(), 4.12)
    client.force_login(user)
    client.get(f"/projects/{shop.pk}/")
    with CaptureQueriesContext(connection) as queries:
        page = parse_html(client.get(f"/projects/{shop.pk}/").content)
    usage_reads = [q for q in queries.captured_queries if "costs_usage" in q["sql"]]
    assert len(usage_reads) == 1

    section = page.find("section", cls="cost-summary")
    figures = [dd.text() for dd in section.find_all("dd")]
    assert figures == ["$4.12", "$4.12", "$4.12"]
    svg = section.find("svg")
    assert svg.attrs["role"] == "img"
    assert "Cost by day" in svg.find("title").text()
    assert len(svg.find_all("rect")) == 30
    rows = section.find("table").find("tbody").find_all("tr")
    assert [row.find_all("td")[-1].text() for row in rows] == ["$4.12"]

    for n in range(2, 12):
        _, other = place(user, f"s{n}", shop)
        spend(other, timezone.now() - timedelta(days=n), 1.0)
    with CaptureQueriesContext(connection) as more:
        client.get(f"/projects/{shop.pk}/")
    assert len(more.captured_queries) == len(queries.captured_queries)


def test_a_person_page_shows_their_cost_to_whoever_sees_their_sessions(client, user, other_user):
    _, agent = place(other_user, "s1", None)
    spend(agent, timezone.now(), 2.5)
    client.force_login(user)

    page = parse_html(client.get(f"/people/{other_user.username}/").content)

    assert page.find("h1").text() == other_user.get_full_name() or other_user.username
    assert page.find("dd").text() == "$2.50"


def test_a_person_whose_sessions_the_viewer_cannot_see_has_no_page(client, user, other_user):
    blue = Team.objects.create(name="blue")
    _, agent = place(other_user, "s1", None, team=blue)
    spend(agent, timezone.now(), 2.5)
    client.force_login(user)

    assert client.get(f"/people/{other_user.username}/").status_code == 404
    assert client.get("/people/nobody-at-all/").status_code == 404
    assert client.get(f"/people/{user.username}/").status_code == 200  # oneself, always


def test_a_codex_session_is_priced_from_the_table_and_marked_an_estimate(client, export, user):
    Price.objects.update_or_create(
        model="gpt-5-codex",
        defaults={"input": 1.25, "output": 10, "cache_read": 0.125, "cache_write": 0},
    )
    events = codex_events({"input": 1_000_000, "output": 100_000, "cached": 400_000})
    for record in events.resource_logs[0].scope_logs[0].log_records:
        for attribute in record.attributes:
            if attribute.key == "model":
                attribute.value.string_value = "gpt-5-codex"
    assert export("/v1/logs", events).status_code == 200

    usage = Usage.objects.get()
    # 600k input at $1.25, 400k cached at $0.125, 100k output at $10 per million.
    assert (usage.cost_micros, usage.cost_estimated) == (750_000 + 50_000 + 1_000_000, True)
    client.force_login(user)
    session = Session.objects.get()
    row = parse_html(client.get("/").content)
    assert "≈$1.80" in row.text()
    header = parse_html(client.get(f"/sessions/{session.session_id}/").content)
    assert "$1.80 (estimated)" in header.find(cls="usage").text()


def test_the_longest_matching_name_prices_a_model(db):
    from django.apps import apps

    from dashboard.costs.prices import PriceTable

    # The prices as migration 0003 ships them (each test starts with empty tables).
    import_module("dashboard.costs.migrations.0003_list_prices").ship(apps, None)
    table = PriceTable.read()
    mini = table.cost_micros(
        "openai/gpt-5.1-codex-mini", input_tokens=1_000_000, output_tokens=0,
        cache_read_tokens=0, cache_creation_tokens=0,
    )  # fmt: skip
    full = table.cost_micros(
        "gpt-5.1-codex", input_tokens=1_000_000, output_tokens=0,
        cache_read_tokens=0, cache_creation_tokens=0,
    )  # fmt: skip
    assert (mini, full) == (250_000, 1_250_000)
    assert table.rates("scripted-model") is None
    assert table.rates("claude-opus-4-5-20251101").output == 25


def test_an_approved_plan_says_what_its_implementation_cost_so_far(client, user):
    session, agent = place(user, "s1", None)
    approved = timezone.now() - timedelta(hours=2)
    plan = Plan.objects.create(
        session=session, agent=agent, markdown="# Add search", revision=1,
        status=PlanStatus.APPROVED, decided_at=approved,
    )  # fmt: skip
    Plan.objects.create(
        session=session, agent=agent, markdown="# Next", revision=2,
        status=PlanStatus.APPROVED, decided_at=approved + timedelta(hours=1),
    )  # fmt: skip
    spend(agent, approved - timedelta(minutes=1), 100.0)  # the planning, before
    spend(agent, approved + timedelta(minutes=5), 3.00)
    spend(agent, approved + timedelta(minutes=50), 1.12)
    spend(agent, approved + timedelta(minutes=70), 50.0)  # the next plan's work
    client.force_login(user)

    page = parse_html(client.get(f"/plans/{plan.pk}/").content)

    assert "This plan's implementation: $4.12 so far" in page.find(cls="plan-cost").text()


def test_a_plan_waiting_shows_no_cost_of_its_implementation(client, user):
    session, agent = place(user, "s1", None)
    plan = Plan.objects.create(session=session, agent=agent, markdown="# X", revision=1)
    client.force_login(user)

    assert not parse_html(client.get(f"/plans/{plan.pk}/").content).find_all(cls="plan-cost")
