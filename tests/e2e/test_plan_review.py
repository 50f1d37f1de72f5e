from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from websockets.sync.client import ClientConnection, connect

from tests.conftest import login, screenshot, two_processes
from tests.liveserver import LiveServer

# Live delivery over the channel layer: also run on PostgreSQL + Redis (`.ci/run`).
pytestmark = [pytest.mark.browser, pytest.mark.live]

REV_1 = """# Pagination for the orders API

1. Offset paging with `?page=N`
2. Keep the response shape

- [ ] limit max 100
- [x] read the current handler

```python
def paginate(query, page):
    return query[page * 100 : (page + 1) * 100]
```
"""
REV_2 = REV_1.replace("1. Offset paging with `?page=N`", "1. Cursor paging with `?after=<id>`")

HOSTILE = """# Harmless <img src=x onerror="window.__pwned = 'title'"> title

<script>window.__pwned = 'script'; alert('script')</script>

<img src=x onerror="window.__pwned = 'img'; alert('img')">

<svg onload="window.__pwned = 'svg'"></svg>

[click me](javascript:window.__pwned='link';alert('link'))

<a href="javascript:window.__pwned='raw-link'">raw link</a>
"""


@contextmanager
def agent_socket(server: LiveServer) -> Iterator[ClientConnection]:
    with connect(
        f"{server.ws_url}/ws/agent/",
        additional_headers={"Authorization": f"Bearer {server.token}"},
        proxy=None,
    ) as socket:
        yield socket


def next_frame(socket: ClientConnection) -> dict:
    return json.loads(socket.recv(timeout=15))


def exit_plan_mode(plan: str, *, frame_id: str, session_id: str = "sess-orders") -> str:
    return json.dumps(
        {
            "type": "exit_plan_mode",
            "id": frame_id,
            "session_id": session_id,
            "agent_id": session_id,
            "plan": plan,
            "plan_file_path": "/home/dev/.claude/plans/orders-pagination.md",
        }
    )


