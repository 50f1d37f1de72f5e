"""A stuck agent and a step running long need a look, as a loop does: each shows on its
overview row, its board's banner and card, and counts in the header; Dismiss clears it, and a
step running long also clears the moment it ends. The server sweeps every second here, and
"stuck" and "long" are seconds, so the test takes seconds."""

from __future__ import annotations

import time

import pytest

from tests.conftest import login, screenshot
from tests.e2e import seed
from tests.e2e.test_looping_agent import CWD, wait_for_count

pytestmark = pytest.mark.browser

STUCK = "sess-stuck"
LONG = "sess-long"
CALM = "sess-calm"
SLEEPY = {"command": "npm run e2e -- --headed", "description": "Run the end-to-end tests"}
QUICK_SWEEPS = {
    "AGENTBOARD_CONCERN_SWEEP_SECONDS": "1",
    "AGENTBOARD_STUCK_MINUTES": "0.05",  # 3 s
    "AGENTBOARD_STEP_LIMITS": "Bash=2",
}


@pytest.fixture
def server(server_factory):
    return server_factory(env=QUICK_SWEEPS)


def long_call(server, call: str, event: str = "PreToolUse") -> None:
    fields = {"tool_name": "Bash", "tool_input": SLEEPY, "tool_use_id": call, "cwd": CWD}
    if event == "PostToolUse":
        fields["tool_response"] = {"stdout": "12 passed"}
    seed.hook(server, event, LONG, **fields)


def agents(server) -> None:
    """One agent that goes quiet with a task in progress, one that starts a long command, and
    one that finished its work (never flagged)."""
    for session in (STUCK, LONG, CALM):
        seed.hook(server, "SessionStart", session, cwd=CWD, source="startup")
    seed.put_todos(
        server, STUCK, STUCK, [{"content": "Fix the checkout tests", "status": "in_progress"}]
    )
    seed.put_todos(server, CALM, CALM, [{"content": "Write the docs", "status": "completed"}])
    long_call(server, "toolu_long_1")


def concern_ends(server) -> list[tuple[str, str]]:
    return server.query("SELECT kind, end_reason FROM activity_concern ORDER BY id")


def row(page, session: str):
    return page.locator(f".session-row:has(a[href='/sessions/{session}/'])")


def dismiss_on_board(page, server, session: str, what: str, name: str) -> None:
    page.goto(f"{server.url}/sessions/{session}/")
    page.wait_for_selector("#connection[data-state=live]")
    banner = page.locator("#session-attention [data-wait=look]")
    banner.wait_for()
    assert f"needs a look — {what}" in banner.inner_text()
    assert f"Needs a look — {what}" in page.locator(".card-waiting[data-wait=look]").inner_text()
    screenshot(page, f"{name}-board")
    banner.get_by_role("button", name="Dismiss").click()
    banner.wait_for(state="detached")
    assert page.locator(".card-waiting[data-wait=look]").count() == 0


@pytest.mark.parametrize(
    "viewport,scheme",
    [((1440, 900), "light"), ((390, 844), "dark")],
    ids=["desktop-light", "phone-dark"],
)
def test_stuck_and_long_running_agents_need_a_look_until_dismissed_or_done(
    server, chromium, viewport, scheme
):
    width, height = viewport
    name = f"{'desktop' if width > 800 else 'phone'}-{scheme}"
    context = chromium.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
    page = context.new_page()
    try:
        login(page, server)
        page.wait_for_selector("#connection[data-state=live]")
        agents(server)

        # Both are found by the sweep, live: the header counts them, their rows say why.
        wait_for_count(page, 2)
        stuck, long_ = row(page, STUCK), row(page, LONG)
        for each, why in ((stuck, "stuck"), (long_, "running long")):
            each.locator(f".wait-line:has-text('Needs a look · {why} for')").wait_for()
            assert each.get_attribute("data-waiting") == "true"
        assert "no step while 'Fix the checkout tests' is in progress" in stuck.inner_text()
        assert "has run longer than the Bash limit of 2 s" in long_.inner_text()
        assert row(page, CALM).get_attribute("data-waiting") == "false"
        screenshot(page, f"needs-a-look-overview-{name}")

        dismiss_on_board(page, server, STUCK, "Stuck", f"needs-a-look-stuck-{name}")
        wait_for_count(page, 1)
        dismiss_on_board(page, server, LONG, "Running long", f"needs-a-look-long-{name}")
        wait_for_count(page, 0)
        time.sleep(2.5)  # two more sweeps: what was dismissed stays dismissed
        assert page.evaluate("document.getElementById('plans-waiting').dataset.count") == "0"

        # The next long command needs a look again, and clears the moment it ends.
        long_call(server, "toolu_long_1", "PostToolUse")
        long_call(server, "toolu_long_2")
        page.locator("#session-attention [data-wait=look]").wait_for()
        wait_for_count(page, 1)
        long_call(server, "toolu_long_2", "PostToolUse")
        page.locator("#session-attention [data-wait=look]").wait_for(state="detached")
        wait_for_count(page, 0)
        assert concern_ends(server)[-1] == ("overlong", "step ended")
        assert "Thinking" in page.locator("article.card [data-now]").first.inner_text()
        screenshot(page, f"needs-a-look-long-done-{name}")
    finally:
        context.close()
