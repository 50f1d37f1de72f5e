"""How a decision reaches the agents waiting on it: every event loop of the deciding process at
once, and with Redis every other process through one PUBLISH on the decision bus.

The resync (a re-read of everything waited on) would wake them too, so these tests set it to a
minute: what wakes a waiter within seconds here is the push under test."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import threading
import time
import urllib.parse
import urllib.request

import pytest
from asgiref.sync import sync_to_async

from dashboard.core.writer import write
from dashboard.live import watch as watch_module
from dashboard.live.watch import PERMISSION, PLAN, bus_channel, watch_for
from planmode import services
from planmode.models import Plan
from tests.conftest import two_processes

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


def redis_reachable() -> bool:
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError:
        return False
    return True


needs_redis = pytest.mark.skipif(
    not redis_reachable(),
    reason=f"The decision bus tests need Redis, and none answers at {REDIS_URL} (set REDIS_URL).",
)


@pytest.fixture
def no_resync(settings):
    settings.AGENTBOARD_DECISION_RESYNC_SECONDS = 60


@pytest.fixture
def bus(settings, no_resync):
    """Redis for this test alone: its own channel, as another deployment sharing the Redis."""
    settings.AGENTBOARD_REDIS_URL = REDIS_URL
    settings.AGENTBOARD_REDIS_PREFIX = f"agentboard-test-{secrets.token_hex(4)}"


async def submit(user, session_id: str = "sess-1") -> Plan:
    submitted = await write(
        services.plan_submit,
        owner=user,
        session_id=session_id,
        agent_id=session_id,
        plan="# Pagination\n\n1. Add a cursor\n",
        plan_file_path=None,
        source="api",
    )
    return submitted.plan


class Heard:
    """A waiter that remembers what it was told."""

    def __init__(self) -> None:
        self.states: list[dict | None] = []
        self.event = asyncio.Event()

    def __call__(self, state: dict | None) -> None:
        self.states.append(state)
        self.event.set()

    async def first(self, timeout: float = 5) -> dict | None:
        await asyncio.wait_for(self.event.wait(), timeout)
        return self.states[0]


def other_process_announces(*decisions) -> None:
    """What another server process does after its commit: one message on the bus."""
    watch_module._Announcer().send(list(decisions))


async def redis_command(*args):
    from redis import asyncio as aioredis

    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        return await client.execute_command(*args)
    finally:
        await client.aclose()


async def subscribers() -> int:
    from redis import asyncio as aioredis

    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        [(_, count)] = await client.pubsub_numsub(bus_channel())
    finally:
        await client.aclose()
    return count


# --- one process ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_decision_wakes_the_waiters_of_every_event_loop_of_the_process(
    user, reviewer, no_resync
):
    plan = await submit(user)
    here = Heard()
    await watch_for().add(plan.pk, here)

    # An agent waiting on the same plan on another event loop of this process.
    ready, elsewhere = threading.Event(), {}

    def other_loop() -> None:
        async def wait() -> None:
            heard = Heard()
            await watch_for().add(plan.pk, heard)
            ready.set()
            elsewhere["state"] = await heard.first(10)
            await watch_for().close()

        asyncio.run(wait())

    thread = threading.Thread(target=other_loop)
    thread.start()
    await asyncio.to_thread(ready.wait, 5)

    await write(services.plan_decide, plan_id=plan.pk, reviewer=reviewer, approve=True)

    assert (await here.first())["status"] == "approved"
    await asyncio.to_thread(thread.join, 10)
    assert elsewhere["state"]["status"] == "approved"
    assert watch_for().waiting == {}


# --- the bus ----------------------------------------------------------------------------------


@needs_redis
async def test_a_decision_of_another_process_wakes_only_its_own_waiters_here(bus):
    waiting, other = Heard(), Heard()
    watch = watch_for()
    await watch.add(41, waiting, PERMISSION)
    await watch.add(42, other, PERMISSION)
    try:
        other_process_announces(((PERMISSION, 41), {"id": 41, "status": "approved"}))
        assert await waiting.first() == {"id": 41, "status": "approved"}
        await asyncio.sleep(0.2)
        assert other.states == []
        assert list(watch.waiting) == [(PERMISSION, 42)]
    finally:
        watch.discard(42, other, PERMISSION)


@needs_redis
async def test_waiting_on_many_things_takes_one_subscription_and_none_once_nobody_waits(bus):
    watch = watch_for()
    waiters = [Heard() for _ in range(50)]
    for pk, waiter in enumerate(waiters, 1):
        await watch.add(pk, waiter)
    assert await subscribers() == 1

    for pk, waiter in enumerate(waiters, 1):
        watch.discard(pk, waiter)
    deadline = time.monotonic() + 5
    while await subscribers() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert await subscribers() == 0


@needs_redis
async def test_anything_else_on_the_bus_wakes_nobody(bus):
    waiter = Heard()
    watch = watch_for()
    await watch.add(7, waiter)
    for junk in [
        b"not json",
        b'{"kind": "plan", "pk": 7}',
        json.dumps([["plan", "7", {"status": "approved"}]]).encode(),
        json.dumps([["plan", 7, {"status": "pending"}]]).encode(),
        json.dumps([["plan", 7, "<script>alert(1)</script>"]]).encode(),
        json.dumps([["continuation", 7, {"status": "approved"}]]).encode(),
        b"\xff\xfe",
    ]:
        await redis_command("PUBLISH", bus_channel(), junk)
    await asyncio.sleep(0.3)
    assert waiter.states == []

    # The subscription survived all of it.
    other_process_announces(((PLAN, 7), {"id": 7, "status": "rejected"}))
    assert (await waiter.first())["status"] == "rejected"


@needs_redis
@pytest.mark.django_db(transaction=True)
async def test_a_lost_subscription_comes_back_and_catches_up_at_once(
    user, reviewer, bus, monkeypatch
):
    monkeypatch.setattr(watch_module, "BUS_RETRY_SECONDS", 0.1)
    plan = await submit(user)
    waiter = Heard()
    watch = watch_for()
    await watch.add(plan.pk, waiter)
    # Decided by a process that died before it published: only the database knows.
    await sync_to_async(services.plan_decide)(plan_id=plan.pk, reviewer=reviewer, approve=True)

    clients = (await redis_command("CLIENT", "LIST", "TYPE", "pubsub")).decode()
    name = watch_module.bus_client_name()
    ours = [line for line in clients.splitlines() if f"name={name}" in line]
    assert len(ours) == 1
    client_id = ours[0].split()[0].removeprefix("id=")
    await redis_command("CLIENT", "KILL", "ID", client_id)

    assert (await waiter.first())["status"] == "approved"
    # And it follows the bus again.
    again = Heard()
    await watch.add(99, again)
    other_process_announces(((PLAN, 99), {"id": 99, "status": "approved"}))
    assert (await again.first())["status"] == "approved"


@pytest.mark.django_db(transaction=True)
async def test_without_redis_answering_a_wait_starts_at_once_and_the_resync_wakes_it(
    user, reviewer, settings
):
    settings.AGENTBOARD_REDIS_URL = "redis://127.0.0.1:9/0"  # nothing listens there
    settings.AGENTBOARD_DECISION_RESYNC_SECONDS = 0.2
    plan = await submit(user)
    waiter = Heard()
    started = time.monotonic()
    await watch_for().add(plan.pk, waiter)
    assert time.monotonic() - started < watch_module.SUBSCRIBE_SECONDS

    await sync_to_async(services.plan_decide)(plan_id=plan.pk, reviewer=reviewer, approve=True)
    assert (await waiter.first())["status"] == "approved"


# --- real servers -----------------------------------------------------------------------------


def decide(server, plan_id: int, action: str, text: str = "") -> None:
    """A reviewer's click on `server`."""
    browser = server.log_in()
    form = urllib.parse.urlencode({"action": action, "text": text}).encode()
    request = urllib.request.Request(
        f"{server.url}/plans/{plan_id}/decide/",
        data=form,
        headers={"Cookie": browser["cookie"], "X-CSRFToken": browser["csrf"]},
    )
    urllib.request.urlopen(request, timeout=10).close()


