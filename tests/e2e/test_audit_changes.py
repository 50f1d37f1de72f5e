"""The audit log in a browser: changes an admin makes on the teams, project, settings and team
rules pages appear as entries a security reviewer reads, each linked to what it concerns; the
page passes axe in light and dark, on a desktop and a phone."""

from __future__ import annotations

import pytest

from tests.conftest import login, screenshot
from tests.e2e import seed
from tests.e2e.test_accessibility import VIEWPORTS, violations
from tests.e2e.test_teams import start

pytestmark = pytest.mark.browser


@pytest.mark.timeout(240)
def test_the_changes_people_make_read_well_on_the_audit_page(agentboard_server, chromium):
    server = agentboard_server
    seed.add_owner(server, "sam", "Sam Okafor")
    start(server, server.token, "shop-1", "git@github.com:acme/shop.git", "dana-laptop")

    lead = chromium.new_context(viewport=VIEWPORTS["desktop"]).new_page()
    login(lead, server)
    lead.goto(f"{server.url}/teams/")
    lead.get_by_label("Name").fill("Shop")
    lead.get_by_role("button", name="Create team").click()
    lead.get_by_label("Add by user name").fill("sam")
    lead.locator("#member-role").select_option("member")
    lead.locator(".add-member button").click()
    lead.wait_for_selector(".team-members >> text=Sam Okafor")
    lead.locator(".team-members select").first.select_option("reviewer")
    lead.locator(".team-members select").first.evaluate("select => select.form.requestSubmit()")
    lead.wait_for_selector("text=is a reviewer of the team")
    lead.goto(f"{server.url}/projects/")
    lead.get_by_role("link", name="shop", exact=True).click()
    lead.get_by_label("Owned by").select_option(label="Shop")
    lead.locator("#project-team ~ button").click()
    lead.wait_for_selector("text=shop now belongs to Shop.")
    lead.goto(f"{server.url}/inbox/rules/")
    lead.locator("select[name=behavior]").select_option("allow")
    lead.locator("input[name=rule]").fill("Bash(npm test *)")
    lead.locator("input[name=project]").fill("shop")
    lead.locator("input[name=rule]").evaluate("input => input.form.requestSubmit()")
    # The page it goes back to is the one it was on: wait for the rule in its list.
    lead.locator(".rule-row[data-rule='Bash(npm test *)']").wait_for()
    lead.goto(f"{server.url}/settings/")
    lead.locator("input[name=label]").first.fill("laptop")
    lead.locator("input[name=label]").first.evaluate("input => input.form.requestSubmit()")
    lead.wait_for_selector("#new-token")

    lead.goto(f"{server.url}/audit/")
    rows = lead.locator("tbody tr").all_inner_texts()
    text = "\n".join(rows)
    for said in (
        "created an agent token",
        "token 'laptop' of",
        "added a team rule in shop",
        "allow Bash(npm test *) for project shop",
        "changed a project's settings in shop",
        "shop: team (none) → Shop",
        "Sam Okafor (sam): member → reviewer of Shop",
        "Sam Okafor (sam) as member added to Shop",
        "team Shop created",
    ):
        assert said in text, said
    assert "settings" in text and "teams page" in text and "project page" in text
    lead.get_by_role("link", name="team page").first.click()
    lead.wait_for_url(f"{server.url}/teams/*/")

    problems: list[str] = []
    for scheme in ("light", "dark"):
        for size, viewport in VIEWPORTS.items():
            context = chromium.new_context(viewport=viewport, color_scheme=scheme)
            page = context.new_page()
            login(page, server)
            page.goto(f"{server.url}/audit/")
            page.wait_for_selector("#connection[data-state=live]")
            problems += [f"{scheme}, {size}: {problem}" for problem in violations(page)]
            screenshot(page, f"audit-changes-{scheme}-{size}")
            context.close()
    assert problems == [], "\n".join(problems)
