"""The issue's story in a real browser: a lead allows three equivalent Bash requests from the
inbox, the rules page suggests the rule, its backtest agrees with all three, it is saved in
shadow, the fourth request still waits for a person while the rule records its verdict, it is
made active, and the fifth is answered by it at once without anyone asked."""

from __future__ import annotations

import pytest

from tests.conftest import login, screenshot
from tests.e2e.test_accessibility import violations
from tests.e2e.test_inbox import HeldHook, payload

pytestmark = pytest.mark.browser

COMMANDS = [
    "npm run test -- --watch=false",
    "npm run test -- --grep cart",
    "npm run test -- --grep checkout",
    "npm run test -- --grep orders",
    "npm run test -- --grep search",
]


def bash(command: str) -> dict:
    body = payload("permission_request_bash.json")
    body["tool_input"] = {"command": command, "description": "Run some of the unit tests"}
    return body


def said(locator) -> str:
    return " ".join(locator.inner_text().split())


def allow_in_the_inbox(server, page, command: str) -> None:
    """Send the request, wait for it in the open inbox, allow it, and see the hook answered."""
    held = HeldHook(server, bash(command))
    held.start()
    row = page.locator("[data-inbox-item][data-kind=permission]", has_text=command)
    row.wait_for()
    row.locator("button[value=allow]").click()
    assert held.decision()["behavior"] == "allow"
    row.wait_for(state="detached")


def test_three_equal_decisions_become_a_rule_that_answers_the_fifth_request(
    agentboard_server, page
):
    server = agentboard_server
    login(page, server)
    page.goto(f"{server.url}/inbox/")
    page.wait_for_selector("#connection[data-state=live]")
    for command in COMMANDS[:3]:
        allow_in_the_inbox(server, page, command)

    # The suggestion, on the rules page (and in the inbox, for reviewers).
    page.goto(f"{server.url}/inbox/")
    page.locator(".inbox-suggestions").get_by_text("Bash(npm run test*)").wait_for()
    page.goto(f"{server.url}/inbox/rules/")
    suggestion = page.locator(".suggestion", has_text="Bash(npm run test*)")
    assert "People allowed 3 such requests, never otherwise" in suggestion.inner_text()

    # Edit opens the form with it, tested; the Backtest button tests it again (htmx).
    suggestion.get_by_role("link", name="Edit").click()
    assert page.get_by_label("Rule", exact=True).input_value() == "Bash(npm run test*)"
    page.locator("#backtest .backtest-summary").wait_for()
    page.get_by_text("all", exact=True).click()
    page.get_by_role("button", name="Backtest").click()
    summary = page.locator("#backtest .backtest-summary", has_text="On all of the requests")
    summary.wait_for()
    assert "it matches 3 that people decided and agrees with 3." in summary.inner_text()
    assert page.url.endswith("#rule-form")  # no page load: the panel alone was redrawn
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for name, width in (("wide", 1280), ("phone", 390)):
            page.set_viewport_size({"width": width, "height": 900})
            page.evaluate("window.scrollTo(0, 0)")  # the sticky header at the top of the shot
            screenshot(page, f"rules-suggestion-backtest-{name}-{scheme}")
            assert violations(page) == [], (scheme, name)
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1280, "height": 860})

    # Saved in shadow: the fourth request still waits for a person; the rule records a verdict.
    page.get_by_label("Save in shadow").check()
    page.get_by_role("button", name="Add rule").click()
    rule = page.locator(".rule-row", has_text="Bash(npm run test*)")
    assert "shadow: decides nothing" in said(rule)
    assert page.locator(".suggestion").count() == 0
    page.goto(f"{server.url}/inbox/")
    page.wait_for_selector("#connection[data-state=live]")
    allow_in_the_inbox(server, page, COMMANDS[3])
    page.goto(f"{server.url}/inbox/rules/")
    assert "agrees with people on 1 of 1" in said(rule)
    assert "Hits 0" in said(rule)

    # Made active: the fifth is answered by the rule at once, nobody asked.
    rule.get_by_role("button", name="Make active").click()
    assert "● active" in said(rule)
    fifth = HeldHook(server, bash(COMMANDS[4]))
    fifth.start()
    fifth.join(10)
    assert fifth.answer is not None, "the rule did not answer at once"
    assert fifth.decision()["behavior"] == "allow"
    page.reload()
    assert "Hits 1" in said(rule)
    page.goto(f"{server.url}/inbox/")
    assert page.locator("[data-inbox-item]").count() == 0
    page.goto(f"{server.url}/inbox/rules/")
    screenshot(page, "rules-after-a-hit")
