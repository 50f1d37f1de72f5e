"""A session's timeline in the browser: lanes of steps, a step's detail, filters in the
address, the list view, and a new step arriving live."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.conftest import login, screenshot
from tests.e2e import seed
from tests.e2e.test_board_live import put_todos

pytestmark = pytest.mark.browser

SESSION = "sess-timeline"


@pytest.fixture
def session(agentboard_server) -> str:
    put_todos(
        agentboard_server,
        SESSION,
        SESSION,
        [{"content": "Fix the build", "status": "in_progress", "activeForm": "Fixing the build"}],
    )
    seed.seed_steps(agentboard_server, SESSION)
    return SESSION


def lanes(page) -> dict[str, int]:
    found = {}
    for lane in page.locator(".lane").all():
        found[lane.locator(".lane-label a").inner_text()] = lane.locator("a.mark-link").count()
    return found


def test_the_timeline_shows_each_agent_as_a_lane_and_a_step_in_detail(
    agentboard_server, chromium, session
):
    server = agentboard_server
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    try:
        login(page, server)
        page.goto(f"{server.url}/sessions/{session}/")
        page.get_by_role("link", name="Timeline").click()
        page.wait_for_url(f"**/sessions/{session}/timeline/")
        page.wait_for_selector("#connection[data-state=live]")
        assert lanes(page) == {"main": 5, "Explore": 2}
        # The subagent's lane sits under its parent, indented.
        assert page.locator(".lane").nth(1).get_attribute("class") == "lane depth-1"

        failed = page.locator("a.mark-link[aria-label^='Bash make build: failed']").first
        # Marks made within a second overlap on the axis: opened as a keyboard user would.
        failed.focus()
        page.keyboard.press("Enter")
        detail = page.locator("#step-detail")
        detail.wait_for()
        assert "make build" in detail.inner_text()
        assert "make: *** [build] Error 2" in detail.inner_text()
        assert page.evaluate("document.activeElement.id") == "step-detail-title"
        assert re.search(r"[?&]step=\d+", page.url)
        screenshot(page, "timeline-desktop-light")

        # A new step arrives while the page is open: its mark appears without a reload.
        seed.hook(server, "PreToolUse", session, tool_use_id="s-live", tool_name="Bash",
                  tool_input={"command": "make lint"})  # fmt: skip
        page.wait_for_selector("a.mark-link[aria-label^='Bash make lint: running']")
        assert lanes(page)["main"] == 6
        assert detail.is_visible()  # the open detail stays open

        # Failures only: the address keeps the filter, so the view can be bookmarked.
        page.get_by_label("Failures only").check()
        expect(page.locator("a.mark-link")).to_have_count(2)
        assert "failures=1" in page.url
        assert lanes(page) == {"main": 2}

        page.get_by_role("link", name="List").click()
        page.wait_for_selector("table.steps-table")
        rows = page.locator("table.steps-table tbody tr")
        assert rows.count() == 2
        assert all("failed" in rows.nth(n).inner_text() for n in range(2))
    finally:
        context.close()


def test_the_timeline_reads_on_a_phone_in_the_dark(agentboard_server, chromium, session):
    server = agentboard_server
    context = chromium.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = context.new_page()
    try:
        login(page, server)
        page.goto(f"{server.url}/sessions/{session}/timeline/")
        page.wait_for_selector("#connection[data-state=live]")
        # Nothing pushes the page sideways; the lanes take the phone's width.
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        track = page.locator(".lane-track").nth(1).bounding_box()
        assert track is not None and track["width"] > 300
        screenshot(page, "timeline-phone-dark")
        page.locator("a.mark-link").first.focus()
        page.keyboard.press("Enter")
        page.locator("#step-detail").wait_for()
        screenshot(page, "timeline-phone-dark-detail")
    finally:
        context.close()
