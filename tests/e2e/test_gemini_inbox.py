"""A Gemini CLI tool call held for the inbox, in a real browser: what the lead sees (no
"Always…", what an allow does), on a desktop and a phone, light and dark, without a serious
axe-core violation; a deny reaches the held hook as Gemini's BeforeTool answer."""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest

from tests.conftest import login, screenshot
from tests.e2e.test_accessibility import violations

pytestmark = pytest.mark.browser

SESSION_ID = "7d2c6b0e-9b8a-4e3f-a1c2-5f4e3d2c1b0a"


def before_tool(command: str) -> dict:
    """A BeforeTool as `agentboard gemini-hook --approvals` forwards it."""
    return {
        "session_id": SESSION_ID,
        "transcript_path": f"/home/dev/.gemini/tmp/shop/chats/session-{SESSION_ID}.json",
        "cwd": "/home/dev/shop",
        "hook_event_name": "BeforeTool",
        "timestamp": "2026-11-26T14:00:00.000Z",
        "tool_name": "run_shell_command",
        "tool_input": {"command": command, "description": "Cleans <the> build."},
        "agentboard_approvals": True,
    }


class HeldBeforeTool(threading.Thread):
    def __init__(self, server, body: dict) -> None:
        super().__init__(daemon=True)
        self.server, self.body = server, body
        self.answer: dict | None = None

    def run(self) -> None:
        request = urllib.request.Request(
            f"{self.server.url}/hooks/gemini",
            data=json.dumps(self.body).encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {self.server.token}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            self.answer = json.load(response)


def test_a_gemini_tool_call_is_denied_from_the_inbox(agentboard_server, page):
    server = agentboard_server
    page.set_viewport_size({"width": 1440, "height": 900})
    login(page, server)
    page.goto(f"{server.url}/inbox/")
    page.wait_for_selector("#connection[data-state=live]")
    held = HeldBeforeTool(server, before_tool("rm -rf build"))
    held.start()
    page.wait_for_function("() => document.querySelectorAll('[data-inbox-item]').length === 1")

    row = page.locator("[data-inbox-item][data-kind=permission]").first
    text = row.inner_text()
    assert "rm -rf build" in text
    assert "Allow lets the call go on to Gemini's own approval mode" in text
    assert row.get_by_role("button", name="Always…").count() == 0
    row.locator("summary").click()
    assert "always-allow" not in row.locator("summary").inner_text()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for name, size in (("desktop", (1440, 900)), ("phone", (390, 844))):
            page.set_viewport_size({"width": size[0], "height": size[1]})
            screenshot(page, f"inbox-gemini-{name}-{scheme}")
            assert violations(page) == [], (scheme, name)
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1440, "height": 900})

    row.get_by_role("textbox").first.fill("Not the shared build folder.")
    row.get_by_role("button", name="Deny").first.click()
    held.join(20)
    assert held.answer is not None, "the held hook was never answered"
    assert held.answer["decision"] == "deny"
    assert held.answer["reason"].endswith("Their message:\nNot the shared build folder.")
    assert "continue" not in held.answer

    page.goto(f"{server.url}/?client=gemini&state=all")
    assert "Gemini CLI" in page.locator("#session-list").inner_text()
