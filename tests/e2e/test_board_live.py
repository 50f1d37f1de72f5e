from __future__ import annotations

import json
import urllib.request

import pytest

from tests.conftest import login, screenshot

# Live delivery over the channel layer: also run on PostgreSQL + Redis (`.ci/run`).
pytestmark = [pytest.mark.browser, pytest.mark.live]


def put_todos(server, session_id: str, agent_id: str, todos: list[dict]) -> dict:
    request = urllib.request.Request(
        f"{server.url}/api/v1/sessions/{session_id}/agents/{agent_id}/todos",
        data=json.dumps({"todos": todos}).encode(),
        method="PUT",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def test_a_card_ticks_along_after_an_api_write_without_reload(agentboard_server, page):
    put_todos(
        agentboard_server,
        "sess-e2e",
        "sess-e2e",
        [
            {
                "content": "Add a dark mode toggle",
                "status": "in_progress",
                "activeForm": "Adding a dark mode toggle",
            },
            {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
        ],
    )
    login(page, agentboard_server)
    page.goto(f"{agentboard_server.url}/sessions/sess-e2e/")
    page.wait_for_selector("#connection[data-state=live]")
    card = page.locator("article.card").first
    assert "Tasks (0/2)" in card.inner_text()
    assert "Adding a dark mode toggle…" in card.locator(".is-in_progress strong").inner_text()
    page.evaluate("window.__marker = 'not reloaded'")

    put_todos(
        agentboard_server,
        "sess-e2e",
        "sess-e2e",
        [
            {
                "content": "Add a dark mode toggle",
                "status": "completed",
                "activeForm": "Adding a dark mode toggle",
            },
            {
                "content": "Run the tests",
                "status": "in_progress",
                "activeForm": "Running the tests",
            },
            {"content": "<script>window.__pwned = 1</script>", "status": "pending"},
        ],
    )
    page.wait_for_function(
        "() => document.querySelector('article.card').innerText.includes('Tasks (1/3)')"
    )
    assert page.evaluate("window.__marker") == "not reloaded"
    assert page.evaluate("window.__pwned") is None
    assert card.locator(".is-completed .text").inner_text() == "Add a dark mode toggle"
    assert "Running the tests…" in card.locator(".is-in_progress").inner_text()
    assert "Next: <script>" in card.locator(".next").inner_text()
    screenshot(page, "board-live")


def test_the_board_reconnects_after_a_server_restart_and_shows_what_it_missed(
    agentboard_server, page
):
    put_todos(
        agentboard_server,
        "sess-restart",
        "sess-restart",
        [
            {
                "content": "Write the migration",
                "status": "in_progress",
                "activeForm": "Writing the migration",
            },
        ],
    )
    login(page, agentboard_server)
    page.goto(f"{agentboard_server.url}/sessions/sess-restart/")
    page.wait_for_selector("#connection[data-state=live]")

    agentboard_server.stop()
    page.wait_for_selector("#connection[data-state=reconnecting]")
    assert "reconnecting" in page.locator("#connection").inner_text()

    agentboard_server.start()
    # Written while the page had no socket: it must appear once the page reconnects.
    put_todos(
        agentboard_server,
        "sess-restart",
        "sess-restart",
        [
            {
                "content": "Write the migration",
                "status": "completed",
                "activeForm": "Writing the migration",
            },
            {"content": "Deploy", "status": "in_progress", "activeForm": "Deploying"},
        ],
    )
    page.wait_for_selector("#connection[data-state=live]", timeout=60_000)
    page.wait_for_function(
        "() => document.querySelector('article.card').innerText.includes('Tasks (1/2)')"
    )
    assert "Deploying…" in page.locator("article.card .is-in_progress").inner_text()
