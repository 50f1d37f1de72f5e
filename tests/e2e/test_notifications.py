"""Desktop notifications in real Chromium: switched on by a button, one for a new plan (which
opens it when clicked), none for the reviewer's own decision, none for what already waited.

Headless Chromium shows no notification anyone could look at, so an init script records each
`new Notification(...)` the page makes (the real constructor still runs, with the permission
granted to the origin), and the test reads that record."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import login, screenshot
from tests.e2e.seed import add_owner
from tests.liveserver import LiveServer
from tests.notifications.receivers import Receiver, verify_signature

pytestmark = pytest.mark.browser

RECORD = """
(() => {
  const Real = window.Notification;
  if (!Real) return;
  window.__notes = [];
  class Recorded extends Real {
    constructor(title, options) {
      super(title, options);
      window.__notes.push({ title, body: options && options.body, tag: options && options.tag });
      (window.__noteObjects = window.__noteObjects || []).push(this);
    }
  }
  Object.defineProperty(Recorded, "permission", { get: () => Real.permission });
  Recorded.requestPermission = (...args) => Real.requestPermission(...args);
  window.Notification = Recorded;
})();
"""


def submit_plan(server: LiveServer, session: str, title: str, token: str = "") -> int:
    request = urllib.request.Request(
        f"{server.url}/api/v1/sessions/{session}/agents/{session}/plans",
        json.dumps({"plan": f"# {title}\n\nDo it."}).encode(),
        headers={
            "Authorization": f"Bearer {token or server.token}",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request) as response:
        return json.load(response)["id"]


def notes(page) -> list[dict]:
    return page.evaluate("() => window.__notes || []")


def test_a_new_plan_notifies_once_and_the_reviewers_own_decision_does_not(
    chromium, agentboard_server
):
    server = agentboard_server
    context = chromium.new_context(viewport={"width": 1280, "height": 860})
    context.grant_permissions(["notifications"], origin=server.url)
    context.add_init_script(RECORD)
    page = context.new_page()
    try:
        login(page, server)
        waiting_before = submit_plan(server, "sess-old", "Already waiting")

        page.goto(f"{server.url}/settings/")
        toggle = page.get_by_role("button", name="Turn on desktop notifications")
        assert page.locator("[data-notify-state]").inner_text() == "Off in this browser."
        toggle.click()
        page.get_by_role("button", name="Turn off desktop notifications").wait_for()
        assert page.locator("[data-notify-state]").inner_text() == "On in this browser."

        page.goto(f"{server.url}/")
        page.locator("#connection[data-state=live]").wait_for()
        assert notes(page) == []  # what waited before is not news

        plan = submit_plan(server, "sess-new", "Pagination <b>now</b>")
        page.wait_for_function("() => (window.__notes || []).length >= 1")
        [note] = notes(page)
        assert note["tag"] == f"plan-{plan}"
        assert note["title"].endswith("main agent wants its plan reviewed")
        assert note["body"] == "Plan rev 1: Pagination <b>now</b>"

        # The reviewer decides in a second tab; the first tab sees the count drop, no news.
        review = context.new_page()
        review.goto(f"{server.url}/plans/{waiting_before}/")
        review.get_by_role("button", name="Approve a", exact=True).click()
        review.locator("#decision-panel.is-approved").wait_for()
        page.wait_for_function(
            "() => document.getElementById('plans-waiting').dataset.count === '1'"
        )
        later = submit_plan(server, "sess-later", "Later plan")
        # Two open tabs: one shows it (the first opened), the other one does not.
        count = "tag => (window.__notes || []).filter(n => n.tag === tag).length"
        page.wait_for_function(
            "key => (localStorage.getItem('agentboard.notified') || '').includes(key)",
            arg=f"plan-{later}",
        )
        review.wait_for_timeout(500)
        shown = page.evaluate(count, f"plan-{later}") + review.evaluate(count, f"plan-{later}")
        assert shown == 1
        # The decision in the second tab gave no notification anywhere.
        assert [n["tag"] for n in notes(page) + notes(review)].count(f"plan-{waiting_before}") == 0
        assert notes(page)[0]["tag"] == f"plan-{plan}"
        # Two notifications in all: the new plan and the later one; none for the decision.
        assert len(notes(page)) + len(notes(review)) == 2

        page.evaluate("() => window.__noteObjects[0].onclick()")
        page.wait_for_url(f"{server.url}/plans/{plan}/")

        # The tab that showed them closes: the other one takes over.
        page.close()
        last = submit_plan(server, "sess-last", "Last plan")
        review.wait_for_function(
            "tag => (window.__notes || []).some(n => n.tag === tag)", arg=f"plan-{last}"
        )
        review.close()
    finally:
        context.close()


def agent_call(
    server: LiveServer, method: str, path: str, body: dict, headers: dict | None = None
) -> None:
    request = urllib.request.Request(
        f"{server.url}{path}",
        json.dumps(body).encode(),
        method=method,
        headers={
            "Authorization": f"Bearer {server.token}",
            "Content-Type": "application/json",
            **(headers or {}),
        },
    )
    urllib.request.urlopen(request).close()


NAMED_REVIEWER = """
from django.contrib.auth import get_user_model
from dashboard.models import Project
mia = get_user_model().objects.create_user("mia", password="not-used-here")
project = Project.objects.create(key="github.com/acme/shop", name="shop",
                                 repository="github.com/acme/shop")
