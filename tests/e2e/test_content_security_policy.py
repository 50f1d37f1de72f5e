"""Every page works under the Content-Security-Policy in a real browser, and the policy really
stops script that is not one of our files."""

from __future__ import annotations

import pytest

from tests.conftest import login
from tests.e2e.test_board_live import put_todos
from tests.e2e.test_plan_review import post_plan

pytestmark = pytest.mark.browser

SESSION = "sess-csp"
PLAN = """# Faster exports

| step | minutes |
|:-----|--------:|
| stream rows | 20 |
| drop the temp file | 5 |
"""

# Runs before any page script, outside the page's policy: collects every violation report.
COLLECT_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(
    `${event.violatedDirective} ${event.blockedURI} ${event.sourceFile}:${event.lineNumber}`
  );
});
"""


@pytest.fixture
def watched_page(page):
    """The browser page, with every CSP violation and console error it sees recorded."""
    page.add_init_script(COLLECT_VIOLATIONS)
    page.console_errors = []
    page.on(
        "console",
        lambda message: message.type == "error" and page.console_errors.append(message.text),
    )
    return page


def violations(page) -> list[str]:
    reported = page.evaluate("window.__violations")
    policy_errors = [text for text in page.console_errors if "Content Security Policy" in text]
    return reported + policy_errors


def test_no_page_breaks_the_content_security_policy(agentboard_server, watched_page):
    server, page = agentboard_server, watched_page
    put_todos(
        server,
        SESSION,
        SESSION,
        [
            {"content": "Stream rows", "status": "completed", "activeForm": "Streaming rows"},
            {"content": "Drop the temp file", "status": "pending", "activeForm": "Dropping it"},
        ],
    )
    plan_id = post_plan(server, SESSION, PLAN)["id"]

    page.goto(f"{server.url}/accounts/login/")
    login(page, server)
    pages = {
        "overview": "/",
        "board": f"/sessions/{SESSION}/",
        "plan queue": "/plans/",
        "plan review": f"/plans/{plan_id}/",
    }
    for name, path in pages.items():
        page.goto(f"{server.url}{path}")
        page.wait_for_selector("#connection[data-state=live]")
        assert violations(page) == [], name

    # The progress bar and the plan's table keep their look without inline style.
    page.goto(f"{server.url}/sessions/{SESSION}/")
    page.wait_for_selector("#connection[data-state=live]")
    # Measured in one call: the socket's snapshot may replace the card at any moment.
    track, fill = page.evaluate(
        "() => ['.card .bar', '.card .bar-fill']"
        ".map(selector => document.querySelector(selector).getBoundingClientRect().width)"
    )
    assert track > 50 and fill == pytest.approx(track / 2, abs=1)
    page.goto(f"{server.url}/plans/{plan_id}/")
    page.wait_for_selector("#connection[data-state=live]")
    alignment = page.evaluate(
        "() => getComputedStyle(document.querySelectorAll('.plan-body td')[1]).textAlign"
    )
    assert alignment == "right"

    for name, path in {
        "admin": "/admin/",
        "admin list": "/admin/planmode/plan/",
        "admin form": "/admin/auth/user/1/change/",
        "API docs": "/api/v1/docs",
    }.items():
        page.goto(f"{server.url}{path}")
        page.wait_for_load_state("networkidle")
        assert violations(page) == [], name
    assert page.locator(".docs-op").first.is_visible()
    assert "/api/v1/plans/{plan_id}" in page.locator(".docs").inner_text()


def test_the_login_page_keeps_its_policy_for_a_logged_out_visitor(agentboard_server, watched_page):
    page = watched_page
    page.goto(f"{agentboard_server.url}/accounts/login/")
    page.wait_for_load_state("networkidle")
    assert violations(page) == []
    assert page.get_by_role("button", name="Log in").is_visible()


def test_script_written_into_a_page_does_not_run(agentboard_server, watched_page):
    """Should anything ever slip script into a page, the browser refuses to run it."""
    server, page = agentboard_server, watched_page
    injected = (
        "<script>window.__injected = 'ran'</script>"
        "<img src=x onerror=\"window.__injected = 'ran'\">"
    )

    def add_script(route):
        response = route.fetch()
        body = response.text().replace("</main>", f"{injected}</main>")
        route.fulfill(response=response, body=body)

    page.route(f"{server.url}/accounts/login/", add_script)
    page.goto(f"{server.url}/accounts/login/")
    page.wait_for_load_state("networkidle")

    assert page.evaluate("window.__injected") is None
    assert any("script-src" in violation for violation in violations(page))
