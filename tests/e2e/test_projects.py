"""Projects, people and machines in the browser: every row says whose and where, the projects
page counts what runs and waits in each."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conftest import login, screenshot
from tests.e2e import seed

pytestmark = pytest.mark.browser

SHOP = "git@github.com:acme/shop.git"
API = "https://github.com/acme/api.git"


@pytest.fixture
def team(agentboard_server):
    """Two people on two machines, in two projects (one of them cloned twice)."""
    server = agentboard_server
    ben = seed.add_owner(server, "ben", "Ben Okafor")
    prompt = "Add cursor pagination to the orders API"
    for token, session, cwd, repository, host in [
        (server.token, "dana-shop", "/home/dana/shop", SHOP, "dana-laptop"),
        (ben, "ben-shop", "/Users/ben/src/shop-2", "https://github.com/acme/shop", "ben-mbp"),
        (ben, "ben-api", "/Users/ben/src/api", API, "ben-mbp"),
        (server.token, "dana-notes", "/home/dana/notes", "", "dana-laptop"),
    ]:
        start = seed.hook_body("SessionStart", session, cwd, source="startup")
        seed.hook_from(server, token, start, repository=repository, host=host)
        ask = seed.hook_body("UserPromptSubmit", session, cwd, prompt=prompt)
        seed.hook_from(server, token, ask, repository=repository, host=host)
    return server


def test_rows_say_whose_and_where_and_the_projects_page_counts_them(team, chromium):
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    try:
        login(page, team)
        page.wait_for_selector("#connection[data-state=live]")
        row = page.locator(".session-row:has(a[href='/sessions/ben-api/'])")
        assert row.locator(".project").inner_text() == "api"
        owner = " ".join(row.locator(".row-owner").inner_text().split())
        assert owner.startswith("Ben Okafor · ben-mbp"), owner
        notes = page.locator(".session-row:has(a[href='/sessions/dana-notes/'])")
        assert notes.locator(".project").inner_text() == "notes"

        page.get_by_role("link", name="Projects", exact=True).click()
        page.wait_for_url("**/projects/")
        names = page.locator(".projects-table tbody th a").all_inner_texts()
        assert sorted(names) == ["api", "notes", "shop"]
        shop = page.locator(".projects-table tbody tr:has(a:text-is('shop'))")
        assert shop.locator("td").all_inner_texts()[0] == "2"  # two sessions running
        screenshot(page, "projects-desktop-light")

        shop.locator("a").first.click()
        page.wait_for_selector(".people-list")
        people = page.locator(".people-list").inner_text()
        assert "Ben Okafor" in people and "lead" in people
        assert "github.com/acme/shop" in page.locator(".page-head").inner_text()
        screenshot(page, "project-desktop-light")
    finally:
        context.close()


def test_the_projects_page_reads_on_a_phone_in_the_dark(team, chromium):
    context = chromium.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = context.new_page()
    try:
        login(page, team)
        page.goto(f"{team.url}/projects/")
        page.wait_for_selector("#connection[data-state=live]")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        screenshot(page, "projects-phone-dark")
        page.goto(f"{team.url}/")
        page.wait_for_selector("#connection[data-state=live]")
        screenshot(page, "overview-people-phone-dark")
    finally:
        context.close()


def arrive(server, token: str, session: str, repository: str, host: str) -> None:
    body = seed.hook_body("SessionStart", session, f"/src/{session}", source="startup")
    seed.hook_from(server, token, body, repository=repository, host=host)


@pytest.mark.live
def test_grouped_by_project_the_groups_follow_live(team, chromium):
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    try:
        login(page, team)
        page.get_by_label("Group by").select_option("project")
        page.wait_for_url("**/?group=project")
        page.wait_for_selector("#connection[data-state=live]")
        groups = page.locator("details.session-group")
        assert groups.locator(".group-name").all_inner_texts()[0] == "shop"  # the busiest
        api = page.locator("details.session-group:has(.group-name:text-is('api'))")
        assert api.locator(".session-row").count() == 1

        arrive(team, team.token, "dana-api", API, "dana-laptop")
        expect(api.locator(".session-row")).to_have_count(2)
        assert "2 running" in api.locator("summary").inner_text()
        screenshot(page, "overview-grouped-desktop-light")

        # A closed group stays closed through the live refresh.
        api.locator("summary").click()
        arrive(team, team.token, "dana-api-2", API, "dana-laptop")
        expect(api.locator(".session-row")).to_have_count(3)
        assert api.get_attribute("open") is None
    finally:
        context.close()


@pytest.mark.live
def test_filters_in_the_address_hold_for_rows_arriving_live(team, chromium):
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    try:
        login(page, team)
        page.goto(f"{team.url}/?machine=ben-mbp")
        page.wait_for_selector("#connection[data-state=live]")
        shown = page.locator(".session-row:not([hidden])")
        expect(shown).to_have_count(2)

        arrive(team, team.token, "dana-late", SHOP, "dana-laptop")
        arrive(team, team.token, "ben-late", SHOP, "ben-mbp")
        page.wait_for_selector(".session-row:has(a[href='/sessions/ben-late/'])")
        expect(shown).to_have_count(3)
        assert page.locator(".session-row:has(a[href='/sessions/dana-late/'])").is_hidden()

        page.get_by_role("button", name="Waiting on me").click()
        assert "state=waiting" in page.url and "machine=ben-mbp" in page.url
    finally:
        context.close()
