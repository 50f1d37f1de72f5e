"""No decision happens by accident: a rejection needs words, approving with auto-accept asks
first, and every decision in the browser can be undone for a few seconds before the agent
hears of it, on every page that shows it. Plan titles read as plain text everywhere."""

from __future__ import annotations

import time

import pytest
from websockets.exceptions import ConnectionClosed

from tests.conftest import login, screenshot
from tests.e2e.test_accessibility import violations
from tests.e2e.test_inbox import hold, payload
from tests.e2e.test_plan_review import agent_socket, exit_plan_mode, next_frame

pytestmark = pytest.mark.browser

UNDO_SECONDS = 12
PLAN = """# Add `GET /orders` **paging**

1. Cursor paging with `?after=<id>`
2. Keep the response shape
"""


@pytest.fixture
def server(server_factory):
    return server_factory(env={"AGENTBOARD_UNDO_SECONDS": str(UNDO_SECONDS)})


def look_at_every_size(page, name: str) -> list[str]:
    """Screenshots at 1440x900 and 390x844, light and dark; the serious axe findings."""
    problems = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for size, viewport in (("desktop", (1440, 900)), ("phone", (390, 844))):
            page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
            screenshot(page, f"{name}-{scheme}-{size}")
            problems += [f"{name} ({scheme}, {size}): {p}" for p in violations(page)]
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1440, "height": 900})
    return problems


def nothing_arrives(agent, seconds: float) -> None:
    try:
        frame = agent.recv(timeout=seconds)
    except TimeoutError:
        return
    except ConnectionClosed:
        raise
    raise AssertionError(f"the agent was sent {frame!r} inside the undo window")


def test_a_plan_decision_waits_out_its_undo_window_on_every_page(server, chromium):
    lead_context = chromium.new_context(viewport={"width": 1440, "height": 900})
    other_context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page, other = lead_context.new_page(), other_context.new_page()
    login(page, server)
    login(other, server)
    with agent_socket(server) as agent:
        agent.send(exit_plan_mode(PLAN, frame_id="rev1"))
        plan_id = next_frame(agent)["result"]["id"]

        # The title is plain text: no backticks or stars in the heading, the tab or the inbox.
        other.goto(f"{server.url}/inbox/")
        assert "Add GET /orders paging" in other.locator(".inbox-headline").inner_text()
        page.goto(f"{server.url}/plans/{plan_id}/")
        page.wait_for_selector("#connection[data-state=live]")
        assert page.locator("h1").inner_text() == "Add GET /orders paging"
        assert page.title() == "(1) Add GET /orders paging · rev 1 · Agentboard"
        other.goto(f"{server.url}/plans/{plan_id}/")
        other.wait_for_selector("#connection[data-state=live]")

        # Approve with auto-accept has its own key and asks first; Caps Lock's "A" does nothing.
        page.keyboard.press("Shift+KeyA")
        page.keyboard.press("e")
        dialog = page.get_by_role("dialog", name="Approve and auto-accept edits?")
        dialog.wait_for()
        assert "without asking you first" in dialog.inner_text()
        assert violations(page) == []
        screenshot(page, "plan-review-confirm-auto-accept")
        page.keyboard.press("Escape")
        dialog.wait_for(state="hidden")
        assert not page.locator("#staged-decision").is_visible()

        # Reject with an empty box asks for words; then it is staged, not sent.
        page.keyboard.press("r")
        assert page.get_by_text("comments alone are not enough").is_visible()
        page.get_by_label("Notes or feedback").fill("Offsets skip rows; use cursors.")
        page.keyboard.press("Escape")
        page.keyboard.press("r")
        staged = page.locator("#staged-decision")
        staged.get_by_text("Rejected by lead").wait_for()
        assert "not sent yet; sends in 0:" in staged.inner_text()
        assert not page.get_by_role("button", name="Reject").is_visible()
        # Every other browser on the page sees it at once, with the same Undo.
        other.locator("#staged-decision").get_by_text("Rejected by lead").wait_for()
        assert page.title() == "Add GET /orders paging · rev 1 · Agentboard"
        assert look_at_every_size(page, "plan-review-staged") == []

        # The queue lists it as decided, not sent yet, with its own Undo.
        other.goto(f"{server.url}/plans/")
        staged_row = other.locator(f"#plan-row-{plan_id}.is-staged")
        assert "Rejected by lead — sends in 0:" in staged_row.inner_text()
        screenshot(other, "plan-queue-staged")
        other.go_back()
        other.wait_for_selector("#connection[data-state=live]")

        # Undo from the other browser: both pages wait again, and the agent heard nothing.
        other.locator("#staged-decision").get_by_role("button", name="Undo").click()
        page.locator("#staged-decision").wait_for(state="hidden")
        other.locator("#staged-decision").wait_for(state="hidden")
        assert page.get_by_role("button", name="Reject").is_visible()
        nothing_arrives(agent, UNDO_SECONDS + 1)
        page.wait_for_function("() => document.title.startsWith('(1) ')")

        # u undoes from the keyboard too.
        page.keyboard.press("a")
        page.locator("#staged-decision").get_by_text("Approved by lead").wait_for()
        page.keyboard.press("u")
        page.locator("#staged-decision").wait_for(state="hidden")
        other.locator("#staged-decision").wait_for(state="hidden")

        # Approve, and leave it: the agent hears of it when the window closes, not before.
        page.keyboard.press("a")
        decided_at = time.monotonic()
        page.locator("#staged-decision").get_by_text("Approved by lead").wait_for()
        nothing_arrives(agent, UNDO_SECONDS - 1.5)
        approved = next_frame(agent)
        assert time.monotonic() - decided_at >= UNDO_SECONDS - 0.5
        assert (approved["type"], approved["plan"]["status"]) == ("plan_decided", "approved")
        page.wait_for_selector("#decision-panel.is-approved")
        other.wait_for_selector("#decision-panel.is-approved")
    lead_context.close()
    other_context.close()


