"""In a real browser: what waits on the lead moves to the top of the overview as it happens,
rows are compact enough to see 25 at once, the chosen filter survives a reload, and an
empty filter says so; the tab title counts plans waiting."""

from __future__ import annotations

import pytest

from tests.conftest import login, screenshot
from tests.e2e import seed

pytestmark = pytest.mark.browser


@pytest.mark.live
def test_a_plan_pins_its_session_on_top_of_an_open_overview_and_a_decision_unpins_it(
    agentboard_server, chromium
):
    server = agentboard_server
    seeded = seed.seed(server, sessions=30, agents=2)
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    login(page, server)
    page.wait_for_selector("#connection[data-state=live]")

    # 25 rows fit on one screen.
    page.get_by_role("button", name="All").click()
    rows = page.locator(".session-row:visible")
    assert rows.count() >= 25
    # Measured in one step in the page: a live update may replace a row meanwhile.
    bottom = page.evaluate(
        "() => [...document.querySelectorAll('.session-row')].filter((r) => !r.hidden)[24]"
        ".getBoundingClientRect().bottom"
    )
    assert bottom <= 900

    # The oldest running session's agent submits a plan: its row moves to the top, waiting.
    oldest = seeded.session_ids[1]
    plan_id = seed.submit_plan(server, oldest, seed.PLAN_DOCS)
    first = page.locator(".session-row").first
    page.wait_for_function(
        "() => document.querySelector('.session-row').dataset.group === 'waiting'"
    )
    assert "Plan waiting" in first.inner_text()
    assert "Onboarding guide outline" in first.inner_text()
    page.wait_for_function("() => document.title === '(1) Sessions · Agentboard'")
    screenshot(page, "overview-waiting-pinned")

    seed.decide(page, server, plan_id, "approve")
    page.wait_for_function(
        "() => document.querySelector('.session-row').dataset.group !== 'waiting'"
    )
    page.wait_for_function("() => document.title === 'Sessions · Agentboard'")
    context.close()


def test_the_chosen_filter_is_kept_on_reload_and_an_empty_result_says_so(agentboard_server, page):
    server = agentboard_server
    seed.seed(server, sessions=3, agents=1)
    login(page, server)
    page.wait_for_selector("#connection[data-state=live]")

    page.get_by_role("button", name="Waiting on me").click()
    message = page.locator("#filter-empty")
    assert message.is_visible()
    assert "No session matches this filter" in message.inner_text()
    assert not page.locator("#session-list").is_visible()

    page.reload()
    page.wait_for_selector("#connection[data-state=live]")
    assert page.get_by_role("button", name="Waiting on me").get_attribute("aria-pressed") == "true"
    assert message.is_visible()

    message.get_by_role("button", name="Show all sessions").click()
    assert page.locator(".session-row:visible").count() == 3
    assert page.get_by_role("button", name="All").get_attribute("aria-pressed") == "true"


WATCH_FLASHES = """() => {
    window.__flashed = [];
    new MutationObserver((records) => {
        for (const record of records) {
            const el = record.target;
            if (el.classList && el.classList.contains('flash') && el.closest('#cards')) {
                window.__flashed.push(el.tagName + ':' + el.textContent.replace(/\\s+/g, ' '));
            }
        }
    }).observe(document.body,
               {subtree: true, attributes: true, attributeFilter: ['class'], childList: true});
}"""


def test_a_live_update_highlights_the_item_that_changed_not_the_whole_card(agentboard_server, page):
    from tests.e2e.test_board_live import put_todos

    todos = [
        {"content": "Read the code", "status": "in_progress", "activeForm": "Reading the code"},
        {"content": "Write the test", "status": "pending", "activeForm": "Writing the test"},
        {"content": "Ship it", "status": "pending", "activeForm": "Shipping it"},
    ]
    put_todos(agentboard_server, "sess-flash", "sess-flash", todos)
    login(page, agentboard_server)
    page.goto(f"{agentboard_server.url}/sessions/sess-flash/")
    page.wait_for_selector("#connection[data-state=live]")
    page.evaluate(WATCH_FLASHES)

    todos[0]["status"], todos[1]["status"] = "completed", "in_progress"
    put_todos(agentboard_server, "sess-flash", "sess-flash", todos)
    page.wait_for_function("() => window.__flashed.length >= 2")

    flashed = page.evaluate("() => window.__flashed")
    assert all(entry.startswith("LI:") for entry in flashed), flashed
    assert any("Read the code" in entry for entry in flashed)
    assert any("Writing the test" in entry for entry in flashed)
    assert not any("Ship it" in entry for entry in flashed)
