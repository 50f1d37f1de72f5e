from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from dashboard.models import AuditEntry
from tests.hooks.conftest import hook  # noqa: F401 - the hook fixture, for these tests too
from tests.teams.conftest import world  # noqa: F401 - two teams and what waits in one


def history(entries: Iterable[AuditEntry]) -> None:
    """Entries at the times they name (days ago, say), oldest first, chained as the log chains
    its own; the log itself takes the database's time."""
    last = AuditEntry.objects.order_by("number").last()
    number, previous = (last.number, last.digest) if last is not None else (0, "")
    with transaction.atomic():
        for entry in sorted(entries, key=lambda entry: entry.at):
            number += 1
            entry.number = number
            entry.digest = previous = entry.digest_after(previous)
            entry.save()
