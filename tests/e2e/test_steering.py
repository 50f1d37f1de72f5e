"""Steering from the board in a real browser: `m` on a card opens the box, the server counts who
receives it, Send queues it and the card says "queued" by itself; the overview row and the box
on a desktop in light and on a phone in the dark, with no serious axe finding."""

from __future__ import annotations

import pytest

from tests.conftest import login, screenshot
from tests.e2e import seed
from tests.e2e.test_accessibility import violations

pytestmark = pytest.mark.browser

SESSION = "dana-steer"
SUBAGENT = "a4d2c8e1"


def task(content: str, status: str) -> dict:
    return {"content": content, "activeForm": f"{content} now", "status": status}


@pytest.fixture
def board(agentboard_server):
    server = agentboard_server
    seed.hook(server, "SessionStart", SESSION, cwd="/home/dana/shop", source="startup")
    seed.put_todos(
        server,
        SESSION,
        SESSION,
        [task("Add the theme toggle", "in_progress"), task("Run the tests", "pending")],
    )
    seed.put_todos(
        server, SESSION, SUBAGENT, [task("Look around", "in_progress")], agent_type="Explore"
    )
    return server


@pytest.mark.parametrize(
    ("name", "width", "height", "scheme"),
    [("steer-desktop-light", 1440, 900, "light"), ("steer-phone-dark", 390, 844, "dark")],
)
def test_m_on_a_card_messages_its_agent_and_the_card_says_queued(
    board, chromium, name, width, height, scheme
):
    context = chromium.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
    page = context.new_page()
    try:
        login(page, board)
        page.goto(f"{board.url}/sessions/{SESSION}/")
        page.wait_for_selector("#connection[data-state=live]")
        subagent = page.locator(f"article[data-collapse-key='{SESSION}/{SUBAGENT}']")
        subagent.locator(".card-title").hover()
        page.keyboard.press("m")

        dialog = page.locator("#steer-dialog")
        dialog.locator("textarea[name=text]").wait_for()
        assert dialog.locator("#steer-title").inner_text() == "Message Explore a4d2c8"
        assert dialog.locator("#steer-count").inner_text() == "1 agent will receive it."
        # Each scope says how many it reaches.
        dialog.get_by_label("Every running agent of this session (2 running)").check()
        page.wait_for_selector("#steer-count:text('2 agents will receive it.')")
        dialog.get_by_label("This agent (1 running)", exact=True).check()
        page.wait_for_selector("#steer-count:text('1 agent will receive it.')")
        dialog.locator("textarea[name=text]").focus()
        page.keyboard.type("Use the staging database, not production.")
        screenshot(page, f"{name}-box")
        assert violations(page) == []

        dialog.get_by_role("button", name="Send").click()
        dialog.locator(".steer-done").wait_for()
        assert "Queued for 1 agent" in dialog.locator(".steer-done").inner_text()
        page.keyboard.press("Escape")
        said = subagent.locator(".steer-said")
        said.wait_for()
        assert said.inner_text().endswith("· queued"), said.inner_text()
        assert "Use the staging database" in said.inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        screenshot(page, f"{name}-board")
        assert violations(page) == []

        page.goto(f"{board.url}/")
        row = page.locator(".session-row").first
        row.wait_for()
        row.hover()
        screenshot(page, f"{name}-overview")
        assert violations(page) == []
    finally:
        context.close()