project.reviewers.add(mia)
"""


def test_a_project_that_names_its_reviewers_notifies_the_others_after_the_fallback(
    chromium, server_factory
):
    # Three seconds: the lead, who is not the project's named reviewer, hears of it then.
    server = server_factory(env={"AGENTBOARD_REVIEW_FALLBACK_MINUTES": "0.05"})
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", NAMED_REVIEWER],
        cwd=Path(__file__).resolve().parents[2], env=server.env, check=True, capture_output=True,
    )  # fmt: skip
    # Raj's agent (the lead is not its owner, who is told at once) reports its repository
    # first, so its plan is the project's from the start.
    raj = add_owner(server, "raj")
    agent_call(
        server, "PUT", "/api/v1/sessions/sess-shop/agents/sess-shop/todos", {"todos": []},
        headers={"X-Agentboard-Repository": "git@github.com:acme/shop.git",
                 "Authorization": f"Bearer {raj}"},
    )  # fmt: skip
    context = chromium.new_context(viewport={"width": 1280, "height": 860})
    context.grant_permissions(["notifications"], origin=server.url)
    context.add_init_script(RECORD)
    page = context.new_page()
    try:
        login(page, server)
        page.goto(f"{server.url}/settings/")
        page.get_by_role("button", name="Turn on desktop notifications").click()
        page.get_by_role("button", name="Turn off desktop notifications").wait_for()
        page.goto(f"{server.url}/")
        page.locator("#connection[data-state=live]").wait_for()

        submitted = time.monotonic()
        plan = submit_plan(server, "sess-shop", "Cursor pagination", token=raj)
        # The count says so at once; the notification waits for the lead's turn.
        page.wait_for_function(
            "() => document.getElementById('plans-waiting').dataset.count === '1'"
        )
        assert notes(page) == []
        page.wait_for_function("() => (window.__notes || []).length >= 1", timeout=15_000)
        assert time.monotonic() - submitted >= 2.5
        assert [note["tag"] for note in notes(page)] == [f"plan-{plan}"]
    finally:
        context.close()


def test_an_agent_that_stops_with_tasks_left_notifies(chromium, agentboard_server):
    server = agentboard_server
    context = chromium.new_context(viewport={"width": 1280, "height": 860})
    context.grant_permissions(["notifications"], origin=server.url)
    context.add_init_script(RECORD)
    page = context.new_page()
    try:
        login(page, server)
        page.goto(f"{server.url}/settings/")
        page.get_by_role("button", name="Turn on desktop notifications").click()
        page.get_by_role("button", name="Turn off desktop notifications").wait_for()
        page.goto(f"{server.url}/")
        page.locator("#connection[data-state=live]").wait_for()
        todos = [
            {"content": "Write the parser", "status": "in_progress", "activeForm": "Writing"},
            {"content": "Test it", "status": "pending", "activeForm": "Testing"},
        ]
        agent_call(
            server, "PUT", "/api/v1/sessions/sess-stop/agents/sess-stop/todos", {"todos": todos}
        )
        # It stops in plan mode, where the enforcer lets it stop: the lead should know.
        agent_call(
            server,
            "POST",
            "/hooks/claude-code",
            {
                "session_id": "sess-stop",
                "hook_event_name": "Stop",
                "permission_mode": "plan",
                "cwd": "/work/parser",
                "stop_hook_active": False,
            },
        )

        page.wait_for_function("() => (window.__notes || []).length >= 1")
        [note] = notes(page)
        assert note["tag"].startswith("stopped-")
        assert note["title"] == "parser · main agent stopped with tasks left"
        assert note["body"].startswith("2 unfinished: the session is in plan mode")
        page.evaluate("() => window.__noteObjects[0].onclick()")
        page.wait_for_url(f"{server.url}/sessions/sess-stop/")
    finally:
        context.close()


def test_a_webhook_is_added_and_tested_from_a_phone_in_dark_mode(chromium, server_factory):
    server = server_factory(env={"AGENTBOARD_WEBHOOK_ALLOW_PRIVATE": "true"})
    receiver = Receiver(answer=b"ok: message received").start()
    context = chromium.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = context.new_page()
    try:
        login(page, server)
        page.goto(f"{server.url}/settings/")
        page.get_by_label("Name", exact=True).fill("Team chat")
        page.get_by_label("Address").fill("ftp://files.example.com/hook")
        page.get_by_role("button", name="Add the webhook").click()
        page.get_by_text("Give an http or https address").wait_for()
        page.get_by_label("Address").fill(f"{receiver.url}/services/T0/B0/secret-token")
        page.get_by_label("JSON webhook signed with HMAC-SHA256").check()
        page.get_by_role("button", name="Add the webhook").click()
        secret = page.get_by_label("The signing secret").input_value()
        assert len(secret) > 30
        assert "secret-token" not in page.content()
        page.get_by_role("button", name="Send a test to Team chat").click()
        page.get_by_text("✓ The receiver answered 200.").wait_for()
        assert page.get_by_text("ok: message received").is_visible()
        assert verify_signature(
            secret,
            receiver.received[0].headers["X-Agentboard-Signature"],
            receiver.received[0].body,
        )
        screenshot(page, "notifications-settings-phone-dark")
        assert page.get_by_role("heading", name="Phones and other devices").is_visible()
        assert page.get_by_role("button", name="Turn on push here").is_visible()
        submit_plan(server, "sess-log", "Plan for the log")
        receiver.wait_for(2)
        page.get_by_role("link", name="Delivery log").click()
        page.get_by_role("heading", name="Deliveries of “Team chat”").wait_for()
        for _ in range(50):  # the worker records the answer just after the receiver got it
            if page.get_by_text("✓ sent").count():
                break
            page.wait_for_timeout(100)
            page.reload()
        assert page.get_by_text("Plan rev 1 waits for review: Plan for the log").is_visible()
        assert page.get_by_text("✓ sent").is_visible()
        screenshot(page, "notifications-delivery-log-phone-dark")
    finally:
        context.close()
        receiver.stop()
