"""Teams in a browser: an admin makes a team and gives it a project; its reviewer's overview
shows that project's sessions and not another team's, and what arrives to wait in them is
pinned first, live, with the header's count."""

from __future__ import annotations

import pytest

from tests.conftest import login, screenshot
from tests.e2e import seed

pytestmark = pytest.mark.browser

PASSWORD = "not-used-here"  # what `seed.add_owner` gives its people


def start(server, token: str, session_id: str, repository: str, host: str) -> None:
    body = seed.hook_body("SessionStart", session_id, f"/work/{session_id}", source="startup")
    seed.hook_from(server, token, body, repository=repository, host=host)


def test_a_teams_reviewer_sees_its_sessions_and_their_waits_first(agentboard_server, chromium):
    server = agentboard_server
    seed.add_owner(server, "sam", "Sam Okafor")
    ana = seed.add_owner(server, "ana", "Ana Lima")
    start(server, server.token, "shop-1", "git@github.com:acme/shop.git", "dana-laptop")
    start(server, ana, "infra-1", "git@github.com:acme/infra.git", "ana-box")

    lead = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    login(lead, server)
    lead.goto(f"{server.url}/teams/")
    lead.get_by_label("Name").fill("Shop")
    lead.get_by_role("button", name="Create team").click()
    lead.get_by_label("Add by user name").fill("sam")
    lead.locator("#member-role").select_option("reviewer")
    lead.locator(".add-member button").click()
    lead.wait_for_selector(".team-members >> text=Sam Okafor")
    lead.goto(f"{server.url}/teams/")
    lead.get_by_label("Name").fill("Infra")
    lead.get_by_role("button", name="Create team").click()
    for project, team in (("shop", "Shop"), ("infra", "Infra")):
        lead.goto(f"{server.url}/projects/")
        lead.get_by_role("link", name=project, exact=True).click()
        lead.get_by_label("Owned by").select_option(label=team)
        lead.locator("#project-team ~ button").click()
        lead.wait_for_selector(f"text={project} now belongs to {team}.")

    context = chromium.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    sam = context.new_page()
    login(sam, server, username="sam", password=PASSWORD)
    sam.wait_for_selector("#connection[data-state=live]")
    listed = sam.locator("#session-list").inner_text()
    assert "dana-laptop" in listed or "shop" in listed
    assert "infra" not in listed.lower()
    sam.evaluate("window.__marker = 'not reloaded'")

    seed.hook_from(  # something of the other team waits: nothing of it reaches sam
        server, ana, seed.hook_body("UserPromptSubmit", "infra-1", "/work/infra-1", prompt="x")
    )
    seed.submit_plan(server, "shop-1", "# Cache the price list\n\nKeep it for an hour.")
    sam.wait_for_function(
        "() => { const row = document.querySelector('#session-list .session-row');"
        " return row && row.dataset.waiting === 'true'; }"
    )
    # The header's count is the reviewer's own message, apart from the overview's row: it may
    # come a moment after the row.
    sam.wait_for_function(
        "() => document.getElementById('plans-waiting').dataset.count === '1'", timeout=5000
    )
    assert sam.evaluate("window.__marker") == "not reloaded"
    assert "infra" not in sam.locator("#session-list").inner_text().lower()
    screenshot(sam, "teams-reviewer-overview-dark-phone")
    context.close()
