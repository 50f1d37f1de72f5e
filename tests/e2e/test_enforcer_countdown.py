"""The continuation countdown as the lead sees it: a toast that counts down, and Cancel."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.request

import pytest

from tests.conftest import login, screenshot
from tests.e2e import seed
from tests.e2e.test_board_live import put_todos

pytestmark = pytest.mark.browser

SESSION = "5b3f0c1e-7a7d-4f63-9c8e-2f1d9a0b6c11"
UNFINISHED = [
    {"content": "Store the theme", "status": "completed", "activeForm": "Storing the theme"},
    {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"},
    {"content": "Update the changelog", "status": "pending", "activeForm": "Updating"},
]


def post_stop_hook(server) -> tuple[dict, float]:
    """Send a Stop hook as Claude Code would; returns its answer and how long it was held."""
    payload = {
        "session_id": SESSION,
        "transcript_path": f"/home/dev/.claude/projects/-home-dev-shop/{SESSION}.jsonl",
        "cwd": "/home/dev/shop",
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "background_tasks": [],
    }
    request = urllib.request.Request(
        f"{server.url}/hooks/claude-code",
        data=json.dumps(payload).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response), time.monotonic() - started


class HookInBackground(threading.Thread):
    def __init__(self, server) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.answer: dict | None = None
        self.held = 0.0

    def run(self) -> None:
        self.answer, self.held = post_stop_hook(self.server)


@pytest.fixture
def slow_countdown_server(server_factory):
    return server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "6"})


def test_the_lead_watches_the_countdown_and_cancels_it(slow_countdown_server, page):
    server = slow_countdown_server
    put_todos(server, SESSION, SESSION, UNFINISHED)
    login(page, server)
    page.goto(f"{server.url}/sessions/{SESSION}/")
    page.wait_for_selector("#connection[data-state=live]")

    hook = HookInBackground(server)
    hook.start()
    toast = page.locator("article.card .toast")
    toast.wait_for()
    assert "(2 tasks left)" in toast.inner_text()
    # A clock, "0:06", ticking down.
    first = toast.locator(".countdown-number").inner_text()
    assert re.fullmatch(r"0:0[56]", first)
    page.wait_for_function(
        f"() => document.querySelector('.toast .countdown-number').textContent < '{first}'"
    )
    screenshot(page, "enforcer-countdown")

    page.get_by_role("button", name="Cancel the continuation of main").click()
    hook.join(timeout=10)
    assert hook.answer == {}
    assert hook.held < 6
    toast.wait_for(state="detached")
    assert "Countdown cancelled by lead" in page.locator("#history").inner_text()


def test_without_a_cancel_the_agent_is_continued(server_factory, page):
    server = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "1"})
    put_todos(server, SESSION, SESSION, UNFINISHED)
    login(page, server)
    page.goto(f"{server.url}/sessions/{SESSION}/")
    page.wait_for_selector("#connection[data-state=live]")

    answer, _ = post_stop_hook(server)
    assert answer["decision"] == "block"
    assert "Status: 1/3 completed, 2 remaining" in answer["reason"]
    page.wait_for_function(
        "() => document.querySelector('#history').innerText.includes('Continued')"
    )
    assert page.locator("article.card .toast").count() == 0


def test_during_the_countdown_the_card_waits_and_once_cancelled_it_is_idle(
    slow_countdown_server, page
):
    server = slow_countdown_server
    put_todos(server, SESSION, SESSION, UNFINISHED)
    call = {"tool_name": "Bash", "tool_input": {"command": "pytest"}, "tool_use_id": "toolu_1"}
    seed.hook(server, "PreToolUse", SESSION, cwd="/home/dev/shop", **call)
    seed.hook(server, "PostToolUse", SESSION, cwd="/home/dev/shop", tool_response={}, **call)
    login(page, server)
    page.goto(f"{server.url}/sessions/{SESSION}/")
    page.wait_for_selector("#connection[data-state=live]")
    line = page.locator("article.card [data-now]")
    assert line.get_attribute("data-now") == "thinking"

    hook = HookInBackground(server)
    hook.start()
    page.locator("article.card .toast").wait_for()
    assert line.count() == 0  # waiting on the countdown, not "Thinking"

    page.get_by_role("button", name="Cancel the continuation of main").click()
    hook.join(timeout=10)
    page.locator("article.card [data-now=idle]").wait_for()
    assert line.inner_text().startswith("Idle · ")
