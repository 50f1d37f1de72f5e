"""Agents waiting on a person: a plan's decision, or the end of a continuation countdown.

Waiters listen on their group through the channel layer, so a click handled by any server
process wakes them. Each subscribes before it reads the database: a change committed in between
is then either in what it reads or on its way, never lost. Waiting holds no database connection.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from dashboard import live
from dashboard.writer import write
from planmode.models import Plan, PlanStatus
from planmode.services import plan_state
from todos import enforcer
from todos.models import Continuation

logger = logging.getLogger(__name__)


@database_sync_to_async
def _plan_state_now(plan_id: int) -> dict[str, Any] | None:
    plan = (
        Plan.objects.select_related("session", "agent", "agent__session", "decided_by")
        .filter(pk=plan_id)
        .first()
    )
    return plan_state(plan) if plan is not None else None


async def wait_for_decision(plan_id: int, timeout: float) -> dict[str, Any] | None:
    """The plan's state once it is no longer pending, or None when `timeout` seconds pass
    first. An unknown plan gives None at once."""
    layer = get_channel_layer()
    group = live.plan_group(plan_id)
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        state = await _plan_state_now(plan_id)
        while state is not None and state["status"] == PlanStatus.PENDING:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            try:
                message = await asyncio.wait_for(layer.receive(channel), remaining)
            except TimeoutError:
                return None
            if message.get("type") == "plan.decided":
                state = message["state"]
        return state
    finally:
        await layer.group_discard(group, channel)


@database_sync_to_async
def _continuation_status(continuation_pk: int) -> str:
    return Continuation.objects.values_list("status", flat=True).get(pk=continuation_pk)


async def wait_until_resolved_or_due(continuation_pk: int, timeout: float) -> None:
    """Wait for the countdown: returns when it is cancelled (any process) or the time is up."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    group = live.continuation_group(continuation_pk)
    await layer.group_add(group, channel)
    try:
        if await _continuation_status(continuation_pk) != Continuation.Status.COUNTING:
            return
        try:
            await asyncio.wait_for(layer.receive(channel), timeout)
        except TimeoutError:
            return
    finally:
        await layer.group_discard(group, channel)


async def stop_hook_answer(
    *, agent_pk: int, stop_hook_active: bool, background_tasks: int = 0
) -> dict:
    """The answer to a Stop / SubagentStop hook: `{"decision": "block", ...}` or `{}`.

    Never raises: whatever goes wrong, the agent is let stop rather than broken.
    """
    try:
        begun = await write(
            enforcer.continuation_begin,
            agent_pk=agent_pk,
            stop_hook_active=stop_hook_active,
            background_tasks=background_tasks,
        )
        continuation = begun.continuation
        if continuation.status != Continuation.Status.COUNTING:
            return {}
        await wait_until_resolved_or_due(
            continuation.pk, settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS
        )
        finished = await write(enforcer.continuation_finish, continuation_pk=continuation.pk)
        if finished.continuation.status == Continuation.Status.SENT:
            return {"decision": "block", "reason": finished.continuation.prompt}
        return {}
    except Exception:
        logger.exception("the continuation enforcer failed; letting the agent stop")
        return {}
