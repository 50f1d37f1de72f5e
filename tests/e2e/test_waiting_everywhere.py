"""One count of what waits on the lead, wherever the lead looks: a plan, held permission
requests, a continuation countdown and an agent waiting in its terminal are counted alike by the
header, the tab title, the overview's pinned rows and its "Waiting on me" filter, the boards'
banners, the agents' cards and the inbox; each banner answers its thing in place."""

from __future__ import annotations

import re

import pytest

from tests.conftest import login, screenshot
from tests.e2e import seed
from tests.e2e.test_enforcer_countdown import SESSION as COUNTING
from tests.e2e.test_enforcer_countdown import UNFINISHED, HookInBackground
from tests.e2e.test_inbox import HeldHook, notify, payload

# Live delivery over the channel layer: also run on PostgreSQL + Redis (`.ci/run`).
pytestmark = [pytest.mark.browser, pytest.mark.live]

COUNT_EVERYWHERE = """() => {
    const rows = [...document.querySelectorAll('.session-row[data-waiting=true]')];
    const pinned = rows.reduce((sum, row) => sum + Number(row.dataset.waits), 0);
    const chip = document.querySelector('[data-waiting-chip-count]');
    return {
        header: document.getElementById('plans-waiting').dataset.count,
        title: document.title,
        pinned: String(pinned),
        chip: chip ? chip.textContent : null,
        firstRows: [...document.querySelectorAll('.session-row')].slice(0, rows.length)
            .every((row) => row.dataset.waiting === 'true'),
    };
}"""


def counted(page) -> dict:
    return page.evaluate(COUNT_EVERYWHERE)


def wait_for_count(page, count: int) -> None:
    page.wait_for_function(
        f"() => document.getElementById('plans-waiting').dataset.count === '{count}'"
    )


@pytest.fixture
def waiting_server(server_factory):
    """A countdown long enough to look at it (the test cancels it)."""
    return server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "300"})


def test_every_surface_counts_what_waits_alike_and_the_board_answers_it_in_place(
    waiting_server, chromium
):
    server = waiting_server
    seeded = seed.seed(server, sessions=8, agents=1)
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    login(page, server)
    page.wait_for_selector("#connection[data-state=live]")

    # One of each kind: a plan, two held permission requests (Bash and an MCP tool), an agent
    # waiting in its terminal and a continuation countdown.
    seed.submit_plan(server, seeded.session_ids[0], seed.PLAN_DOCS)
    bash = HeldHook(server, payload("permission_request_bash.json", session_id="sess-bash"))
    bash.start()
    mcp = HeldHook(server, payload("permission_request_mcp.json", session_id="sess-mcp"))
    mcp.start()
    notify(server, payload("notification_idle.json", session_id="sess-docs", cwd="/home/dev/docs"))
    seed.put_todos(server, COUNTING, COUNTING, UNFINISHED)
    stop = HookInBackground(server)
    stop.start()

    wait_for_count(page, 5)
    page.wait_for_function(
        "() => document.querySelectorAll('.session-row[data-waiting=true]').length === 5"
    )
    found = counted(page)
    assert found == {
        "header": "5",
        "title": "(5) Sessions · Agentboard",
        "pinned": "5",
        "chip": " (5)",
        "firstRows": True,
    }
    assert page.locator("#plans-waiting").inner_text() == "5 waiting on you"
    # Each pinned row says what waits, for how long, and what it asks.
    bash_row = page.locator(".session-row", has_text="npm run test")
    assert re.search(r"Bash waiting \d+ s\s*:\s*npm run test", bash_row.inner_text())
    countdown_row = page.locator(
        "#session-list .session-row[data-waiting=true]", has_text="Resumes in"
    )
    assert re.search(r"Resumes in [45]:\d\d", countdown_row.inner_text())
    assert countdown_row.get_by_role("button", name=re.compile("Cancel")).is_visible()
    screenshot(page, "overview-everything-waiting")

    # The filter lists exactly what the header counts.
    page.get_by_role("button", name=re.compile("Waiting on me")).click()
    assert page.locator(".session-row:visible").count() == 5

    # The inbox lists the same five.
    page.goto(f"{server.url}/inbox/")
    page.wait_for_selector("#connection[data-state=live]")
    assert page.locator("[data-inbox-item]").count() == 5
    assert page.title() == "(5) Inbox · Agentboard"

    # The board of the Bash request: a banner names it and answers it in place; the card says
    # its agent waits.
    page.goto(f"{server.url}/sessions/sess-bash/")
    page.wait_for_selector("#connection[data-state=live]")
    banner = page.locator("#session-attention")
    assert banner.is_visible()
    assert "Bash waiting for permission" in banner.inner_text()
    assert "npm run test -- --watch=false" in banner.inner_text()
    assert "Waiting for you: Bash" in page.locator("article.card").first.inner_text()
    screenshot(page, "board-permission-banner")
    banner.get_by_role("button", name="Allow").click()
    assert bash.decision()["behavior"] == "allow"
    page.wait_for_selector("#session-attention", state="hidden")
    wait_for_count(page, 4)
    assert page.title() == "(4) sess-bash · Agentboard" or page.title().startswith("(4) ")
    assert "Waiting for you" not in page.locator("article.card").first.inner_text()

    # The board of the countdown: a live clock and Cancel in the banner.
    page.goto(f"{server.url}/sessions/{COUNTING}/")
    page.wait_for_selector("#connection[data-state=live]")
    clock = page.locator("#session-attention .countdown-number")
    first = clock.inner_text()
    assert re.fullmatch(r"[45]:\d\d", first)
    ticking = "() => document.querySelector('#session-attention .countdown-number').textContent"
    page.wait_for_function(f"{ticking} !== '{first}'")
    page.locator("#session-attention").get_by_role("button", name="Cancel the continuation").click()
    page.wait_for_selector("#session-attention", state="hidden")
    wait_for_count(page, 3)
    stop.join(20)
    assert stop.answer is not None, "the held Stop hook was never let go"

    # Back on the overview, every surface agrees again.
    page.goto(f"{server.url}/")
    page.wait_for_selector("#connection[data-state=live]")
    page.get_by_role("button", name="All").click()
    found = counted(page)
    assert (found["header"], found["pinned"], found["chip"]) == ("3", "3", " (3)")
    assert found["firstRows"]

    context.close()
