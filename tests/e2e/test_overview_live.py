from __future__ import annotations

import pytest

from tests.conftest import login, screenshot
from tests.e2e.test_board_live import put_todos

# Live delivery over the channel layer: also run on PostgreSQL + Redis (`.ci/run`).
pytestmark = [pytest.mark.browser, pytest.mark.live]


def test_the_overview_row_moves_along_and_new_sessions_appear_without_reload(
    agentboard_server, page
):
    put_todos(
        agentboard_server,
        "sess-shop",
        "sess-shop",
        [
            {"content": "Add a toggle", "status": "in_progress", "activeForm": "Adding a toggle"},
            {"content": "Run the tests", "status": "pending"},
        ],
    )
    login(page, agentboard_server)
    page.wait_for_selector("#connection[data-state=live]")
    row = page.locator(".session-row").first
    assert "0/2" in row.locator(".count").inner_text()
    page.evaluate("window.__marker = 'not reloaded'")

    put_todos(
        agentboard_server,
        "sess-shop",
        "sess-shop",
        [
            {"content": "Add a toggle", "status": "completed"},
            {
                "content": "Run the tests",
                "status": "in_progress",
                "activeForm": "Running the tests",
            },
        ],
    )
    page.wait_for_function(
        "() => document.querySelector('.session-row .count').innerText.trim() === '1/2'"
    )
    assert "Running the tests" in row.locator(".activity").inner_text()

    put_todos(
        agentboard_server,
        "sess-docs",
        "sess-docs",
        [
            {
                "content": "Write the guide",
                "status": "in_progress",
                "activeForm": "Writing the guide",
            },
        ],
    )
    page.wait_for_function("() => document.querySelectorAll('.session-row').length === 2")
    assert "Writing the guide" in page.locator(".session-row").first.inner_text()
    assert page.evaluate("window.__marker") == "not reloaded"
    screenshot(page, "overview-live")


def test_a_collapsed_card_stays_collapsed_after_reload_and_live_updates(agentboard_server, page):
    put_todos(
        agentboard_server,
        "sess-fold",
        "sess-fold",
        [
            {"content": "Add a toggle", "status": "in_progress", "activeForm": "Adding a toggle"},
        ],
    )
    login(page, agentboard_server)
    page.goto(f"{agentboard_server.url}/sessions/sess-fold/")
    page.wait_for_selector("#connection[data-state=live]")
    card = page.locator("article.card").first
    toggle = card.locator(".collapse-toggle")
    assert card.locator(".todo-list").is_visible()

    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "false"
    assert not card.locator(".todo-list").is_visible()

    page.reload()
    page.wait_for_selector("#connection[data-state=live]")
    assert card.locator(".collapse-toggle").get_attribute("aria-expanded") == "false"
    assert not card.locator(".todo-list").is_visible()

    put_todos(
        agentboard_server,
        "sess-fold",
        "sess-fold",
        [
            {"content": "Add a toggle", "status": "completed"},
            {
                "content": "Run the tests",
                "status": "in_progress",
                "activeForm": "Running the tests",
            },
        ],
    )
    page.wait_for_function(
        "() => document.querySelector('article.card').innerText.includes('(1/2)')"
    )
    assert not card.locator(".todo-list").is_visible()

    card.locator(".collapse-toggle").click()
    assert card.locator(".todo-list").is_visible()
    page.reload()
    assert card.locator(".todo-list").is_visible()
