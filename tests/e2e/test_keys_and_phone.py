"""A lead at the keyboard and on a phone: j/k and Enter walk the overview's rows (what waits
first), u undoes the inbox's last decision as on the plan review page, ? lists the keys of
every page; on a phone the header stays small, its whole menu is reachable, and a board shows
what waits on the lead in its first 300 px."""

from __future__ import annotations

import pytest

from tests.conftest import login, screenshot
from tests.e2e import seed
from tests.e2e.test_accessibility import HeldThroughTheTest, violations
from tests.e2e.test_inbox import payload

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}
CURRENT_ROW = "() => document.activeElement.closest('.session-row')?.id ?? null"


@pytest.fixture(scope="module")
def server(module_server_factory):
    # Decisions wait in their undo window for the whole module.
    return module_server_factory(env={"AGENTBOARD_UNDO_SECONDS": "600"})


@pytest.fixture(scope="module")
def seeded(server) -> seed.Seeded:
    seeded = seed.seed(server, sessions=6, agents=2)
    seed.seed_plans(server, seeded)
    return seeded


def open_page(chromium, server, viewport=DESKTOP, scheme="light"):
    context = chromium.new_context(viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    login(page, server)
    return context, page


def test_j_k_and_enter_walk_the_sessions_from_the_one_that_waits(server, seeded, chromium):
    context, page = open_page(chromium, server)
    page.wait_for_selector("#connection[data-state=live]")
    rows = page.locator(".session-row:visible")
    waiting = page.locator(".session-row.is-waiting:visible").first
    assert rows.first.get_attribute("id") == waiting.get_attribute("id")

    page.keyboard.press("j")
    assert page.evaluate(CURRENT_ROW) == rows.nth(0).get_attribute("id")
    assert rows.nth(0).evaluate("row => row.classList.contains('is-current')")
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    second = rows.nth(1)
    assert page.evaluate(CURRENT_ROW) == second.get_attribute("id")
    # Only one row looks selected.
    assert page.locator(".session-row.is-current").count() == 1
    # Typing in the filter box types: no row moves.
    page.locator("#session-search").focus()
    page.keyboard.type("jk")
    assert page.locator("#session-search").input_value() == "jk"
    page.locator("#session-search").fill("")
    second.locator(".session-link").focus()
    href = second.locator(".session-link").get_attribute("href")
    page.keyboard.press("Control+j")
    assert page.evaluate(CURRENT_ROW) == second.get_attribute("id")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{server.url}{href}")
    context.close()


def test_question_mark_lists_the_keys_of_the_page_and_escape_closes_it(server, seeded, chromium):
    for scheme in ("light", "dark"):
        for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            context, page = open_page(chromium, server, viewport, scheme)
            page.wait_for_selector("#connection[data-state=live]")
            page.keyboard.press("?")
            help_dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
            assert help_dialog.is_visible()
            text = help_dialog.inner_text()
            for words in ("Next session", "Previous session", "Open", "Search", "This help"):
                assert words in text, words
            assert violations(page) == []
            screenshot(page, f"keys-help-overview-{scheme}-{name}")
            page.keyboard.press("Escape")
            assert not help_dialog.is_visible()
            context.close()

    context, page = open_page(chromium, server)
    # Not while typing: a question mark in the search box is a question mark.
    page.locator("#session-search").fill("")
    page.locator("#session-search").press("?")
    assert not page.get_by_role("dialog", name="Keyboard shortcuts").is_visible()
    page.goto(f"{server.url}/inbox/")
    page.wait_for_selector("#connection[data-state=live]")
    page.keyboard.press("?")
    text = page.get_by_role("dialog", name="Keyboard shortcuts").inner_text()
    for words in ("Allow", "Deny", "Undo the last decision", "Search"):
        assert words in text, words
    assert "Next session" not in text
    page.keyboard.press("Escape")
    page.goto(f"{server.url}/settings/")
    page.keyboard.press("?")
    assert "Search" in page.get_by_role("dialog", name="Keyboard shortcuts").inner_text()
    context.close()


def test_u_in_the_inbox_undoes_the_last_decision(server, seeded, chromium):
    context, page = open_page(chromium, server)
    page.goto(f"{server.url}/inbox/")
    page.wait_for_selector("#connection[data-state=live]")
    before = page.locator("[data-inbox-item]").count()
    session = seeded.session_ids[0]
    for command in ("make first", "make second"):
        HeldThroughTheTest(
            server,
            payload(
                "permission_request_bash.json",
                session_id=session,
                tool_input={"command": command},
            ),
        ).start()
        before += 1
        page.wait_for_function(
            f"() => document.querySelectorAll('[data-inbox-item]').length === {before}"
        )
    for command in ("make first", "make second"):
        item = page.locator(f"[data-inbox-item]:has-text('{command}')")
        item.focus()
        item.locator("[data-shortcut=a]").click()
        item.locator("[data-undo]").wait_for()

    page.keyboard.press("u")
    second = page.locator("[data-inbox-item]:has-text('make second')")
    second.locator("[data-shortcut=a]").wait_for()
    first = page.locator("[data-inbox-item]:has-text('make first')")
    assert first.locator("[data-undo]").is_visible()
    context.close()


WAIT_TOP = """() => document.querySelector('#session-attention .attention-item')
    .getBoundingClientRect().top + window.scrollY"""


def test_a_phone_shows_a_small_header_a_reachable_menu_and_what_waits_first(
    server, seeded, chromium
):
    board = seeded.session_ids[-2]  # its plan waits
    for scheme in ("light", "dark"):
        context, page = open_page(chromium, server, PHONE, scheme)
        page.goto(f"{server.url}/sessions/{board}/")
        page.wait_for_selector("#connection[data-state=live]")
        screenshot(page, f"phone-board-{scheme}")
        header = page.locator(".site-header").bounding_box()
        assert header["height"] <= 110
        assert page.evaluate(WAIT_TOP) < 300
        assert page.locator("#session-header").is_visible()
        # Every link of the menu can be reached and followed.
        links = page.get_by_role("navigation", name="Main").get_by_role("link")
        assert links.count() >= 6
        for index in range(links.count()):
            link = links.nth(index)
            link.scroll_into_view_if_needed()
            box = link.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], link.inner_text()
        links.last.click()
        page.wait_for_url(f"{server.url}/settings/")
        assert violations(page) == []
        context.close()
    context, page = open_page(chromium, server, {"width": 1280, "height": 860})
    page.goto(f"{server.url}/sessions/{board}/")
    screenshot(page, "desktop-board-light")
    context.close()
