from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from dashboard.core.errors import ServiceError
from dashboard.core.writer import write, write_sync
from dashboard.live import waiting
from dashboard.live.consumers import BoardConsumer
from dashboard.live.waiting import wait_for_decision
from dashboard.live.watch import watch_for
from dashboard.routing import websocket_application
from planmode.models import Plan
from planmode.services import plan_decide, plan_submit

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = "# Pagination\n\n1. Cursor based paging\n"


def exit_plan_mode(session_id: str = "sess-1", agent_id: str | None = None, **extra) -> dict:
    return {
        "type": "exit_plan_mode",
        "id": "f1",
        "session_id": session_id,
        "agent_id": agent_id or session_id,
        "plan": PLAN,
        "plan_file_path": None,
        **extra,
    }


async def agent_socket(token: str) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(
        websocket_application,
        "/ws/agent/",
        headers=[(b"authorization", f"Bearer {token}".encode()), (b"host", b"localhost:8000")],
    )
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def decide(**kwargs) -> Plan:
    """A reviewer's decision as the review page makes it: through the writer."""
    return (await write(plan_decide, **kwargs)).plan


async def submit(user, **kwargs) -> Plan:
    kwargs = {
        "session_id": "sess-1",
        "agent_id": "sess-1",
        "plan": PLAN,
        "plan_file_path": None,
        "source": "hook",
        **kwargs,
    }
    return (await write(plan_submit, owner=user, **kwargs)).plan


async def test_exit_plan_mode_is_acked_with_the_pending_plan_state(token):
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode(plan_file_path="/home/dev/.claude/plans/paging.md"))
    reply = await agent.receive_json_from(timeout=5)
    plan = await Plan.objects.aget()
    assert reply["type"] == "ack" and reply["id"] == "f1"
    assert reply["result"]["id"] == plan.pk
    assert (reply["result"]["revision"], reply["result"]["status"]) == (1, "pending")
    assert reply["result"]["review_url"] == f"http://localhost:8000/plans/{plan.pk}/"
    assert plan.source == "socket" and plan.plan_file_path == "/home/dev/.claude/plans/paging.md"
    await agent.disconnect()


async def test_the_waiting_agent_gets_plan_decided_the_moment_a_reviewer_rejects(token, reviewer):
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode())
    plan_id = (await agent.receive_json_from(timeout=5))["result"]["id"]
    await decide(plan_id=plan_id, reviewer=reviewer, approve=False, feedback="Use cursors.")
    pushed = await agent.receive_json_from(timeout=5)
    assert pushed["type"] == "plan_decided"
    assert pushed["plan"]["id"] == plan_id
    assert (pushed["plan"]["status"], pushed["plan"]["feedback"]) == ("rejected", "Use cursors.")
    assert "stay in plan mode" in pushed["plan"]["message"]
    assert await agent.receive_nothing()
    await agent.disconnect()


async def test_an_approval_with_auto_accept_reaches_the_agent_as_accept_edits(token, reviewer):
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode())
    plan_id = (await agent.receive_json_from(timeout=5))["result"]["id"]
    await decide(plan_id=plan_id, reviewer=reviewer, approve=True, auto_accept=True)
    pushed = await agent.receive_json_from(timeout=5)
    assert (pushed["plan"]["status"], pushed["plan"]["mode_after"]) == ("approved", "acceptEdits")
    assert pushed["plan"]["decided_by"] == "lead"
    await agent.disconnect()


async def test_an_agent_that_reconnects_gets_the_decision_made_while_it_was_away(token, reviewer):
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode())
    plan_id = (await agent.receive_json_from(timeout=5))["result"]["id"]
    await agent.disconnect()

    await decide(plan_id=plan_id, reviewer=reviewer, approve=True)

    again = await agent_socket(token)
    await again.send_json_to({"type": "watch_plan", "id": 7, "plan_id": plan_id})
    reply = await again.receive_json_from(timeout=5)
    assert (reply["type"], reply["id"]) == ("ack", 7)
    assert (reply["result"]["status"], reply["result"]["mode_after"]) == ("approved", "default")
    assert "todo list" in reply["result"]["message"]
    assert await again.receive_nothing()
    await again.disconnect()


