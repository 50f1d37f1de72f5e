"""An agent caught in a loop needs a look: the same failing Bash call three times shows on the
header count, its overview row, its board's banner and card, and the inbox; Dismiss clears it
everywhere, live."""

from __future__ import annotations

import pytest

from tests.conftest import login, screenshot
from tests.e2e import seed

pytestmark = pytest.mark.browser

SESSION = "sess-loop"
CWD = "/home/dev/shop"
PYTEST = {"command": "pytest -x tests/api", "description": "Run the API tests"}


def fail(server, n: int) -> None:
    call = {"tool_name": "Bash", "tool_input": PYTEST, "tool_use_id": f"toolu_loop_{n}", "cwd": CWD}
    seed.hook(server, "PreToolUse", SESSION, **call)
    seed.hook(
        server, "PostToolUseFailure", SESSION, error="Exit code 1\n3 failed, 40 passed", **call
    )


def wait_for_count(page, count: int) -> None:
    page.wait_for_function(
        f"() => document.getElementById('plans-waiting').dataset.count === '{count}'"
    )


@pytest.mark.parametrize("viewport", [(1440, 900), (390, 844)], ids=["desktop", "phone"])
def test_a_looping_agent_shows_everywhere_and_dismiss_clears_it(
    agentboard_server, chromium, viewport
):
    server = agentboard_server
    seed.seed(server, sessions=3, agents=1)
    seed.hook(server, "SessionStart", SESSION, cwd=CWD, source="startup")
    seed.put_todos(
        server, SESSION, SESSION, [{"content": "Fix the API tests", "status": "in_progress"}]
    )
    width, height = viewport
    name = "desktop" if width > 800 else "phone"
    context = chromium.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    login(page, server)
    page.wait_for_selector("#connection[data-state=live]")
    wait_for_count(page, 0)

    fail(server, 1)
    fail(server, 2)
    fail(server, 3)

    wait_for_count(page, 1)
    row = page.locator(".session-row[data-waiting=true]")
    row.first.wait_for()
    assert "Needs a look" in row.first.inner_text()
    assert "failed 3 times in " in row.first.inner_text()
    screenshot(page, f"looping-overview-{name}")

    page.goto(f"{server.url}/sessions/{SESSION}/")
    banner = page.locator("#session-attention [data-wait=look]")
    banner.wait_for()
    assert "needs a look" in banner.inner_text()
    assert "“pytest -x tests/api” failed 3 times in " in banner.inner_text()
    card = page.locator(".card-waiting[data-wait=look]")
    assert "Needs a look" in card.first.inner_text()
    screenshot(page, f"looping-board-{name}")

    page.goto(f"{server.url}/inbox/")
    item = page.locator("[data-inbox-item][data-kind=look]")
    item.wait_for()
    assert "Looping: “pytest -x tests/api” failed 3 times in " in item.inner_text()
    screenshot(page, f"looping-inbox-{name}")

    page.goto(f"{server.url}/sessions/{SESSION}/")
    page.wait_for_selector("#connection[data-state=live]")
    page.locator("#session-attention").get_by_role("button", name="Dismiss").click()
    page.wait_for_selector("#session-attention [data-wait=look]", state="detached")
    wait_for_count(page, 0)
    assert page.locator(".card-waiting[data-wait=look]").count() == 0
    screenshot(page, f"looping-dismissed-{name}")
    context.close()
