"""The audit log's chain, checked and kept outside.

Each entry carries the SHA-256 of the entry before's digest and its own content
(`AuditEntry.chain`). `chain_verify()` walks it oldest first and names the first entry that was
changed, removed or slipped in out of order (`python manage.py audit verify`). The chain's head
goes to the server's log once a day, and to AGENTBOARD_AUDIT_HEAD_WEBHOOK when set: a log
emptied or rewritten by someone who can get past the database's triggers no longer holds a head
recorded outside it."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

import httpx
from django.conf import settings
from django.utils import timezone

from dashboard.core.reader import read
from dashboard.models import AuditEntry, audit_digest

logger = logging.getLogger(__name__)

WALK_CHUNK = 2_000


@dataclass(frozen=True)
class Verdict:
    entries: int
    head: AuditEntry | None
    # What is wrong, in one sentence naming the first entry concerned; None when intact.
    broken: str | None = None


def _walk() -> Iterator[AuditEntry]:
    after = 0
    while True:
        page = list(AuditEntry.objects.filter(number__gt=after).order_by("number")[:WALK_CHUNK])
        yield from page
        if len(page) < WALK_CHUNK:
            return
        after = page[-1].number


def _named(entry: AuditEntry) -> str:
    return f"Entry #{entry.number} (id {entry.pk}, at {entry.at.isoformat()})"


def chain_verify(*, recorded_head: str = "") -> Verdict:
    """The chain walked from its first entry; `recorded_head` is a digest kept outside earlier
    (the daily head), which must be in it."""
    expected, previous, last = 1, "", None
    head_found = not recorded_head
    for entry in _walk():
        if entry.number > expected:
            removed = (
                f"Entry #{expected} was"
                if entry.number == expected + 1
                else f"Entries #{expected} to #{entry.number - 1} were"
            )
            return Verdict(
                expected - 1, last, f"{removed} removed: the chain goes on at {_named(entry)}."
            )
        if entry.number < expected or (last is not None and entry.at < last.at):
            return Verdict(
                expected - 1,
                last,
                f"{_named(entry)} was inserted out of order: it is dated before the entry ahead "
                f"of it ({last.at.isoformat() if last else 'none'}).",
            )
        if audit_digest(entry, previous) != entry.digest:
            return Verdict(
                expected - 1,
                last,
                f"{_named(entry)} was changed: its content no longer matches its digest.",
            )
        head_found = head_found or entry.digest == recorded_head
        previous, last, expected = entry.digest, entry, expected + 1
    if not head_found:
        return Verdict(
            expected - 1,
            last,
            f"The head recorded earlier ({recorded_head}) is not in the chain: the entries up "
            f"to it were removed or rewritten.",
        )
    return Verdict(expected - 1, last)


def chain_head() -> AuditEntry | None:
    return AuditEntry.objects.order_by("number").last()


def head_payload(head: AuditEntry | None, at: datetime) -> dict[str, object]:
    return {
        "server": socket.gethostname(),
        "at": at.isoformat(),
        "entries": head.number if head is not None else 0,
        "head": head.digest if head is not None else "",
        "head_at": head.at.isoformat() if head is not None else None,
    }


async def audit_head_sent() -> None:
    """The chain's head into the server's log, and to AGENTBOARD_AUDIT_HEAD_WEBHOOK when set
    (a failure to send is logged, not raised)."""
    head = await read(chain_head)
    payload = head_payload(head, timezone.now())
    logger.info(
        "Audit log head: %s entries, head %s (at %s).",
        payload["entries"],
        payload["head"] or "none",
        payload["head_at"] or "never",
    )
    url = settings.AGENTBOARD_AUDIT_HEAD_WEBHOOK
    if not url:
        return
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            response = await client.post(url, json=payload)
            response.raise_for_status()
    except httpx.HTTPStatusError as error:
        # Not the error's own words: they hold the address, a secret.
        logger.warning(
            "Could not send the audit log's head: AGENTBOARD_AUDIT_HEAD_WEBHOOK answered %s.",
            error.response.status_code,
        )
    except httpx.HTTPError as error:
        logger.warning(
            "Could not send the audit log's head to AGENTBOARD_AUDIT_HEAD_WEBHOOK: %s.",
            type(error).__name__,
        )


async def audit_head_forever() -> None:
    """The server's daily head: once at start, then every AGENTBOARD_AUDIT_HEAD_SECONDS."""
    while True:
        try:
            await audit_head_sent()
        except Exception:
            logger.exception("could not write the audit log's head")
        await asyncio.sleep(settings.AGENTBOARD_AUDIT_HEAD_SECONDS)
