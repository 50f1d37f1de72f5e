"""Search in the browser: "/" anywhere goes to the box, results come grouped by kind with the
matching words marked, each a link to its place."""

from __future__ import annotations

import pytest

from tests.conftest import login, screenshot
from tests.e2e import seed
from tests.e2e.test_board_live import put_todos

pytestmark = pytest.mark.browser

SESSION = "sess-search"


@pytest.mark.parametrize("scheme,width,height", [("light", 1440, 900), ("dark", 390, 844)])
def test_slash_searches_everything_and_a_result_leads_to_its_place(
    agentboard_server, chromium, scheme, width, height
):
    server = agentboard_server
    put_todos(server, SESSION, SESSION, [
        {"content": "Fix the failing build", "status": "in_progress", "activeForm": "Fixing"},
    ])  # fmt: skip
    seed.seed_steps(server, SESSION, running=False)
    context = chromium.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
    page = context.new_page()
    try:
        login(page, server)
        page.wait_for_selector("#connection[data-state=live]")
        page.keyboard.press("/")
        assert page.evaluate("document.activeElement.id") == "header-search"
        page.keyboard.type("builds")
        page.keyboard.press("Enter")
        page.wait_for_url("**/search/?q=builds")
        groups = page.locator(".search-group h2").all_inner_texts()
        assert [g.split(" (")[0] for g in groups[:2]] == ["Todo lists", "Tool steps"]
        assert page.locator(".search-result mark").first.inner_text().lower() == "build"
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        screenshot(page, f"search-{scheme}-{width}")

        page.locator(".search-group:has(h2:text('Tool steps')) a.result-title").first.click()
        page.wait_for_selector("#step-detail")
        assert "make build" in page.locator("#step-detail").inner_text()
    finally:
        context.close()