def test_the_waiting_agent_socket_gets_the_decision_as_the_reviewer_wrote_it(
    agentboard_server,
):
    from websockets.sync.client import connect

    server = agentboard_server
    feedback = '<script>alert(1)</script> 移行に触れない 🚫 & keep "quotes"'
    with connect(
        f"{server.ws_url}/ws/agent/",
        additional_headers={"Authorization": f"Bearer {server.token}"},
        proxy=None,
    ) as agent:
        frame = {"type": "exit_plan_mode", "id": 1, "plan": "# Go\n"}
        agent.send(json.dumps(frame | {"session_id": "sess-push", "agent_id": "sess-push"}))
        plan_id = json.loads(agent.recv(timeout=15))["result"]["id"]

        decide(server, plan_id, "reject", feedback)

        pushed = json.loads(agent.recv(timeout=15))
    assert pushed["type"] == "plan_decided"
    assert (pushed["plan"]["id"], pushed["plan"]["status"]) == (plan_id, "rejected")
    assert pushed["plan"]["feedback"] == feedback


@pytest.mark.services
@two_processes
def test_a_held_hook_on_one_process_hears_the_click_on_another_at_once(server_factory):
    env = {"AGENTBOARD_DECISION_RESYNC_SECONDS": "60"}
    holding = server_factory(env=env)
    clicking = server_factory(shared_with=holding, env=env)
    answers: list[dict] = []

    def held_hook() -> None:
        body = {
            "session_id": "sess-held",
            "hook_event_name": "PermissionRequest",
            "cwd": "/work/app",
            "permission_mode": "plan",
            "tool_name": "ExitPlanMode",
            "tool_input": {"plan": "# Paging\n\n<script>alert(1)</script>\n"},
        }
        request = urllib.request.Request(
            f"{holding.url}/hooks/claude-code",
            data=json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {holding.token}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            answers.append(json.loads(response.read()))

    hook = threading.Thread(target=held_hook)
    hook.start()
    plan_id = None
    deadline = time.monotonic() + 10
    while plan_id is None and time.monotonic() < deadline:
        time.sleep(0.05)
        found = holding.query("SELECT id FROM planmode_plan WHERE status = 'pending'")
        plan_id = found[0][0] if found else None
    assert plan_id is not None, holding.log()

    clicked = time.monotonic()
    decide(clicking, plan_id, "approve")
    hook.join(timeout=15)

    assert time.monotonic() - clicked < 15  # not the resync's minute
    [answer] = answers
    decision = answer["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "allow"


@pytest.mark.django_db(transaction=True)
async def test_a_decision_made_while_redis_fails_is_saved_and_heard_here(
    user, reviewer, settings, caplog, monkeypatch
):
    caplog.set_level(logging.INFO, logger="dashboard.live.watch")
    monkeypatch.setattr(watch_module, "_announcer", watch_module._Announcer())
    settings.AGENTBOARD_REDIS_URL = "redis://127.0.0.1:9/0"  # nothing listens there
    first, second = await submit(user, "sess-1"), await submit(user, "sess-2")
    waiter = Heard()
    watch_for()._bus_known.set()  # as if subscribed: this test is about publishing
    await watch_for().add(first.pk, waiter)

    await write(services.plan_decide, plan_id=first.pk, reviewer=reviewer, approve=True)
    await write(
        services.plan_decide, plan_id=second.pk, reviewer=reviewer, approve=False, feedback="No"
    )

    assert (await waiter.first())["status"] == "approved"
    assert [plan.status async for plan in Plan.objects.order_by("pk")] == ["approved", "rejected"]
    messages = [record.getMessage() for record in caplog.records]
    assert any("could not publish 1 decision(s)" in message for message in messages)
    # The second did not try again (no second timeout for the writer): it is left to the resync.
    assert any("1 decision(s) left to the resync" in message for message in messages)