async def test_watch_plan_on_a_waiting_plan_acks_then_pushes_the_decision(token, user, reviewer):
    plan = await submit(user, source="api")
    agent = await agent_socket(token)
    await agent.send_json_to({"type": "watch_plan", "id": "w", "plan_id": plan.pk})
    assert (await agent.receive_json_from(timeout=5))["result"]["status"] == "pending"
    await decide(plan_id=plan.pk, reviewer=reviewer, approve=False, feedback="Smaller.")
    assert (await agent.receive_json_from(timeout=5))["plan"]["status"] == "rejected"
    await agent.disconnect()


async def test_a_newer_revision_tells_the_watcher_of_the_older_one_it_was_withdrawn(token):
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode())
    first = (await agent.receive_json_from(timeout=5))["result"]
    await agent.send_json_to(exit_plan_mode(id="f2", plan=PLAN + "2. Tests\n"))
    messages = [await agent.receive_json_from(timeout=5) for _ in range(2)]
    withdrawn = next(m for m in messages if m["type"] == "plan_decided")
    ack = next(m for m in messages if m["type"] == "ack")
    assert (withdrawn["plan"]["id"], withdrawn["plan"]["status"]) == (first["id"], "withdrawn")
    assert (ack["result"]["revision"], ack["result"]["status"]) == (2, "pending")
    await agent.disconnect()


async def test_a_subagent_is_told_that_nothing_more_is_needed(token, reviewer):
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode(agent_id="agent-a4d2c8"))
    plan_id = (await agent.receive_json_from(timeout=5))["result"]["id"]
    await decide(plan_id=plan_id, reviewer=reviewer, approve=True)
    message = (await agent.receive_json_from(timeout=5))["plan"]["message"]
    assert "Nothing more is needed" in message
    await agent.disconnect()


async def test_watching_an_unknown_plan_is_an_error_and_the_socket_stays_open(token):
    agent = await agent_socket(token)
    await agent.send_json_to({"type": "watch_plan", "id": 3, "plan_id": 999})
    reply = await agent.receive_json_from(timeout=5)
    assert (reply["type"], reply["id"], reply["error"]["code"]) == ("error", 3, "plan_not_found")
    await agent.send_json_to({"type": "ping", "id": 4})
    assert await agent.receive_json_from(timeout=5) == {"type": "pong", "id": 4}
    await agent.disconnect()


async def test_an_empty_plan_frame_is_refused_with_422(token):
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode(plan=" "))
    reply = await agent.receive_json_from(timeout=5)
    assert reply["error"]["code"] == "empty_plan"
    assert not await Plan.objects.aexists()
    await agent.disconnect()


async def test_a_waiter_wakes_up_when_the_plan_is_decided(user, reviewer, monkeypatch):
    plan = await submit(user)
    loop = asyncio.get_running_loop()
    first_read = asyncio.Event()
    load = waiting._state_now

    def load_and_tell(kind: str, plan_id: int) -> dict | None:
        found = load(kind, plan_id)
        loop.call_soon_threadsafe(first_read.set)
        return found

    monkeypatch.setattr(waiting, "_state_now", load_and_tell)
    waiter = asyncio.create_task(wait_for_decision(plan.pk, timeout=30))
    await asyncio.wait_for(first_read.wait(), 5)
    await decide(plan_id=plan.pk, reviewer=reviewer, approve=True, auto_accept=True)
    decided = await asyncio.wait_for(waiter, 5)
    # The state to answer with came with the event: no database read after the decision.
    assert (decided["status"], decided["mode_after"]) == ("approved", "acceptEdits")
    assert decided["decided_by"] == "lead"


async def test_a_decision_made_before_the_waiter_reads_is_not_lost(user, reviewer, monkeypatch):
    plan = await submit(user)
    load = waiting._state_now

    def decide_then_load(kind: str, plan_id: int) -> dict | None:
        write_sync(plan_decide, plan_id=plan_id, reviewer=reviewer, approve=False, feedback="No.")
        return load(kind, plan_id)

    monkeypatch.setattr(waiting, "_state_now", decide_then_load)
    decided = await asyncio.wait_for(wait_for_decision(plan.pk, timeout=30), 5)
    assert decided["status"] == "rejected"


async def test_a_waiter_gives_none_when_nobody_decides_in_time(user):
    plan = await submit(user)
    assert await wait_for_decision(plan.pk, timeout=0.2) is None


