"""The inbox in a real browser: held permission requests arrive live, are answered by keyboard
on a desktop and by touch on a phone, and each held hook gets Claude Code's answer."""

from __future__ import annotations

import copy
import json
import threading
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import login, screenshot
from tests.liveserver import LiveServer

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude-code"


def payload(name: str, **changes) -> dict:
    data = copy.deepcopy(json.loads((FIXTURES / name).read_text()))
    data.update(changes)
    return data


class HeldHook(threading.Thread):
    """One Claude Code HTTP hook, waiting in its own thread for the board's answer."""

    def __init__(self, server: LiveServer, body: dict) -> None:
        super().__init__(daemon=True)
        self.server, self.body = server, body
        self.answer: dict | None = None

    def run(self) -> None:
        request = urllib.request.Request(
            f"{self.server.url}/hooks/claude-code",
            data=json.dumps(self.body).encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {self.server.token}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            self.answer = json.load(response)

    def decision(self) -> dict:
        self.join(20)
        assert self.answer is not None, "the held hook was never answered"
        return self.answer["hookSpecificOutput"]["decision"]


def hold(server: LiveServer, page, body: dict, count: int) -> HeldHook:
    """Send a request and wait until the open inbox shows `count` items."""
    held = HeldHook(server, body)
    held.start()
    page.wait_for_function(
        f"() => document.querySelectorAll('[data-inbox-item]').length === {count}"
    )
    return held


def notify(server: LiveServer, body: dict) -> None:
    request = urllib.request.Request(
        f"{server.url}/hooks/claude-code",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=10).close()


def test_a_lead_answers_every_kind_of_request_from_the_keyboard(agentboard_server, page):
    server = agentboard_server
    page.set_viewport_size({"width": 1440, "height": 900})
    login(page, server)
    page.goto(f"{server.url}/inbox/")
    page.wait_for_selector("#connection[data-state=live]")
    assert "Nothing is waiting on you" in page.locator("#inbox-list").inner_text()

    edit = hold(server, page, payload("permission_request_edit.json"), 1)
    bash_a = hold(server, page, payload("permission_request_bash.json", session_id="sess-a"), 2)
    bash_b = hold(
        server,
        page,
        payload(
            "permission_request_bash.json",
            session_id="sess-b",
            agent_id="b1c2d3e4",
            agent_type="general-purpose",
        ),
        3,
    )
    fetch = hold(server, page, payload("permission_request_web_fetch.json", session_id="sess-c"), 4)
    notify(server, payload("notification_idle.json", session_id="sess-docs", cwd="/home/dev/docs"))
    page.wait_for_function("() => document.querySelectorAll('[data-inbox-item]').length === 5")
    page.wait_for_function("() => document.title === '(5) Inbox · Agentboard'")
    assert page.locator("#plans-waiting").inner_text() == "5 waiting on you"

    bash_row = page.locator("[data-inbox-item][data-kind=permission]").nth(1)
    assert "npm run test -- --watch=false" in bash_row.locator(".inbox-headline").inner_text()
    assert "2 identical" in bash_row.inner_text()
    subagent_row = page.locator("[data-inbox-item][data-kind=permission]").nth(2)
    assert "counts as a denial" in subagent_row.inner_text()
    terminal_row = page.locator("[data-inbox-item][data-kind=terminal]")
    assert "Waiting for your input in its terminal" in terminal_row.inner_text()

    edit_row = page.locator("[data-inbox-item][data-kind=permission]").first
    edit_row.locator("summary").click()
    assert edit_row.locator(".diff-line.is-add").count() == 2
    assert "+2" in edit_row.inner_text() and "\u22121" in edit_row.inner_text()
    screenshot(page, "inbox-desktop-light")
    page.emulate_media(color_scheme="dark")
    screenshot(page, "inbox-desktop-dark")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "inbox-phone-dark")
    page.emulate_media(color_scheme="light")
    screenshot(page, "inbox-phone-light")
    page.set_viewport_size({"width": 1440, "height": 900})
    edit_row.locator("summary").click()

    # A on the oldest: the choices open first, then A again remembers Claude Code's suggestion.
    page.keyboard.press("Shift+KeyA")
    assert edit_row.get_by_text("Choose what to remember").is_visible()
    page.keyboard.press("Escape")
    page.keyboard.press("Shift+KeyA")
    decision = edit.decision()
    assert decision["behavior"] == "allow"
    assert decision["updatedInput"] == payload("permission_request_edit.json")["tool_input"]
    assert decision["updatedPermissions"] == [
        {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
    ]

    # The two identical Bash requests, selected with x and denied together with a message.
    page.wait_for_function("() => document.querySelectorAll('[data-inbox-item]').length === 4")
    # The list was re-rendered by the decision: the keys act once the next row is current.
    page.wait_for_function(
        "() => document.querySelector('[data-inbox-item].is-current')"
        " === document.querySelector('[data-inbox-item]')"
    )
    page.keyboard.press("x")
    page.wait_for_function(
        "() => document.querySelector('[data-bulk-count]').textContent"
        " === '1 identical request selected'"
    )
    page.keyboard.press("j")
    page.keyboard.press("x")
    page.wait_for_function(
        "() => document.querySelector('[data-bulk-count]').textContent"
        " === '2 identical requests selected'"
    )
    page.keyboard.press("d")
    page.wait_for_function("() => document.activeElement.id === 'bulk-message'")
    page.keyboard.type("Run only the changed test file.")
    page.keyboard.press("Escape")
    page.wait_for_function(
        "() => document.getElementById('bulk-message').value === 'Run only the changed test file.'"
        " && document.activeElement === document.body"
    )
    page.keyboard.press("d")
    for held in (bash_a, bash_b):
        decision = held.decision()
        assert decision["behavior"] == "deny"
        assert decision["message"].endswith("Their message:\nRun only the changed test file.")

    # Deny and stop on the web fetch.
    page.wait_for_function("() => document.querySelectorAll('[data-inbox-item]').length === 2")
    page.keyboard.press("Shift+KeyD")
    decision = fetch.decision()
    assert (decision["behavior"], decision["interrupt"]) == ("deny", True)

    page.wait_for_function("() => document.title === '(1) Inbox · Agentboard'")
    decided = page.locator(".decided-row")
    assert decided.count() == 4
    assert "Denied by lead" in decided.first.inner_text()
    screenshot(page, "inbox-desktop-decided")


def test_a_lead_answers_on_a_phone_by_touch(agentboard_server, chromium):
    server = agentboard_server
    context = chromium.new_context(viewport={"width": 390, "height": 844}, has_touch=True)
    page = context.new_page()
    try:
        login(page, server)
        page.goto(f"{server.url}/inbox/")
        page.wait_for_selector("#connection[data-state=live]")
        first = hold(server, page, payload("permission_request_bash.json"), 1)
        second = hold(server, page, payload("permission_request_mcp.json"), 2)

        row = page.locator("[data-inbox-item]").first
        row.get_by_role("button", name="Allow").tap()
        assert first.decision()["behavior"] == "allow"

        page.wait_for_function("() => document.querySelectorAll('[data-inbox-item]').length === 1")
        row = page.locator("[data-inbox-item]").first
        assert "github · create_issue" in row.inner_text()
        row.get_by_role("button", name="Deny", exact=True).tap()
        message = row.locator("textarea[name=message]")
        assert message.evaluate("element => element === document.activeElement")
        message.fill("File it in the tracker by hand.")
        screenshot(page, "inbox-phone-deny")
        row.get_by_role("button", name="Deny", exact=True).tap()
        decision = second.decision()
        assert decision["behavior"] == "deny"
        assert decision["message"].endswith("File it in the tracker by hand.")
        page.wait_for_selector("text=Nothing is waiting on you")
    finally:
        context.close()
