"""In a real browser: the overview filtered to one agent kind keeps updating live, showing
new sessions of that kind only."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.conftest import login, screenshot
from tests.e2e.test_board_live import put_todos
from tests.opencode.conftest import item, session_event, todo_event

pytestmark = pytest.mark.browser


def send_opencode(server, event: dict) -> dict:
    request = urllib.request.Request(
        f"{server.url}/hooks/opencode",
        data=json.dumps(event).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def test_the_overview_filtered_to_opencode_shows_new_opencode_sessions_live(
    agentboard_server, page
):
    send_opencode(agentboard_server, session_event("created", "ses_first", title="Dark mode"))
    send_opencode(
        agentboard_server, todo_event([item("Add the toggle", "in_progress")], "ses_first")
    )
    put_todos(agentboard_server, "claude-1", "claude-1", [{"content": "Fix", "status": "pending"}])
    login(page, agentboard_server)
    page.get_by_role("navigation", name="Agent kind").get_by_role("link", name="opencode").click()
    page.wait_for_url("**/?client=opencode")
    page.wait_for_selector("#connection[data-state=live]")
    assert page.locator(".session-row:visible").count() == 1

    put_todos(agentboard_server, "claude-2", "claude-2", [{"content": "Fix", "status": "pending"}])
    send_opencode(agentboard_server, session_event("created", "ses_second", title="Search page"))
    send_opencode(
        agentboard_server, todo_event([item("Index the pages", "in_progress")], "ses_second")
    )

    page.wait_for_function(
        "() => [...document.querySelectorAll('.session-row')].some("
        "r => r.innerText.includes('Search page'))"
    )
    visible = page.locator(".session-row:visible")
    assert visible.count() == 2
    assert set(visible.locator(".kind").all_inner_texts()) == {"opencode"}
    screenshot(page, "overview-opencode-filter")
    page.set_viewport_size({"width": 390, "height": 800})
    page.emulate_media(color_scheme="dark")
    screenshot(page, "overview-opencode-filter-phone-dark")
    page.goto(f"{agentboard_server.url}/sessions/ses_second/")
    screenshot(page, "board-opencode-phone-dark")
