"""What a lead reads on a wide screen and on a phone, with long names everywhere: who and what
stay readable on overview rows at 1440 px, no page scrolls sideways at 390 px, the phone
overview shows a session near the top, an MCP request leads with what it will do, and the
small controls say what they do."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from django.template.loader import render_to_string

from tests.conftest import login, screenshot
from tests.e2e import seed
from tests.e2e.test_accessibility import violations
from tests.e2e.test_inbox import hold, payload

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
RENDERED_ERRORS = ["400", "403", "403_csrf", "500"]
# The elements that reach past the right edge of the screen, innermost first: what a failure
# names.
SIDEWAYS = """() => {
  const wide = e => e.getBoundingClientRect().right > innerWidth + 1;
  return [...document.querySelectorAll('body *')]
    .filter(e => wide(e) && ![...e.children].some(wide)).slice(0, 5)
    .map(e => `${e.tagName}.${e.getAttribute('class')}: ${e.textContent.trim().slice(0, 40)}`);
}"""
CUT = "element => element.scrollWidth > element.clientWidth + 1"
MCP_PULL_REQUEST = {
    "owner": "acme",
    "repo": "shop",
    "title": "Cursor pagination for the orders API",
    "body": "Replaces offsets.\nCloses #12.\n\n<img src=x onerror=alert(1)>",
    "head": "feature/cursor-pagination",
    "base": "main",
    "draft": False,
}


@pytest.fixture
def server(server_factory):
    return server_factory(env={"AGENTBOARD_WEBHOOK_ALLOW_PRIVATE": "true"})


@pytest.fixture
def long_names(server) -> seed.LongNames:
    seed.seed(server, sessions=8, agents=2)
    return seed.seed_long_names(server)


def test_rows_show_project_owner_and_branch_readably_at_1440_px(server, chromium, long_names):
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    login(page, server)
    page.wait_for_selector("#connection[data-state=live]")

    screenshot(page, "rows-desktop-light")
    analytics = page.locator(f".session-row:has(a[href='/sessions/{long_names.sessions[0]}/'])")
    for name in (".project", ".owner"):
        assert not analytics.locator(name).evaluate(CUT), f"{name} is cut at 1440 px"
    assert analytics.locator(".project").inner_text() == "analytics-pipeline"
    assert analytics.locator(".owner").inner_text() == seed.LONG_OWNER
    # Every row shows its project and owner in full, and enough of its branch to read.
    rows = page.locator(".session-row:visible")
    for index in range(rows.count()):
        row = rows.nth(index)
        project = row.locator(".project")
        if len(project.inner_text()) <= 20:
            assert not project.evaluate(CUT), project.inner_text()
        assert not row.locator(".owner").evaluate(CUT)
        if row.locator(".branch").count():
            assert row.locator(".branch").bounding_box()["width"] >= 70
    # Hovering anywhere on the row names everything in full; keyboard focus shows it in full.
    link_title = analytics.locator(".session-link").get_attribute("title")
    assert seed.LONG_BRANCH in link_title and seed.LONG_OWNER in link_title
    assert analytics.locator(".branch").evaluate(CUT)
    analytics.locator(".session-link").focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    assert not analytics.locator(".branch").evaluate(CUT)
    assert analytics.locator(".branch").is_visible()
    screenshot(page, "rows-desktop-focused")
    context.close()


def test_no_page_scrolls_sideways_on_a_phone(server, chromium, long_names):
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    login(page, server)
    page.goto(f"{server.url}/inbox/")
    page.wait_for_selector("#connection[data-state=live]")
    command = seed.LONG_COMMAND + " && curl " + seed.LONG_URL
    hold(server, page, payload("permission_request_bash.json", tool_input={"command": command}), 2)
    hold(server, page, payload("permission_request_mcp.json", tool_input=MCP_PULL_REQUEST), 3)
    # The plan of the seed waits first, then the two requests.
    request = page.locator("[data-inbox-item]").nth(1).get_attribute("id").rsplit("-", 1)[1]
    add_rule(page, server, f"Bash({seed.LONG_COMMAND}*)")
    target = add_webhook(page, server, f"http://127.0.0.1:9/{seed.UNBROKEN}/{seed.UNBROKEN}")
    context.close()

    errors = {name: render_to_string(f"{name}.html") for name in RENDERED_ERRORS}
    pages = [
        "/",
        f"/sessions/{long_names.sessions[0]}/",
        "/plans/",
        f"/plans/{long_names.plan}/",
        "/inbox/",
        f"/inbox/requests/{request}/",
        "/inbox/rules/",
        "/settings/",
        f"/settings/notifications/webhooks/{target}/log/",
        "/accounts/password/",
        "/api/v1/docs",
        "/no/such/page/",
        *(f"/error/{name}/" for name in errors),
    ]
    wide: dict[str, list[str]] = {}
    for scheme in ("light", "dark"):
        context = chromium.new_context(viewport=PHONE, color_scheme=scheme)
        page = context.new_page()
        page.goto(f"{server.url}/accounts/login/")
        wide["/accounts/login/"] = page.evaluate(SIDEWAYS)
        login(page, server)
        for name, html in errors.items():
            page.route(f"{server.url}/error/{name}/", serve(html))
        for path in pages:
            page.goto(f"{server.url}{path}")
            if path == "/inbox/":
                page.locator("[data-details] summary").first.click()
            if path.startswith("/sessions/"):
                assert page.locator("[data-flag]").count() >= 1  # a discipline flag shows
            if page.evaluate("document.documentElement.scrollWidth > innerWidth"):
                wide[f"{path} ({scheme})"] = page.evaluate(SIDEWAYS)
            if scheme == "dark" or path in ("/", "/inbox/"):
                name = re.sub(r"[^a-z0-9]+", "-", path).strip("-")[:40] or "overview"
                screenshot(page, f"phone-{name}-{scheme}")
        context.close()
    assert {path: found for path, found in wide.items() if found} == {}


FIRST_ROW_TOP = """() => {
    const row = [...document.querySelectorAll('.session-row')].find((r) => !r.hidden);
    return row ? row.getBoundingClientRect().top + window.scrollY : null;
}"""


def test_the_phone_overview_shows_a_session_in_its_first_300_px(server, chromium, long_names):
    for scheme in ("light", "dark"):
        context = chromium.new_context(viewport=PHONE, color_scheme=scheme)
        page = context.new_page()
        login(page, server)
        page.wait_for_selector("#connection[data-state=live]")
        assert page.locator("#plans-waiting .badge").is_visible()  # a plan waits: the busy header
        # Measured in one step in the page: the socket's snapshot may replace the rows meanwhile.
        top = page.evaluate(FIRST_ROW_TOP)
        assert top is not None and top <= 300
        assert page.locator(".session-row:visible").first.locator(".session-link").is_visible()
        screenshot(page, f"overview-phone-top-{scheme}")
        context.close()


def test_an_mcp_request_leads_with_what_it_will_do(server, chromium):
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    login(page, server)
    page.goto(f"{server.url}/inbox/")
    page.wait_for_selector("#connection[data-state=live]")
    held = hold(
        server, page, payload("permission_request_mcp.json", tool_input=MCP_PULL_REQUEST), 1
    )

    row = page.locator("[data-inbox-item]").first
    headline = row.locator(".inbox-headline")
    assert headline.inner_text() == "Cursor pagination for the orders API"
    assert row.locator(".inbox-tool").inner_text() == "MCP github · create_issue"
    assert font_size(headline) > font_size(row.locator(".inbox-tool"))
    assert "repo: shop" in row.locator(".inbox-sub").inner_text()
    row.locator("summary").click()
    arguments = row.locator("pre.inbox-body").inner_text()
    assert "body:\n  Replaces offsets.\n  Closes #12." in arguments
    assert "\\n" not in arguments
    assert "<img src=x onerror=alert(1)>" in arguments  # shown as text
    assert row.locator("img").count() == 0
    # A huge input stays within a fixed size, and the page stays accessible.
    huge = MCP_PULL_REQUEST | {"body": "A line of the description.\n" * 5_000}
    hold(server, page, payload("permission_request_mcp.json", tool_input=huge), 2)
    second = page.locator("[data-inbox-item]").nth(1)
    second.locator("summary").click()
    assert second.locator("pre.inbox-body").bounding_box()["height"] <= 420
    assert "more characters not shown" in second.inner_text()
    assert violations(page) == []
    screenshot(page, "inbox-mcp-desktop-light")
    page.emulate_media(color_scheme="dark")
    screenshot(page, "inbox-mcp-desktop-dark")
    page.set_viewport_size(PHONE)
    screenshot(page, "inbox-mcp-phone-dark")
    page.emulate_media(color_scheme="light")
    screenshot(page, "inbox-mcp-phone-light")
    row.get_by_role("button", name="Allow").click()
    assert held.decision()["behavior"] == "allow"
    context.close()


def test_the_notifications_control_is_a_button_that_says_what_it_does(server, chromium):
    context = chromium.new_context(viewport=PHONE)
    context.grant_permissions(["notifications"], origin=server.url)
    page = context.new_page()
    login(page, server)
    page.goto(f"{server.url}/settings/")
    turn_on = page.get_by_role("button", name="Turn on desktop notifications")
    assert turn_on.is_visible()
    assert page.locator("[data-notify-state]").inner_text() == "Off in this browser."
    screenshot(page, "settings-notify-off-phone")
    turn_on.click()
    page.get_by_role("button", name="Turn off desktop notifications").wait_for()
    assert page.locator("[data-notify-state]").inner_text() == "On in this browser."
    context.close()


def test_a_request_its_agent_closed_says_so_in_recently_decided(server, chromium):
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    login(page, server)
    page.goto(f"{server.url}/inbox/")
    page.wait_for_selector("#connection[data-state=live]")
    # The agent's hook lets go after a second (its terminal was answered).
    let_go(server, payload("permission_request_bash.json"), after=1)
    page.wait_for_selector(".decided-row", timeout=20_000)
    status = page.locator(".decided-row .decided-status").first.inner_text()
    assert "Closed by the agent before anyone decided" in status
    assert "nobody decided in time" not in status
    screenshot(page, "inbox-closed-by-agent")
    context.close()


def add_rule(page, server, rule: str) -> None:
    page.goto(f"{server.url}/inbox/rules/")
    page.get_by_label("Rule", exact=True).fill(rule)
    page.get_by_role("button", name="Add rule").click()
    page.wait_for_selector(".rule-row")


def add_webhook(page, server, url: str) -> str:
    page.goto(f"{server.url}/settings/")
    page.get_by_label("Name", exact=True).fill(seed.UNBROKEN[:90])
    page.get_by_label("Address").fill(url)
    page.get_by_role("button", name="Add the webhook").click()
    log = page.get_by_role("link", name="Delivery log").first
    return log.get_attribute("href").rstrip("/").split("/")[-2]


def serve(html: str):
    def fulfill(route) -> None:
        route.fulfill(body=html, content_type="text/html")

    return fulfill


def font_size(locator) -> float:
    return float(locator.evaluate("e => parseFloat(getComputedStyle(e).fontSize)"))


def let_go(server, body: dict, *, after: float) -> None:
    """A held hook whose client stops waiting after `after` seconds."""
    request = urllib.request.Request(
        f"{server.url}/hooks/claude-code",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with pytest.raises(TimeoutError):
        urllib.request.urlopen(request, timeout=after)
