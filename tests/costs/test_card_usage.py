"""Each agent's card shows what its agent's model use cost so far."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dashboard.costs.models import Usage
from dashboard.costs.selectors import usage_by_agent
from dashboard.models import Agent
from tests.conftest import parse_html, todo, write_todos
from tests.costs.conftest import SESSION, usage_metrics

pytestmark = pytest.mark.django_db

HELPER = "agent-helper-1"


def agent(agent_id: str, session_id: str = SESSION) -> Agent:
    return Agent.objects.get(session__session_id=session_id, agent_id=agent_id)


def add_usage(
    agent_id: str,
    identity: str,
    *,
    session_id: str = SESSION,
    stream: str = "events",
    cost: float = 0.0,
    tokens: int = 100,
    estimated: bool = False,
) -> None:
    """A stored report of the agent's (its session and agent written before)."""
    reporter = agent(agent_id, session_id)
    Usage.objects.create(
        session_id=reporter.session_id,
        agent=reporter,
        stream=stream,
        identity=identity,
        model="claude-opus-5-5",
        input_tokens=tokens,
        cost_micros=round(cost * 1_000_000),
        cost_estimated=estimated,
        observed_ns=1,
    )


@pytest.fixture
def two_agents(user) -> tuple[Agent, Agent]:
    write_todos(user, SESSION, SESSION, [todo("Build", "in_progress")])
    write_todos(user, SESSION, HELPER, [todo("Search", "in_progress")], agent_type="Explore")
    return agent(SESSION), agent(HELPER)


def card_usage(page: bytes, agent_pk: int) -> str:
    card = parse_html(page).find("article", id=f"agent-{agent_pk}")
    found = card.find_all(cls="card-usage")
    return found[0].text() if found else ""


@pytest.fixture
def logged_in(client, user):
    client.force_login(user)
    return client


def test_each_agent_has_the_usage_reported_for_it(two_agents):
    main, helper = two_agents
    add_usage(SESSION, "a", cost=0.25, tokens=1_000)
    add_usage(HELPER, "b", cost=0.5, tokens=2_000)
    add_usage(HELPER, "c", cost=0.25, tokens=500)

    usage = usage_by_agent([main.pk, helper.pk])

    assert (usage[main.pk].cost_text, usage[main.pk].tokens) == ("$0.25", 1_000)
    assert (usage[helper.pk].cost_text, usage[helper.pk].tokens) == ("$0.75", 2_500)
    assert not usage[main.pk].session_wide


def test_an_agent_without_usage_is_left_out(two_agents):
    main, helper = two_agents
    add_usage(SESSION, "a", cost=0.25)

    assert list(usage_by_agent([main.pk, helper.pk])) == [main.pk]


def test_a_session_with_metrics_counts_only_its_metrics_for_each_agent(two_agents):
    """Claude Code reports the same requests as metrics and as events: the events of a session
    that sent metrics are not added, whichever agent they name."""
    main, helper = two_agents
    add_usage(SESSION, "metrics", stream="metrics", cost=1.0)
    add_usage(SESSION, "event-main", cost=0.6)
    add_usage(HELPER, "event-helper", cost=0.4)

    usage = usage_by_agent([main.pk, helper.pk])

    assert usage[main.pk].cost_text == "$1.00"
    assert helper.pk not in usage
    # All the session's usage is on the main agent, its subagent's included.
    assert usage[main.pk].session_wide


def test_the_usage_of_a_session_without_metrics_comes_from_its_events(two_agents, user):
    main, _ = two_agents
    write_todos(user, "sess-other", "sess-other", [todo("Other", "in_progress")])
    other = agent("sess-other", "sess-other")
    add_usage(SESSION, "event-main", cost=0.6)
    add_usage("sess-other", "metrics", session_id="sess-other", stream="metrics", cost=2.0)

    usage = usage_by_agent([main.pk, other.pk])

    assert usage[main.pk].cost_text == "$0.60"
    assert usage[other.pk].cost_text == "$2.00"
    # A session of one agent: its figures are its own.
    assert not usage[other.pk].session_wide


def test_the_usage_of_many_agents_is_read_in_one_query(user):
    pks = []
    for n in range(12):
        session_id = f"sess-{n}"
        write_todos(user, session_id, session_id, [todo("Build", "in_progress")])
        write_todos(user, session_id, f"helper-{n}", [todo("Search")], agent_type="Explore")
        add_usage(session_id, f"m{n}", session_id=session_id, stream="metrics", cost=0.01)
        add_usage(f"helper-{n}", f"e{n}", session_id=session_id, cost=0.02)
        pks += [agent(session_id, session_id).pk, agent(f"helper-{n}", session_id).pk]

    with CaptureQueriesContext(connection) as queries:
        usage = usage_by_agent(pks)

    assert len(queries) == 1
    assert sorted(u.cost_text for u in usage.values()) == ["$0.01"] * 12


def test_the_cards_show_each_agents_cost_so_far(logged_in, two_agents):
    main, helper = two_agents
    add_usage(SESSION, "a", cost=0.25, tokens=1_000)
    add_usage(HELPER, "b", cost=1.5, tokens=12_300)

    page = logged_in.get(f"/sessions/{SESSION}/").content

    assert card_usage(page, main.pk) == "Model usage so far: $0.25"
    assert card_usage(page, helper.pk) == "Model usage so far: $1.50"


def test_an_agent_without_usage_shows_none(logged_in, two_agents):
    _, helper = two_agents
    add_usage(SESSION, "a", cost=0.25)

    page = logged_in.get(f"/sessions/{SESSION}/").content

    assert card_usage(page, helper.pk) == ""


def test_an_estimated_cost_and_tokens_only_say_so_and_never_cost_nothing(logged_in, two_agents):
    main, helper = two_agents
    add_usage(SESSION, "a", cost=0.25, estimated=True)
    add_usage(HELPER, "b", tokens=12_300)

    page = logged_in.get(f"/sessions/{SESSION}/").content

    assert card_usage(page, main.pk) == "Model usage so far: ≈$0.25"
    assert card_usage(page, helper.pk) == "Model usage so far: 12.3k tokens"


def test_the_main_card_says_when_its_figure_is_the_whole_sessions(
    logged_in, export, user, two_agents
):
    """Claude Code exports a session's usage without naming the agent: it lands on the main
    card, which must not let its subagents seem to have cost nothing."""
    main, helper = two_agents
    export("/v1/metrics", usage_metrics(tokens={"input": 12_000, "output": 300}, cost=0.42))

    page = parse_html(logged_in.get(f"/sessions/{SESSION}/").content)
    usage = page.find("article", id=f"agent-{main.pk}").find(cls="card-usage")

    assert usage.text() == "Model usage so far: $0.42 for the session"
    assert "subagents" in usage.attrs["title"]
    assert not page.find("article", id=f"agent-{helper.pk}").find_all(cls="card-usage")


def test_a_lone_main_agents_card_shows_its_figure_plainly(logged_in, export, user):
    write_todos(user, SESSION, SESSION, [todo("Build", "in_progress")])
    export("/v1/metrics", usage_metrics(tokens={"input": 12_000, "output": 300}, cost=0.42))

    page = logged_in.get(f"/sessions/{SESSION}/").content

    assert card_usage(page, agent(SESSION).pk) == "Model usage so far: $0.42"
