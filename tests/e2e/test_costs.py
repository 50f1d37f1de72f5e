"""What the agents cost, in the browser: a project's page with its cost by day and a budget
set in its form; on a desktop, a phone and in the dark, with no serious axe finding."""

from __future__ import annotations

import time
import urllib.request

import pytest

from tests.conftest import login, screenshot
from tests.costs.conftest import usage_metrics
from tests.e2e import seed
from tests.e2e.test_accessibility import violations

pytestmark = pytest.mark.browser

SHOP = "git@github.com:acme/shop.git"
DAY = 86_400 * 10**9


def export(server, message) -> None:
    request = urllib.request.Request(
        f"{server.url}/v1/metrics",
        data=message.SerializeToString(),
        method="POST",
        headers={
            "Authorization": f"Bearer {server.token}",
            "Content-Type": "application/x-protobuf",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


@pytest.fixture
def shop(agentboard_server):
    """A session in project shop that spent something on most of the last three weeks."""
    server = agentboard_server
    start = seed.hook_body("SessionStart", "dana-shop", "/home/dana/shop", source="startup")
    seed.hook_from(server, server.token, start, repository=SHOP, host="dana-laptop")
    now = time.time_ns()
    for days_ago in range(21):
        if days_ago % 4 == 3:
            continue
        at = now - days_ago * DAY
        dollars = round(0.4 + (days_ago * 7 % 10) * 0.35, 2)
        export(
            server,
            usage_metrics(
                session_id="dana-shop",
                cost=dollars,
                tokens={"input": 30_000 + days_ago * 1000, "output": 2_000},
                start=at - 1000,
                end=at,
            ),
        )
    return server


@pytest.mark.parametrize(
    ("name", "width", "height", "scheme"),
    [
        ("project-cost-desktop-light", 1440, 900, "light"),
        ("project-cost-phone-light", 390, 844, "light"),
        ("project-cost-desktop-dark", 1440, 900, "dark"),
        ("project-cost-phone-dark", 390, 844, "dark"),
    ],
)
def test_a_project_page_shows_its_cost_by_day_and_its_budget(
    shop, chromium, name, width, height, scheme
):
    context = chromium.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
    page = context.new_page()
    try:
        login(page, shop)
        page.goto(f"{shop.url}/projects/")
        page.locator(".projects-table a:text-is('shop')").click()
        page.wait_for_selector(".cost-summary svg")
        assert page.locator(".cost-chart-bar").count() == 30
        today = page.locator(".cost-figures dd").first.inner_text()
        assert today.startswith("$"), today
        if "desktop-light" in name:
            page.get_by_label("Budget in dollars").fill("0.50")
            page.get_by_label("Stop its agents at the limit").check()
            page.get_by_role("button", name="Set", exact=True).click()
            page.wait_for_selector(".budget-list")
            assert "$0.50 a day" in page.locator(".budget-list").inner_text()
        page.locator(".cost-days summary").click()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        screenshot(page, name)
        assert violations(page) == []
    finally:
        context.close()


def test_a_persons_page_and_the_prices_read_everywhere(shop, chromium):
    for scheme, width, height, device in [
        ("light", 1440, 900, "desktop"),
        ("dark", 390, 844, "phone"),
        ("light", 390, 844, "phone"),
    ]:
        context = chromium.new_context(
            viewport={"width": width, "height": height}, color_scheme=scheme
        )
        page = context.new_page()
        try:
            login(page, shop)
            page.goto(f"{shop.url}/people/{shop.username}/")
            page.wait_for_selector(".cost-summary svg")
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            screenshot(page, f"person-{device}-{scheme}")
            assert violations(page) == []
            page.goto(f"{shop.url}/settings/prices/")
            page.wait_for_selector(".price-table")
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            screenshot(page, f"prices-{device}-{scheme}")
            assert violations(page) == []
        finally:
            context.close()


def test_an_over_budget_session_waits_in_the_inbox_until_let_continue(shop, chromium):
    for scheme, width, height, device in [
        ("light", 1440, 900, "desktop"),
        ("dark", 390, 844, "phone"),
    ]:
        context = chromium.new_context(
            viewport={"width": width, "height": height}, color_scheme=scheme
        )
        page = context.new_page()
        try:
            login(page, shop)
            if device == "desktop":
                page.goto(f"{shop.url}/projects/")
                page.locator(".projects-table a:text-is('shop')").click()
                page.get_by_label("Budget in dollars").fill("0.10")
                page.get_by_label("Stop its agents at the limit").check()
                page.get_by_role("button", name="Set", exact=True).click()
                page.wait_for_selector(".budget-list")
                now = time.time_ns()
                export(
                    shop, usage_metrics(session_id="dana-shop", cost=0.05, start=now - 9, end=now)
                )
            page.goto(f"{shop.url}/inbox/")
            page.wait_for_selector("text=Over budget")
            screenshot(page, f"inbox-over-budget-{device}-{scheme}")
            assert violations(page) == []
            page.goto(f"{shop.url}/sessions/dana-shop/")
            page.wait_for_selector("text=Let it continue once")
            screenshot(page, f"session-over-budget-{device}-{scheme}")
            assert violations(page) == []
            if device == "phone":
                page.get_by_role("button", name="Let it continue once").click()
                # The board hears of it live: the session waits on nobody.
                page.wait_for_selector("text=Let it continue once", state="detached")
        finally:
            context.close()