def post_plan(server: LiveServer, session_id: str, plan: str) -> dict:
    request = urllib.request.Request(
        f"{server.url}/api/v1/sessions/{session_id}/agents/{session_id}/plans",
        data=json.dumps({"plan": plan}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def test_a_plan_travels_from_agent_to_reviewer_and_back_in_real_time(agentboard_server, page):
    server = agentboard_server
    login(page, server)
    page.goto(f"{server.url}/plans/")
    page.wait_for_selector("#connection[data-state=live]")
    page.evaluate("window.__marker = 'not reloaded'")

    with agent_socket(server) as agent:
        agent.send(exit_plan_mode(REV_1, frame_id="rev1"))
        ack = next_frame(agent)
        assert (ack["type"], ack["id"], ack["result"]["status"]) == ("ack", "rev1", "pending")
        first_id = ack["result"]["id"]

        # The plan appears in the open queue, the header and the title, without a reload.
        row = page.locator(f"#plan-row-{first_id}")
        row.wait_for()
        assert "Pagination for the orders API" in row.inner_text()
        assert "waiting" in row.inner_text()
        page.wait_for_function("() => document.title === '(1) Plans · Agentboard'")
        assert page.locator("#plans-waiting").inner_text() == "1 plan waiting"
        assert page.evaluate("window.__marker") == "not reloaded"
        screenshot(page, "plan-queue")

        row.get_by_role("link").click()
        page.wait_for_url(f"{server.url}/plans/{first_id}/")
        plan_body = page.locator(".plan-body")
        # The plan's title heads the page, and the plan follows at once.
        assert page.locator("h1").inner_text() == "Pagination for the orders API"
        assert plan_body.locator("h1, h2").count() == 0
        assert plan_body.locator("input[type=checkbox]").count() == 2
        assert plan_body.locator("pre code .k").first.inner_text() == "def"

        # r without feedback asks for it first; Esc leaves the text box, r again rejects.
        page.keyboard.press("r")
        feedback = page.get_by_label("Notes or feedback")
        assert feedback.evaluate("element => element === document.activeElement")
        assert page.get_by_text("Write what should change").is_visible()
        feedback.type("Use cursor paging, offsets skip rows.")
        page.keyboard.press("Escape")
        page.keyboard.press("r")
        page.wait_for_selector("#decision-panel.is-rejected")
        assert "by lead" in page.locator("#decision-panel").inner_text()

        rejected = next_frame(agent)
        assert rejected["type"] == "plan_decided"
        assert (rejected["plan"]["id"], rejected["plan"]["status"]) == (first_id, "rejected")
        assert rejected["plan"]["feedback"] == "Use cursor paging, offsets skip rows."
        assert "plan mode" in rejected["plan"]["message"]

        agent.send(exit_plan_mode(REV_2, frame_id="rev2"))
        ack = next_frame(agent)
        assert (ack["result"]["revision"], ack["result"]["status"]) == (2, "pending")
        second_id = ack["result"]["id"]

        # Still on rev 1's page: rev 2 shows up in its history and in the queue by itself.
        page.locator("#plan-thread").get_by_role("link", name="rev 2").wait_for()
        page.locator(f"#plan-row-{second_id}").wait_for()
        page.keyboard.press("j")  # the next waiting plan
        page.wait_for_url(f"{server.url}/plans/{second_id}/")
        changes = page.locator(".plan-changes")
        assert "Use cursor paging, offsets skip rows." in changes.inner_text()
        # What changed is said at the top and marked inside the rendered plan, in words.
        summary = page.locator("#what-changed")
        assert "What changed since rev 1: 1 part added, 1 removed" in summary.inner_text()
        plan_body = page.locator(".plan-body")
        removed = plan_body.locator("li.change-removed")
        added = plan_body.locator("li.change-added")
        assert (
            removed.inner_text().startswith("REMOVED") and "Offset paging" in removed.inner_text()
        )
        assert added.inner_text().startswith("ADDED") and "Cursor paging" in added.inner_text()
        # Tab order follows what the eye reads: from the top, the header and the switch come
        # before the decision box; nothing far down the page is reached before it.
        page.evaluate("document.activeElement.blur()")
        stops = []
        for _ in range(40):
            page.keyboard.press("Tab")
            stop = page.evaluate(
                "(() => { const e = document.activeElement; const box = e.getBoundingClientRect();"
                " return [e.id || e.textContent.trim(), box.top + window.scrollY]; })()"
            )
            stops.append(stop)
            if stop[0] == "decision-text":
                break
        names = [name for name, _ in stops]
        assert "decision-text" in names and "Source diff +1 \u22121" in names
        box_top = stops[-1][1]
        assert all(top <= box_top for _, top in stops), stops
        # The switch shows the source diff instead, and back.
        summary.get_by_role("link", name="Source diff").click()
        source = page.locator("#plan-source-diff")
        assert source.is_visible() and not plan_body.is_visible()
        assert "Offset paging" in source.locator(".diff-line.is-remove").inner_text()
        assert "Cursor paging" in source.locator(".diff-line.is-add").inner_text()
        assert source.locator(".diff-line.is-add .diff-marker").inner_text() == "+"
        assert page.url.endswith("?changes=source")
        summary.get_by_role("link", name="In the plan").click()
        assert plan_body.is_visible() and not source.is_visible()
        page.wait_for_selector("#connection[data-state=live]")
        screenshot(page, "plan-review")
        page.emulate_media(color_scheme="dark")
        screenshot(page, "plan-review-dark")
        page.set_viewport_size({"width": 390, "height": 844})
        screenshot(page, "plan-review-phone")
        page.set_viewport_size({"width": 1280, "height": 860})
        page.emulate_media(color_scheme="light")

        page.keyboard.press("Shift+KeyA")  # Caps Lock's "A" decides nothing any more
        page.keyboard.press("e")  # Approve and auto-accept edits: asks first
        dialog = page.get_by_role("dialog", name="Approve and auto-accept edits?")
        dialog.wait_for()
        page.keyboard.press("Escape")  # cancels
        dialog.wait_for(state="hidden")
        assert not page.locator("#decision-panel.is-decided").count()
        page.keyboard.press("e")
        dialog.get_by_role("button", name="Yes, approve and auto-accept").click()
        page.wait_for_selector("#decision-panel.is-approved")
        assert "accepted automatically" in page.locator("#decision-panel").inner_text()
        screenshot(page, "plan-review-approved")

        approved = next_frame(agent)
        assert approved["type"] == "plan_decided"
        assert (approved["plan"]["id"], approved["plan"]["status"]) == (second_id, "approved")
        assert approved["plan"]["mode_after"] == "acceptEdits"
        assert "todo list" in approved["plan"]["message"]

    page.goto(f"{server.url}/plans/")
    page.emulate_media(color_scheme="dark")
    screenshot(page, "plan-queue-dark")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "plan-queue-phone")


def test_a_hostile_plan_runs_nothing_in_a_real_browser(agentboard_server, page):
    server = agentboard_server
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    login(page, server)
    page.goto(f"{server.url}/plans/")
    page.wait_for_selector("#connection[data-state=live]")

    # Arriving live: htmx swaps the queue fragment in while the page is open.
    plan_id = post_plan(server, "sess-hostile", HOSTILE)["id"]
    page.locator(f"#plan-row-{plan_id}").wait_for()

    page.goto(f"{server.url}/plans/{plan_id}/")
    page.wait_for_selector("#connection[data-state=live]")
    body = page.locator(".plan-body")
    assert body.locator("script, img, svg, iframe").count() == 0
    assert body.locator("a").count() == 0
    text = body.inner_text()
    assert "<script>window.__pwned = 'script'" in text
    assert "<img src=x onerror=" in text
    assert "[click me](javascript:" in text
    body.get_by_text("[click me]", exact=False).click()

    page.goto(f"{server.url}/sessions/sess-hostile/")
    page.wait_for_selector("#connection[data-state=live]")
    assert "<img src=x" in page.locator("#session-plans").inner_text()

    assert page.evaluate("window.__pwned") is None
    assert dialogs == []


@pytest.mark.services
@two_processes
def test_a_decision_on_one_server_reaches_an_agent_waiting_on_another(server_factory, page):
    # Only the decision bus can bring it within the test's wait: the resync is a minute away.
    env = {"AGENTBOARD_DECISION_RESYNC_SECONDS": "60"}
    server_a = server_factory(env=env)
    server_b = server_factory(shared_with=server_a, env=env)

    with agent_socket(server_a) as agent:
        agent.send(exit_plan_mode(REV_1, frame_id="a", session_id="sess-two"))
        plan_id = next_frame(agent)["result"]["id"]

        login(page, server_b)
        page.goto(f"{server_b.url}/plans/{plan_id}/")
        page.locator("button[value=approve]").click()
        page.wait_for_selector("#decision-panel.is-approved")

        pushed = next_frame(agent)
        assert pushed["type"] == "plan_decided"
        assert (pushed["plan"]["id"], pushed["plan"]["status"]) == (plan_id, "approved")
        assert (pushed["plan"]["mode_after"], pushed["plan"]["decided_by"]) == ("default", "lead")