async def test_a_waiter_for_an_unknown_plan_gives_none_at_once():
    assert await asyncio.wait_for(wait_for_decision(12345, timeout=30), 5) is None


def decide_without_push(plan_id: int, reviewer) -> None:
    """A decision whose push is lost: committed as a reviewer's process would, by a process
    that dies before it publishes (nothing goes through this process's writer)."""
    plan_decide(plan_id=plan_id, reviewer=reviewer, approve=True)


async def test_a_held_hook_hears_a_decision_whose_push_was_lost(user, reviewer, settings):
    settings.AGENTBOARD_DECISION_RESYNC_SECONDS = 0.2
    plan = await submit(user)
    waiter = asyncio.create_task(wait_for_decision(plan.pk, timeout=30))
    await asyncio.sleep(0.1)
    await database_sync_to_async(decide_without_push)(plan.pk, reviewer)
    decided = await asyncio.wait_for(waiter, 5)
    assert (decided["status"], decided["decided_by"]) == ("approved", "lead")


async def test_an_agent_socket_hears_a_decision_whose_push_was_lost(token, reviewer, settings):
    settings.AGENTBOARD_DECISION_RESYNC_SECONDS = 0.2
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode())
    plan_id = (await agent.receive_json_from(timeout=5))["result"]["id"]
    await database_sync_to_async(decide_without_push)(plan_id, reviewer)
    pushed = await agent.receive_json_from(timeout=5)
    assert pushed["type"] == "plan_decided" and pushed["plan"]["status"] == "approved"
    # Once only, although the sweep and any later push both know of it.
    await asyncio.sleep(0.5)
    assert await agent.receive_nothing(timeout=0.3)
    await agent.disconnect()


async def test_a_stopping_server_lets_every_held_hook_go(user):
    plan = await submit(user)
    waiter = asyncio.create_task(wait_for_decision(plan.pk, timeout=30))
    await asyncio.sleep(0.1)
    watch = watch_for()
    try:
        watch.stop()
        assert await asyncio.wait_for(waiter, 5) is None
        # One that starts waiting during the stop does not wait either.
        assert await asyncio.wait_for(wait_for_decision(plan.pk, timeout=30), 5) is None
    finally:
        watch.stopping.clear()


# --- browsers -------------------------------------------------------------------------------


async def board_socket(user, query: str) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(BoardConsumer.as_asgi(), f"/ws/board/?{query}")
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def receive_until(communicator: WebsocketCommunicator, text: str) -> str:
    """Fragments arrive one group at a time; the first one containing `text`."""
    while True:
        html = await communicator.receive_from(timeout=5)
        if text in html:
            return html


async def test_the_queue_page_shows_a_new_plan_and_the_header_count_without_reload(token, reviewer):
    browser = await board_socket(reviewer, "plans=queue")
    snapshot = await browser.receive_from(timeout=5)
    assert 'id="plan-queue"' in snapshot and "No plan is waiting" in snapshot
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode())
    plan_id = (await agent.receive_json_from(timeout=5))["result"]["id"]
    header = await receive_until(browser, 'id="plans-waiting"')
    assert "1 plan waiting" in header
    queue = await receive_until(browser, f'id="plan-row-{plan_id}"')
    assert "Pagination" in queue and 'hx-swap-oob="true"' in queue
    await agent.disconnect()
    await browser.disconnect()


async def test_the_session_board_shows_plan_mode_and_the_decision_live(token, reviewer):
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode())
    plan_id = (await agent.receive_json_from(timeout=5))["result"]["id"]
    browser = await board_socket(reviewer, "session=sess-1")
    snapshot = await browser.receive_from(timeout=5)
    assert "plan mode on" in snapshot and f'id="session-plan-{plan_id}"' in snapshot
    assert "Review the plan" in snapshot
    await decide(plan_id=plan_id, reviewer=reviewer, approve=False, feedback="Use cursors.")
    board = await receive_until(browser, "Use cursors.")
    assert 'id="session-plans"' in board
    assert "Rejected" in board or "rejected" in board
    await agent.disconnect()
    await browser.disconnect()


