"""Every page, in light and dark, on a desktop and a phone: no serious or critical axe-core
violation. axe-core runs in real Chromium (axe-playwright-python ships it); the screenshots
it leaves in tests/e2e/screenshots/ are the ones to look at after a change of the UI."""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass

import pytest
from django.template.loader import render_to_string

from tests.conftest import login, screenshot
from tests.e2e import seed
from tests.e2e.test_inbox import HeldHook, payload

pytestmark = pytest.mark.browser

SERIOUS = {"serious", "critical"}
VIEWPORTS = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}
# Error pages the server renders only when something fails: served as the server would.
RENDERED_ERRORS = ["400", "403", "403_csrf", "500"]


@dataclass(frozen=True)
class Visit:
    name: str
    path: str
    logged_in: bool = True
    wait_live: bool = True
    status: int = 200


def violations(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    found = []
    for violation in results.response["violations"]:
        if violation["impact"] in SERIOUS:
            targets = [", ".join(node["target"]) for node in violation["nodes"][:3]]
            found.append(f"{violation['id']} ({violation['impact']}): {targets}")
    return found


def serve(html: str):
    def fulfill(route) -> None:
        route.fulfill(body=html, content_type="text/html")

    return fulfill


class HeldThroughTheTest(HeldHook):
    """A held request that outlasts every visit (the test takes minutes); the server stops
    first, which ends the wait."""

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
        try:
            with urllib.request.urlopen(request, timeout=1800) as response:
                response.read()
        except OSError:
            pass


@pytest.fixture
def board(agentboard_server, chromium):
    """A seeded board with a plan waiting, a rejected revision with comments and its revised
    successor waiting too."""
    seeded = seed.seed(agentboard_server, sessions=12)
    # Steps first: an agent's steps after its plan was submitted would answer the plan in the
    # terminal, and the plan pages would not be the ones meant.
    seed.seed_steps(agentboard_server, seeded.session_ids[-3], running=False)
    seed.seed_plans(agentboard_server, seeded)
    seed.seed_usage(agentboard_server, seeded.session_ids[-6:])
    seeded.long_names = seed.seed_long_names(agentboard_server)
    context = chromium.new_context(viewport=VIEWPORTS["desktop"])
    page = context.new_page()
    login(page, agentboard_server)
    seed.seed_revision(page, agentboard_server, seeded)
    # A team, with the lead as its reviewer, for the teams pages.
    page.goto(f"{agentboard_server.url}/teams/")
    page.fill("#team-name", "Shop")
    page.click("text=Create team")
    page.fill("#member-username", "lead")
    page.select_option("#member-role", "reviewer")
    page.click(".add-member button")
    page.wait_for_selector(".team-members")
    # The visited board's agent is held on a Bash request: its banner answers it in place.
    held = HeldThroughTheTest(
        agentboard_server,
        payload("permission_request_bash.json", session_id=seeded.session_ids[-3]),
    )
    held.start()
    page.goto(f"{agentboard_server.url}/sessions/{seeded.session_ids[-3]}/")
    page.wait_for_selector("#session-attention [data-wait=permission]")
    context.close()
    return seeded


def first_step(server, session_id: str) -> int:
    request = urllib.request.Request(
        f"{server.url}/api/v1/sessions/{session_id}/activity?limit=1",
        headers={"Authorization": f"Bearer {server.token}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["steps"][0]["id"]


@pytest.mark.timeout(300)
def test_no_page_has_a_serious_accessibility_problem_in_light_or_dark(
    agentboard_server, chromium, board
):
    server = agentboard_server
    timeline = f"/sessions/{board.session_ids[-3]}/timeline/"
    visits = [
        Visit("login", "/accounts/login/", logged_in=False, wait_live=False),
        Visit("overview", "/"),
        Visit("board", f"/sessions/{board.session_ids[-3]}/"),
        Visit("timeline", timeline),
        Visit("timeline-list", f"{timeline}?view=list"),
        Visit("search", "/search/?q=build"),
        Visit("projects", "/projects/"),
        # The server's first project (its seeded sessions made the first ones).
        Visit("project", "/projects/1/"),
        Visit("teams", "/teams/"),
        Visit("team", "/teams/1/"),
        Visit("audit", "/audit/"),
        Visit("history", f"/sessions/{board.session_ids[-3]}/history/", wait_live=False),
        Visit("ended", "/ended/", wait_live=False),
        Visit("plans-decided", "/plans/decided/", wait_live=False),
        Visit("inbox-decided", "/inbox/decided/", wait_live=False),
        Visit("timeline-step", f"{timeline}?step={first_step(server, board.session_ids[-3])}"),
        Visit("board-long-names", f"/sessions/{board.long_names.sessions[0]}/"),
        Visit("queue", "/plans/"),
        Visit("inbox", "/inbox/"),
        Visit("rules", "/inbox/rules/", wait_live=False),
        Visit("review-pending", f"/plans/{board.revised_plan}/"),
        Visit("review-source-diff", f"/plans/{board.revised_plan}/?changes=source"),
        Visit("review-decided", f"/plans/{board.first_plan}/"),
        Visit("settings", "/settings/", wait_live=False),
        Visit("password", "/accounts/password/", wait_live=False),
        Visit("api-docs", "/api/v1/docs", wait_live=False),
        Visit("error-404", "/no/such/page/", wait_live=False, status=404),
    ]
    errors = {name: render_to_string(f"{name}.html") for name in RENDERED_ERRORS}
    problems: list[str] = []
    for scheme in ("light", "dark"):
        for size, viewport in VIEWPORTS.items():
            context = chromium.new_context(viewport=viewport, color_scheme=scheme)
            page = context.new_page()
            for name, html in errors.items():
                page.route(f"{server.url}/error/{name}/", serve(html))
            logged_in = False
            for visit in [*visits, *(Visit(f"error-{n}", f"/error/{n}/") for n in errors)]:
                if visit.logged_in and not logged_in:
                    login(page, server)
                    logged_in = True
                response = page.goto(f"{server.url}{visit.path}")
                assert response is not None and response.status == visit.status, visit.path
                if visit.wait_live and visit.logged_in and not visit.name.startswith("error"):
                    page.wait_for_selector("#connection[data-state=live]")
                problems += [
                    f"{visit.name} ({scheme}, {size}): {problem}" for problem in violations(page)
                ]
                screenshot(page, f"{visit.name}-{scheme}-{size}")
            context.close()
    assert problems == [], "\n".join(problems)
