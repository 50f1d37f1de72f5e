"""A server process holding agents' requests is killed (SIGKILL: nothing of it runs again).
Whichever process is alive, or the next to start, expires what it held within the wait (and a
few seconds) with the reason, and a late answer is refused, never recorded as given."""

from __future__ import annotations

import asyncio
import re
import signal
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from planmode.orphans import ORPHAN_REASON
from tests.conftest import two_processes
from tests.hooks.conftest import load_fixture
from tests.hooks.test_held_requests_live import post_hook
from tests.notifications.test_processes import browser_for

pytestmark = pytest.mark.timeout(120)

WAIT = 3  # seconds a held request waits for a person in these tests
# The holder's own wait, the sweep's grace after it, a sweep's interval, and a margin.
EXPIRED_WITHIN = WAIT + 3 + 2 + 4
SHORT_WAITS = {
    "AGENTBOARD_PLAN_HOOK_WAIT_SECONDS": str(WAIT),
    "AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS": str(WAIT),
}


def held_rows(server) -> list[tuple[str, str, str]]:
    plans = server.query("SELECT 'plan', status, end_reason FROM planmode_plan ORDER BY id")
    requests = server.query(
        "SELECT 'request', status, end_reason FROM planmode_permissionrequest ORDER BY id"
    )
    return [tuple(row) for row in [*plans, *requests]]


def hold_and_kill(server) -> float:
    """A plan and a Bash command held by `server`, which is killed while it holds them (their
    connections stay open until it is dead); when it died."""

    async def scenario() -> float:
        held = [
            asyncio.create_task(post_hook(server, load_fixture(name, session_id=session)))
            for name, session in [
                ("permission_request_exit_plan_mode.json", "planning"),
                ("permission_request_bash.json", "building"),
            ]
        ]
        deadline = time.monotonic() + 10
        while len(await asyncio.to_thread(held_rows, server)) < 2:
            assert time.monotonic() < deadline, "the requests never showed up"
            await asyncio.sleep(0.05)
        assert [status for _, status, _ in held_rows(server)] == ["pending", "pending"]
        server.process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(server.process.wait, 10)
        died = time.monotonic()
        await asyncio.wait(held, timeout=5)
        return died

    with ThreadPoolExecutor(1) as pool:  # the session's Playwright may hold this thread's loop
        return pool.submit(asyncio.run, scenario()).result()


def until_expired(server, since: float) -> float:
    while any(status == "pending" for _, status, _ in held_rows(server)):
        assert time.monotonic() - since < EXPIRED_WITHIN, held_rows(server)
        time.sleep(0.2)
    return time.monotonic() - since


def late_approve(server) -> tuple[int, str]:
    opener = browser_for(server)
    review = f"{server.url}/plans/1/"
    page = opener.open(review, timeout=5).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "action": "approve"}).encode()
    request = urllib.request.Request(f"{review}decide/", form, headers={"Referer": review})
    try:
        with opener.open(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def assert_expired_with_the_reason_and_refused(server) -> None:
    assert held_rows(server) == [
        ("plan", "expired", ORPHAN_REASON),
        ("request", "expired", ORPHAN_REASON),
    ]
    status, page = late_approve(server)
    assert status == 409
    assert "This plan expired: the server process that held the agent" in page
    assert server.query("SELECT count(*) FROM planmode_decision WHERE outcome = 'approved'") == [
        (0,)
    ]
    assert server.query("SELECT decided_by_id FROM planmode_plan") == [(None,)]


def test_a_restarted_server_expires_what_its_killed_predecessor_held(server_factory):
    server = server_factory(env=SHORT_WAITS)
    died = hold_and_kill(server)

    server.start()
    until_expired(server, died)

    assert_expired_with_the_reason_and_refused(server)


@two_processes
def test_the_other_process_expires_what_a_killed_process_held(server_factory):
    holder = server_factory(env=SHORT_WAITS)
    other = server_factory(shared_with=holder, env=SHORT_WAITS)
    died = hold_and_kill(holder)

    took = until_expired(other, died)

    assert took < EXPIRED_WITHIN
    assert_expired_with_the_reason_and_refused(other)
