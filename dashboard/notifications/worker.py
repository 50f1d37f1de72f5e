"""The delivery worker: an asyncio task in each server process that sends the outbox.

It claims due deliveries with a lease (a conditional UPDATE: with several processes, each
row is claimed by exactly one of them, and one that died mid-send leaves it to another once
the lease ran out), sends them concurrently with httpx, and records the outcome: sent, or
retried later with exponential backoff, or failed after AGENTBOARD_NOTIFY_MAX_ATTEMPTS.
Database work runs on the worker's own thread; a receiver that is slow or down costs a
waiting coroutine, never the event loop, ingest or decisions. Pending rows survive restarts
(they are in the database), so a restarted server resumes them.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any, TypeVar

import httpx
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from dashboard.notifications.models import Delivery, PushDevice
from dashboard.notifications.safety import mask_url
from dashboard.notifications.senders import Result, new_client, send_push, send_webhook, vapid

logger = logging.getLogger(__name__)
T = TypeVar("T")

BATCH = 20
LONGEST_BACKOFF = 3600.0

_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentboard-notify")
_wakers: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()


async def _db(func: Any, /, *args: Any) -> Any:
    return await asyncio.wrap_future(_executor.submit(func, *args))


def wake() -> None:
    """New deliveries were committed (any thread): running workers look now, not at their
    next poll."""
    for loop, event in list(_wakers):
        if not loop.is_closed():
            loop.call_soon_threadsafe(event.set)


def backoff(attempts: int) -> float:
    """Seconds before attempt `attempts + 1`: the base, doubled after each failure."""
    base = settings.AGENTBOARD_NOTIFY_RETRY_SECONDS
    return min(LONGEST_BACKOFF, base * 2 ** max(0, attempts - 1))


def _due(now: Any) -> Q:
    return Q(status=Delivery.Status.PENDING, next_attempt_at__lte=now) & (
        Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    )


def claim(token: str, limit: int = BATCH) -> list[Delivery]:
    """Lease up to `limit` due deliveries to `token`. The UPDATE re-checks the lease row by
    row, so of two processes claiming the same row one gets it and the other skips it."""
    now = timezone.now()
    pks = list(
        Delivery.objects.filter(_due(now))
        .order_by("next_attempt_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )
    if not pks:
        return []
    Delivery.objects.filter(_due(now), pk__in=pks).update(
        lease_token=token,
        lease_until=now + timedelta(seconds=settings.AGENTBOARD_NOTIFY_LEASE_SECONDS),
    )
    return list(
        Delivery.objects.filter(pk__in=pks, lease_token=token).select_related("target", "device")
    )


def record(delivery: Delivery, token: str, result: Result) -> None:
    now = timezone.now()
    attempts = delivery.attempts + 1
    fields: dict[str, Any] = {
        "attempts": attempts,
        "last_status": result.status,
        "last_error": result.error[:500],
        "lease_until": None,
        "lease_token": "",
    }
    if result.ok:
        fields |= {"status": Delivery.Status.SENT, "sent_at": now}
    elif result.gone and delivery.device_id is not None:
        fields["status"] = Delivery.Status.GONE
    elif attempts >= settings.AGENTBOARD_NOTIFY_MAX_ATTEMPTS:
        fields["status"] = Delivery.Status.FAILED
    else:
        fields["next_attempt_at"] = now + timedelta(seconds=backoff(attempts))
    Delivery.objects.filter(pk=delivery.pk, lease_token=token).update(**fields)
    if result.ok and delivery.device_id is not None:
        PushDevice.objects.filter(pk=delivery.device_id).update(last_sent_at=now)
    if result.gone and delivery.device_id is not None:
        # The push service forgot this subscription (uninstalled, permission revoked).
        PushDevice.objects.filter(pk=delivery.device_id).delete()


async def send(client: httpx.AsyncClient, delivery: Delivery) -> Result:
    if delivery.target is not None:
        return await send_webhook(client, delivery.target, delivery.payload, delivery.key)
    if delivery.device is not None:
        return await send_push(client, delivery.device, delivery.payload)
    return Result(ok=False, gone=True, error="Its device was removed.")


async def _deliver(client: httpx.AsyncClient, delivery: Delivery, token: str) -> None:
    try:
        result = await send(client, delivery)
    except Exception as error:  # a bug here must not stop the others
        logger.exception("a notification could not be sent")
        result = Result(ok=False, error=f"Agentboard could not send it: {type(error).__name__}")
    if not result.ok:
        where = delivery.target.url if delivery.target else delivery.device.endpoint
        logger.warning(
            "notification %s to %s: %s", delivery.pk, mask_url(where or ""), result.error
        )
    await _db(record, delivery, token, result)


async def deliver_once(client: httpx.AsyncClient) -> int:
    """Claim and send one batch; returns how many were claimed."""
    token = uuid.uuid4().hex
    claimed = await _db(claim, token)
    if claimed:
        try:
            await asyncio.gather(*(_deliver(client, delivery, token) for delivery in claimed))
        except asyncio.CancelledError:
            # The server is stopping: what was not recorded is free for the others at once
            # (a send that had already arrived will arrive again).
            _executor.submit(release, token)
            raise
    return len(claimed)


def release(token: str) -> int:
    return Delivery.objects.filter(lease_token=token, status=Delivery.Status.PENDING).update(
        lease_until=None, lease_token=""
    )


async def deliver_forever() -> None:
    """The server's worker: from start (what a previous run left pending) until cancelled."""
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()
    waker = (loop, woken)
    _wakers.add(waker)
    try:
        # The VAPID keys exist from the first start on (browsers subscribe with the public one).
        await asyncio.to_thread(vapid)
        async with new_client() as client:
            while True:
                woken.clear()
                try:
                    claimed = await deliver_once(client)
                except Exception:
                    logger.exception("could not claim notifications")
                    claimed = 0
                if claimed:
                    continue
                try:
                    await asyncio.wait_for(
                        woken.wait(), timeout=settings.AGENTBOARD_NOTIFY_POLL_SECONDS
                    )
                except TimeoutError:
                    pass
    finally:
        _wakers.discard(waker)


def close_connection() -> None:
    from django.db import connections

    _executor.submit(connections.close_all).result(10)
