"""The delivery worker inside real `serve` processes: resumed after a kill, and each delivery
sent once with two processes on one database (PostgreSQL + Redis when DATABASE_URL and
REDIS_URL are set, as in CI's second run; the shared SQLite file otherwise)."""

from __future__ import annotations

import http.cookiejar
import json
import re
import signal
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter

import pytest

from tests.liveserver import LiveServer
from tests.notifications.receivers import Receiver, verify_signature

pytestmark = pytest.mark.timeout(300)

FAST = {
    "AGENTBOARD_WEBHOOK_ALLOW_PRIVATE": "true",
    "AGENTBOARD_NOTIFY_RETRY_SECONDS": "0.2",
    "AGENTBOARD_NOTIFY_POLL_SECONDS": "0.2",
    "AGENTBOARD_NOTIFY_LEASE_SECONDS": "3",
}


def browser_for(server: LiveServer) -> urllib.request.OpenerDirector:
    """A logged-in browser session of the bootstrapped reviewer."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    login = f"{server.url}/accounts/login/"
    page = opener.open(login).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    data = {"csrfmiddlewaretoken": token, "username": server.username, "password": server.password}
    opener.open(
        urllib.request.Request(
            login, urllib.parse.urlencode(data).encode(), headers={"Referer": login}
        )
    )
    return opener


def add_webhook(server: LiveServer, url: str) -> str:
    """Through the settings page; returns the signing secret it shows once."""
    opener = browser_for(server)
    page = opener.open(f"{server.url}/settings/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = [
        ("csrfmiddlewaretoken", token),
        ("name", "chat"),
        ("kind", "json"),
        ("url", url),
        ("events", "waiting"),
    ]
    answer = (
        opener.open(
            urllib.request.Request(
                f"{server.url}/settings/notifications/webhooks/",
                urllib.parse.urlencode(form).encode(),
                headers={"Referer": f"{server.url}/settings/"},
            )
        )
        .read()
        .decode()
    )
    return re.search(
        r'id="new-secret" class="token-value" type="text" readonly value="([^"]+)"', answer
    ).group(1)


def submit_plan(server: LiveServer, session: str) -> int:
    request = urllib.request.Request(
        f"{server.url}/api/v1/sessions/{session}/agents/{session}/plans",
        json.dumps({"plan": f"# Plan of {session}\n\nDo it."}).encode(),
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        return json.load(response)["id"]


def all_sent(server: LiveServer, count: int) -> None:
    """Wait until the database has `count` deliveries and every one is sent: after that no
    process picks any of them again."""
    sql = "SELECT count(*), count(*) FILTER (WHERE status = 'sent') FROM notifications_delivery"
    deadline = time.monotonic() + 60
    while server.query(sql) != [(count, count)]:
        assert time.monotonic() < deadline, server.query(sql)
        time.sleep(0.1)


def accepted(receiver: Receiver, statuses_before: int = 0) -> list[str]:
    """Delivery ids the receiver answered 200 (every request after the scripted failures)."""
    return [got.headers["X-Agentboard-Delivery"] for got in receiver.received[statuses_before:]]


def test_two_server_processes_send_each_notification_exactly_once(server_factory):
    receiver = Receiver().start()
    try:
        first = server_factory(env=FAST)
        second = server_factory(shared_with=first, env=FAST)
        secret = add_webhook(first, f"{receiver.url}/hook")
        plans = [submit_plan((first, second)[n % 2], f"sess-{n}") for n in range(40)]
        receiver.wait_for(40, timeout=60)
        all_sent(first, 40)
        got = list(receiver.received)
        ids = Counter(item.headers["X-Agentboard-Delivery"] for item in got)
        assert len(got) == 40, ids.most_common(3)
        assert set(ids.values()) == {1}
        assert {item.json()["id"] for item in got} == set(plans)
        assert all(
            verify_signature(secret, g.headers["X-Agentboard-Signature"], g.body) for g in got
        )
    finally:
        receiver.stop()


def test_a_killed_server_resumes_its_pending_deliveries_when_it_starts_again(server_factory):
    receiver = Receiver(statuses=[500] * 1000).start()
    try:
        server = server_factory(env=FAST)
        add_webhook(server, f"{receiver.url}/hook")
        plans = [submit_plan(server, f"sess-{n}") for n in range(5)]
        receiver.wait_for(5)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(10)
        with receiver.lock:
            failed = len(receiver.received)
            receiver.statuses.clear()
        server.start()
        receiver.wait_for(failed + 5, timeout=60)
        all_sent(server, 5)
        delivered = receiver.received[failed:]
        assert sorted(item.json()["id"] for item in delivered) == sorted(plans)
    finally:
        receiver.stop()


def test_a_receiver_that_never_answers_slows_neither_ingest_nor_decisions(server_factory):
    """The worker sends in the background: while a webhook hangs on every delivery, agents'
    writes and a reviewer's decision are answered as if it were not there."""
    release = threading.Event()
    receiver = Receiver()
    receiver.handle = lambda got: (release.wait(60), (200, b"ok"))[1]
    receiver.start()
    try:
        server = server_factory(env=FAST)
        add_webhook(server, f"{receiver.url}/hook")
        plans = [submit_plan(server, f"sess-{n}") for n in range(3)]
        receiver.wait_for_arrival(1)

        for n in range(30):
            put_todos(server, f"busy-{n % 3}", n, timeout=5)
        opener = browser_for(server)
        assert decide(opener, server, plans[0]) == 200
        status = "SELECT status FROM planmode_plan WHERE id = %s"
        assert server.query(status, (plans[0],)) == [("approved",)]

        pending = "SELECT count(*) FROM notifications_delivery WHERE status <> 'sent'"
        assert server.query(pending) != [(0,)], "the receiver was meant to be still hanging"
    finally:
        release.set()
        receiver.stop()


def put_todos(server: LiveServer, session: str, n: int, *, timeout: float) -> None:
    body = {"todos": [{"content": f"Step {n}", "status": "in_progress", "activeForm": "Working"}]}
    request = urllib.request.Request(
        f"{server.url}/api/v1/sessions/{session}/agents/{session}/todos",
        json.dumps(body).encode(),
        method="PUT",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        assert response.status == 200


def decide(opener: urllib.request.OpenerDirector, server: LiveServer, plan_id: int) -> int:
    review = f"{server.url}/plans/{plan_id}/"
    page = opener.open(review, timeout=5).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = {"csrfmiddlewaretoken": token, "action": "approve", "text": ""}
    request = urllib.request.Request(
        f"{review}decide/", urllib.parse.urlencode(form).encode(), headers={"Referer": review}
    )
    with opener.open(request, timeout=5) as response:
        return response.status
