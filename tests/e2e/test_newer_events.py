"""Claude Code's newer events on the session board, in a real browser: the permission mode in
the header changing live, a teammate's card reading idle, and the history naming a refusal by
auto mode and a new folder; on a desktop and a phone, light and dark, axe clean."""

from __future__ import annotations

import json
import urllib.request

import pytest
from playwright.sync_api import expect

from tests.conftest import login, screenshot
from tests.e2e.test_accessibility import VIEWPORTS, violations
from tests.e2e.test_inbox import HeldHook
from tests.hooks.conftest import load_fixture as payload

pytestmark = pytest.mark.browser

SESSION = "sess-newer-events"
TEAMMATE = "b71e09c4d2a5f386"


# The call refused, with a secret in it (the sample payload holds none).
WITH_SECRET = {
    "command": "curl -X POST https://deploy.example.com/release "
    "-H 'Authorization: Bearer ghp_9fQx2LmN8pR4sT6vW1yZ3aB5cD7eF0gH2jK4'",
    "description": "Release the build",
}


def hook(server, event: str, **fields) -> None:
    body = {
        "session_id": SESSION,
        "cwd": "/home/dev/shop",
        "hook_event_name": event,
        "permission_mode": "auto",
        **fields,
    }
    request = urllib.request.Request(
        f"{server.url}/hooks/claude-code",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def seed(server) -> None:
    hook(server, "SessionStart", source="startup")
    hook(server, "UserPromptSubmit", prompt="Release the shop <b>now</b>")
    release = {"command": "./deploy.sh --prod", "description": "Release"}
    hook(server, "PreToolUse", tool_name="Bash", tool_use_id="toolu_1", tool_input=release)
    hook(
        server,
        "PermissionDenied",
        tool_name="Bash",
        tool_use_id="toolu_1",
        tool_input=release,
        reason="Releasing to production was not asked for by the user.",
    )
    hook(server, "CwdChanged", old_cwd="/home/dev/shop", new_cwd="/home/dev/shop/api")
    hook(
        server,
        "TeammateIdle",
        agent_id=TEAMMATE,
        agent_type="reviewer",
        teammate_name="reviewer",
        team_name="shop-release",
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_the_mode_a_teammate_and_what_happened_show_on_the_board(
    agentboard_server, chromium, viewport, scheme
):
    seed(agentboard_server)
    context = chromium.new_context(viewport=VIEWPORTS[viewport], color_scheme=scheme)
    page = context.new_page()
    try:
        login(page, agentboard_server)
        page.goto(f"{agentboard_server.url}/sessions/{SESSION}/")
        page.wait_for_selector("#connection[data-state=live]")
        header = page.locator("#session-header")
        assert "mode auto" in header.inner_text()
        assert "/home/dev/shop/api" in header.inner_text()
        card = page.locator(f"article.card:has(code[title='{TEAMMATE}'])")
        assert "reviewer" in card.inner_text()
        assert card.locator("[data-now=idle]").count() == 1
        history = page.locator("#history").inner_text()
        assert "auto mode refused: Bash ./deploy.sh --prod" in history
        assert "moved from /home/dev/shop to /home/dev/shop/api" in history
        assert violations(page) == []
        screenshot(page, f"newer-events-{viewport}-{scheme}")

        # The lead switches the agent to plan mode in its terminal: the next hook says so.
        hook(agentboard_server, "UserPromptSubmit", prompt="Plan it first", permission_mode="plan")
        expect(header).to_contain_text("plan mode on")
        expect(page.locator("#history")).to_contain_text("permission mode auto → plan")
    finally:
        context.close()


class HeldRefusal(HeldHook):
    def retried(self) -> bool:
        self.join(20)
        assert self.answer is not None, "the held refusal was never answered"
        return self.answer == {
            "hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": True}
        }


def test_a_lead_who_asks_for_refusals_allows_one_once_from_the_inbox(agentboard_server, chromium):
    server = agentboard_server
    context = chromium.new_context(viewport=VIEWPORTS["desktop"])
    page = context.new_page()
    try:
        login(page, server)
        page.goto(f"{server.url}/settings/")
        section = page.locator("section[aria-labelledby=inbox-choices-title]")
        assert "in your inbox: off" in section.inner_text()
        section.get_by_role("button", name="Turn on").click()
        expect(section).to_contain_text("in your inbox: on")
        assert violations(page) == []
        screenshot(page, "settings-auto-mode-refusals")

        page.goto(f"{server.url}/inbox/")
        page.wait_for_selector("#connection[data-state=live]")
        refused = payload("permission_denied.json", session_id=SESSION, tool_input=WITH_SECRET)
        held = HeldRefusal(server, refused)
        held.start()
        row = page.locator("[data-inbox-item][data-kind=permission]")
        expect(row).to_contain_text("auto mode refused:")
        assert "Always" not in row.inner_text()
        assert "ghp_9fQx2LmN8pR4sT6vW1yZ3aB5cD7eF0gH2jK4" not in page.content()
        for viewport, scheme in (("desktop", "light"), ("desktop", "dark"), ("phone", "dark")):
            page.set_viewport_size(VIEWPORTS[viewport])
            page.emulate_media(color_scheme=scheme)
            assert violations(page) == [], (viewport, scheme)
            screenshot(page, f"inbox-auto-mode-refused-{viewport}-{scheme}")

        row.get_by_role("button", name="Allow once").click()
        assert held.retried()
    finally:
        context.close()
