"""What each agent cost so far, on its card: a Claude Code session (reported for the session as
a whole, on its main card) and an opencode one (each agent's own, estimated from the price
table); live as exports arrive; on a desktop, a phone and in the dark, with no serious axe
finding."""

from __future__ import annotations

import time

import pytest

from tests.conftest import login, screenshot
from tests.costs.conftest import attributes, usage_metrics
from tests.e2e import seed
from tests.e2e.test_accessibility import violations
from tests.e2e.test_costs import export

pytestmark = pytest.mark.browser

CLAUDE = "dana-shop"
OPENCODE = "ses_ana0001"
# A session whose agents each report their own usage (`agent.id` on every point).
PER_AGENT = "raj-api"
REVIEWER = "c90e11aa"


def task(content: str, status: str) -> dict:
    return {"content": content, "activeForm": f"{content} now", "status": status}


def for_agent(message, agent_id: str):
    """The export with each point naming its agent."""
    for resource in message.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.sum.data_points:
                    point.attributes.extend(attributes(agent__id=agent_id))
    return message


@pytest.fixture
def boards(agentboard_server):
    """A Claude Code session with two subagents that exported $0.42, and an opencode session
    whose message reported tokens only."""
    server = agentboard_server
    seed.hook(server, "SessionStart", CLAUDE, cwd="/home/dana/shop", source="startup")
    todos = [task("Add the theme toggle", "in_progress"), task("Run the tests", "pending")]
    seed.put_todos(server, CLAUDE, CLAUDE, todos)
    for agent_id, agent_type in (("a4d2c8e1", "Explore"), ("b7f1d903", "Plan")):
        seed.put_todos(
            server, CLAUDE, agent_id, [task("Look around", "in_progress")], agent_type=agent_type
        )
    now = time.time_ns()
    export(
        server,
        usage_metrics(
            session_id=CLAUDE, cost=0.42, tokens={"input": 12_000, "output": 300}, end=now
        ),
    )
    seed._call(
        server,
        "POST",
        "/hooks/opencode/usage",
        {
            "sessionID": OPENCODE,
            "id": "msg_0001",
            "modelID": "gpt-5.5",
            "cost": 0,
            "tokens": {"input": 90_000, "output": 4_000, "reasoning": 0,
                       "cache": {"read": 0, "write": 0}},
            "completed": now // 1_000_000,
        },
    )  # fmt: skip
    seed.put_todos(server, OPENCODE, OPENCODE, [task("Write the pagination", "in_progress")])
    seed.put_todos(server, PER_AGENT, PER_AGENT, [task("Review the change", "in_progress")])
    seed.put_todos(
        server,
        PER_AGENT,
        REVIEWER,
        [task("Read every file of the change", "in_progress")],
        agent_type="typescript-monorepo-code-reviewer-with-a-long-name",
    )
    for agent_id, dollars in ((PER_AGENT, 0.12), (REVIEWER, 3.4)):
        export(server, for_agent(usage_metrics(session_id=PER_AGENT, cost=dollars), agent_id))
    return server


@pytest.mark.parametrize(
    ("name", "width", "height", "scheme"),
    [
        ("card-cost-desktop-light", 1440, 900, "light"),
        ("card-cost-phone-light", 390, 844, "light"),
        ("card-cost-desktop-dark", 1440, 900, "dark"),
        ("card-cost-phone-dark", 390, 844, "dark"),
    ],
)
def test_each_card_shows_what_its_agent_cost_so_far(boards, chromium, name, width, height, scheme):
    context = chromium.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
    page = context.new_page()
    try:
        login(page, boards)
        page.goto(f"{boards.url}/sessions/{CLAUDE}/")
        page.wait_for_selector("#connection[data-state=live]")
        main = page.locator(".card").first.locator(".card-usage")
        # (After words only a screen reader reads.)
        assert main.inner_text().endswith("$0.42 for the session"), main.inner_text()
        # The subagents' model requests are in the session's figure: their cards show none.
        assert page.locator(".card .card-usage").count() == 1
        if "desktop-light" in name:
            now = time.time_ns()
            export(
                boards,
                usage_metrics(session_id=CLAUDE, cost=0.5, start=now - 9, end=now),
            )
            page.wait_for_selector(".card-usage:text('$0.92 for the session')")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        screenshot(page, f"{name}-claude")
        assert violations(page) == []

        page.goto(f"{boards.url}/sessions/{OPENCODE}/")
        estimate = page.locator(".card-usage").first
        estimate.wait_for()
        assert "≈$" in estimate.inner_text(), estimate.inner_text()
        screenshot(page, f"{name}-opencode")
        assert violations(page) == []

        page.goto(f"{boards.url}/sessions/{PER_AGENT}/")
        page.wait_for_selector(".card-usage")
        figures = [text.split()[-1] for text in page.locator(".card-usage").all_inner_texts()]
        assert figures == ["$0.12", "$3.40"]
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        screenshot(page, f"{name}-per-agent")
        assert violations(page) == []
    finally:
        context.close()
