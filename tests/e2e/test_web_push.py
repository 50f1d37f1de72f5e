"""Web Push end to end, as far as it runs without a real push service: the server encrypts and
signs a message for a device registered from the browser, a local push service checks the
VAPID JWT and decrypts it, and hands it to Chromium's service worker (DevTools'
`ServiceWorker.deliverPushMessage`, which is what a push service's delivery amounts to), which
shows the notification. Chromium cannot subscribe headless (it has no push service to ask), so
the subscription's keys are the local push service's."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.conftest import login
from tests.notifications.test_push import PushService

pytestmark = pytest.mark.browser


def test_a_plan_reaches_the_service_worker_as_a_notification(chromium, server_factory):
    server = server_factory(
        env={"AGENTBOARD_WEBHOOK_ALLOW_PRIVATE": "true", "AGENTBOARD_NOTIFY_POLL_SECONDS": "0.2"}
    )
    push = PushService()
    context = chromium.new_context()
    context.grant_permissions(["notifications"], origin=server.url)
    page = context.new_page()
    try:
        login(page, server)
        page.goto(f"{server.url}/settings/")
        page.evaluate("async () => { await navigator.serviceWorker.ready; }")
        subscription = {**push.subscription("phone"), "name": "Lead's phone"}
        status = page.evaluate(
            """async body => {
              const token = JSON.parse(document.body.getAttribute("hx-headers"))["x-csrftoken"];
              const response = await fetch("/settings/notifications/devices/", {
                method: "POST", headers: {"Content-Type": "application/json", "X-CSRFToken": token},
                body: JSON.stringify(body)});
              return response.status;
            }""",
            subscription,
        )
        assert status == 201
        page.reload()
        assert page.get_by_label("Name of Lead's phone").input_value() == "Lead's phone"

        request = urllib.request.Request(
            f"{server.url}/api/v1/sessions/sess-1/agents/sess-1/plans",
            json.dumps({"plan": "# Ship the <b>release</b>\n\nNow."}).encode(),
            headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request) as response:
            plan = json.load(response)["id"]
        push.receiver.wait_for(1, timeout=30)
        assert push.problems == []
        [message] = push.messages

        cdp = context.new_cdp_session(page)
        registrations: list[dict] = []
        cdp.on(
            "ServiceWorker.workerRegistrationUpdated",
            lambda event: registrations.extend(event["registrations"]),
        )
        cdp.send("ServiceWorker.enable")
        for _ in range(50):
            if registrations:
                break
            page.wait_for_timeout(50)
        [registration] = [r for r in registrations if r["scopeURL"] == f"{server.url}/"]
        cdp.send(
            "ServiceWorker.deliverPushMessage",
            {
                "origin": f"{server.url}/",
                "registrationId": registration["registrationId"],
                "data": json.dumps(message),
            },
        )
        shown = page.wait_for_function(
            """async () => {
              const all = await (await navigator.serviceWorker.ready).getNotifications();
              const seen = n => ({title: n.title, body: n.body, tag: n.tag, url: n.data.url});
              return all.length ? all.map(seen) : null;
            }"""
        ).json_value()
        assert shown == [
            {
                "title": "unnamed project · main agent",
                "body": "Plan rev 1 waits for review: Ship the <b>release</b>",
                "tag": f"plan-{plan}",
                "url": f"{server.url}/plans/{plan}/",
            }
        ]
    finally:
        context.close()
        push.receiver.stop()