async def test_an_open_review_page_turns_into_the_recorded_decision(token, reviewer):
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode())
    plan_id = (await agent.receive_json_from(timeout=5))["result"]["id"]
    browser = await board_socket(reviewer, f"plans={plan_id}")
    snapshot = await browser.receive_from(timeout=5)
    assert 'id="decision-panel"' not in snapshot  # the form of a waiting plan stays as it is
    await decide(plan_id=plan_id, reviewer=reviewer, approve=True, feedback="Go ahead.")
    panel = await receive_until(browser, 'id="decision-panel"')
    assert "Approved" in panel and "lead" in panel and "Go ahead." in panel
    assert "<form" not in panel and "csrfmiddlewaretoken" not in panel
    await agent.disconnect()
    await browser.disconnect()


async def test_the_overview_row_says_a_plan_is_waiting(token, reviewer):
    browser = await board_socket(reviewer, "")
    await browser.receive_from(timeout=5)
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode())
    await agent.receive_json_from(timeout=5)
    row = await receive_until(browser, 'data-waiting="true"')
    assert "Plan waiting" in row and "Pagination" in row
    await agent.disconnect()
    await browser.disconnect()


async def plan_status(plan_id: int) -> str:
    return (await Plan.objects.aget(pk=plan_id)).status


async def test_a_plan_whose_socket_went_away_for_good_expires_after_the_grace(token, settings):
    settings.AGENTBOARD_PLAN_RECONNECT_GRACE_SECONDS = 0.2
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode())
    plan_id = (await agent.receive_json_from(timeout=5))["result"]["id"]

    # Killed without a word, as Claude Code kills a command hook.
    await agent.disconnect()

    assert await plan_status(plan_id) == "pending"
    for _ in range(100):
        if await plan_status(plan_id) == "expired":
            break
        await asyncio.sleep(0.05)
    assert await plan_status(plan_id) == "expired"


async def test_a_socket_that_comes_back_in_time_keeps_its_plan_waiting(token, settings):
    settings.AGENTBOARD_PLAN_RECONNECT_GRACE_SECONDS = 0.5
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode())
    plan_id = (await agent.receive_json_from(timeout=5))["result"]["id"]
    await agent.disconnect()

    again = await agent_socket(token)
    await again.send_json_to({"type": "watch_plan", "id": "w", "plan_id": plan_id})
    assert (await again.receive_json_from(timeout=5))["result"]["status"] == "pending"
    await asyncio.sleep(1.0)

    assert await plan_status(plan_id) == "pending"
    await again.disconnect()
    # Gone for good this time.
    for _ in range(100):
        if await plan_status(plan_id) == "expired":
            break
        await asyncio.sleep(0.05)
    assert await plan_status(plan_id) == "expired"


async def test_an_agent_that_stops_waiting_expires_its_plan(token, reviewer):
    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode())
    plan_id = (await agent.receive_json_from(timeout=5))["result"]["id"]
    await agent.send_json_to({"type": "expire_plan", "id": "x", "plan_id": plan_id})
    reply = await agent.receive_json_from(timeout=5)
    assert (reply["type"], reply["result"]["status"]) == ("ack", "expired")
    with pytest.raises(ServiceError) as refused:
        await decide(plan_id=plan_id, reviewer=reviewer, approve=True)
    assert refused.value.code == "already_decided"
    await agent.disconnect()


async def test_an_agent_cannot_expire_another_users_plan(token, other_user):
    from dashboard.models import AgentToken

    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode())
    plan_id = (await agent.receive_json_from(timeout=5))["result"]["id"]
    _, other_token = await database_sync_to_async(AgentToken.issue)(owner=other_user)
    stranger = await agent_socket(other_token)
    await stranger.send_json_to({"type": "expire_plan", "id": "x", "plan_id": plan_id})
    reply = await stranger.receive_json_from(timeout=5)
    assert (reply["type"], reply["error"]["code"]) == ("error", "plan_not_found")
    assert (await Plan.objects.aget(pk=plan_id)).status == "pending"
    await agent.disconnect()
    await stranger.disconnect()


async def test_a_subagents_plan_labels_its_card_with_the_agent_type(token):
    from dashboard.models import Agent

    agent = await agent_socket(token)
    await agent.send_json_to(exit_plan_mode(agent_id="sub-1", agent_type="Plan"))
    assert (await agent.receive_json_from(timeout=5))["type"] == "ack"
    assert (await Agent.objects.aget(agent_id="sub-1")).agent_type == "Plan"
    await agent.disconnect()
