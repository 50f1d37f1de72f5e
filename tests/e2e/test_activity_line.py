"""The activity line: what each agent is doing now, on its card and its session's row, live."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.conftest import login, screenshot
from tests.e2e.test_board_live import put_todos

pytestmark = pytest.mark.browser

SESSION = "sess-activity"
SUBAGENT = "a9f3c2d1e0b4"


def hook(server, event: str, tool_use_id: str, **fields) -> None:
    body = {
        "session_id": SESSION,
        "cwd": "/home/dev/shop",
        "hook_event_name": event,
        "permission_mode": "default",
        "tool_use_id": tool_use_id,
        "tool_name": "Bash",
        "tool_input": {"command": "pytest tests/api"},
        **fields,
    }
    request = urllib.request.Request(
        f"{server.url}/hooks/claude-code",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def seed(server) -> None:
    put_todos(
        server,
        SESSION,
        SESSION,
        [
            {"content": "Fix the API", "status": "in_progress", "activeForm": "Fixing the API"},
            {"content": "Ship it", "status": "pending"},
        ],
    )
    put_todos(
        server,
        "sess-other",
        "sess-other",
        [{"content": "Write docs", "status": "in_progress", "activeForm": "Writing docs"}],
    )
    hook(server, "SubagentStart", "", agent_id=SUBAGENT, agent_type="Explore")
    edit = {
        "file_path": "/home/dev/shop/orders/views.py",
        "old_string": "a\n",
        "new_string": "b\nc\n",
    }
    hook(server, "PreToolUse", "toolu_edit", agent_id=SUBAGENT, agent_type="Explore",
         tool_name="Edit", tool_input=edit)  # fmt: skip
    hook(server, "PreToolUse", "toolu_pytest")


@pytest.mark.parametrize("width,height", [(1440, 900), (390, 844)])
def test_the_row_and_the_cards_say_what_each_agent_is_doing_live(
    agentboard_server, chromium, width, height
):
    seed(agentboard_server)
    context = chromium.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        login(page, agentboard_server)
        page.wait_for_selector("#connection[data-state=live]")
        row = page.locator(f".session-row:has(a[href='/sessions/{SESSION}/'])")
        now = row.locator("[data-now]")
        assert now.get_attribute("data-now") == "running"
        assert now.inner_text().startswith("▶ Running pytest tests/api · ")
        screenshot(page, f"activity-overview-{width}")

        page.goto(f"{agentboard_server.url}/sessions/{SESSION}/")
        page.wait_for_selector("#connection[data-state=live]")
        main, sub = page.locator("article.card").all()[:2]
        assert main.locator("[data-now]").inner_text().startswith("▶ Running pytest tests/api")
        sub_line = sub.locator("[data-now]").inner_text()
        assert sub_line.startswith("▶ Editing orders/views.py +2 \N{MINUS SIGN}1")
        page.evaluate("window.__marker = 'not reloaded'")

        hook(agentboard_server, "PostToolUse", "toolu_pytest", tool_response={"stdout": "ok"})
        page.wait_for_function(
            "() => document.querySelector('article.card [data-now]').dataset.now === 'thinking'"
        )
        assert main.locator("[data-now]").inner_text().startswith("Thinking · ")
        assert page.evaluate("window.__marker") == "not reloaded"
        screenshot(page, f"activity-board-{width}")

        page.goto(f"{agentboard_server.url}/")
        # The session's latest step is now the subagent's edit, still running.
        assert "Editing orders/views.py" in row.locator("[data-now]").inner_text()
    finally:
        context.close()


@pytest.mark.live
def test_the_line_says_idle_the_moment_the_turn_ends_on_every_open_page(agentboard_server, page):
    server = agentboard_server
    hook(server, "PreToolUse", "toolu_pytest")
    hook(server, "PostToolUse", "toolu_pytest", tool_response={"stdout": "ok"})
    login(page, server)
    board = page.context.new_page()
    board.goto(f"{server.url}/sessions/{SESSION}/")
    for each in (page, board):
        each.wait_for_selector("#connection[data-state=live]")
    row = page.locator(f".session-row:has(a[href='/sessions/{SESSION}/']) [data-now]")
    card = board.locator("article.card [data-now]").first
    assert row.get_attribute("data-now") == card.get_attribute("data-now") == "thinking"

    hook(server, "Stop", "", stop_hook_active=False)

    for line in (row, card):
        line.and_(line.page.locator("[data-now=idle]")).wait_for(timeout=3000)
        assert line.inner_text().startswith("Idle · ")
        assert line.locator("time").get_attribute("title").startswith("Its turn ended ")
    screenshot(board, "activity-turn-ended")

    hook(server, "UserPromptSubmit", "", prompt="Now write the changelog")
    for line in (row, card):
        line.and_(line.page.locator("[data-now=thinking]")).wait_for(timeout=3000)