def test_a_permission_answer_in_the_inbox_can_be_undone_before_it_is_sent(server, page):
    page.set_viewport_size({"width": 1440, "height": 900})
    login(page, server)
    page.goto(f"{server.url}/inbox/")
    page.wait_for_selector("#connection[data-state=live]")
    bash = hold(server, page, payload("permission_request_bash.json"), 1)
    row = page.locator("[data-inbox-item]").first

    row.get_by_role("button", name="Allow").click()
    staged = page.locator("[data-inbox-item].is-staged")
    staged.get_by_text("Allowed by lead").wait_for()
    assert "not sent yet; sends in 0:" in staged.inner_text()
    page.wait_for_function("() => document.title === 'Inbox · Agentboard'")
    assert look_at_every_size(page, "inbox-staged") == []

    staged.get_by_role("button", name="Undo").click()
    page.locator("[data-inbox-item]:not(.is-staged)").get_by_role("button", name="Allow").wait_for()
    page.wait_for_function("() => document.title === '(1) Inbox · Agentboard'")
    time.sleep(UNDO_SECONDS + 1)
    assert bash.answer is None and bash.is_alive()

    page.locator("[data-inbox-item]").first.get_by_role("button", name="Allow").click()
    decided_at = time.monotonic()
    page.locator("[data-inbox-item].is-staged").wait_for()
    # The session's board says so too, with the same Undo, in place of Allow and Deny.
    session_id = payload("permission_request_bash.json")["session_id"]
    page.goto(f"{server.url}/sessions/{session_id}/")
    banner = page.locator("#session-attention")
    assert "Allowed by lead — not sent yet" in banner.inner_text()
    assert banner.get_by_role("button", name="Undo").is_visible()
    assert not banner.get_by_role("button", name="Allow").count()
    screenshot(page, "board-staged-light-desktop")
    assert bash.decision()["behavior"] == "allow"
    assert time.monotonic() - decided_at >= UNDO_SECONDS - 0.5
    page.wait_for_function("() => !document.querySelector('[data-inbox-item]')")
