"""Waiting for a reviewer's decision from async code (held hook requests, agent tools)."""

from __future__ import annotations

import asyncio

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from dashboard import live
from planmode.models import Plan, PlanStatus


@database_sync_to_async
def _load(plan_id: int) -> Plan | None:
    # Everything plan_state() reads, so async callers can use the plan without a query.
    return (
        Plan.objects.select_related("session", "agent", "agent__session", "decided_by")
        .filter(pk=plan_id)
        .first()
    )


async def wait_for_decision(plan_id: int, timeout: float) -> Plan | None:
    """The plan once it is no longer pending, or None when `timeout` seconds pass first.

    Listens on the plan's group through the channel layer, so a decision made in any server
    process wakes it. It subscribes before reading the plan: a decision committed in between
    is then either in the database or on its way, never lost. An unknown plan gives None.
    """
    layer = get_channel_layer()
    group = live.plan_group(plan_id)
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        plan = await _load(plan_id)
        while plan is not None and plan.status == PlanStatus.PENDING:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            try:
                message = await asyncio.wait_for(layer.receive(channel), remaining)
            except TimeoutError:
                return None
            if message.get("type") == "plan.decided":
                plan = await _load(plan_id)
        return plan
    finally:
        await layer.group_discard(group, channel)
