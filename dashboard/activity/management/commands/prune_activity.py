from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from dashboard.activity.services import PRUNE_CHUNK, activity_prune
from dashboard.core.writer import write_sync


class Command(BaseCommand):
    help = (
        "Delete agents' steps older than AGENTBOARD_ACTIVITY_DAYS (todo revisions, plans and "
        "decisions are kept). The server also does this once a day."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--days",
            type=float,
            default=None,
            help=f"Keep this many days instead (default {settings.AGENTBOARD_ACTIVITY_DAYS}).",
        )

    def handle(self, *args: Any, days: float | None, **options: Any) -> None:
        deleted, chunk = 0, PRUNE_CHUNK
        while chunk == PRUNE_CHUNK:
            chunk = write_sync(activity_prune, days=days)
            deleted += chunk
        self.stdout.write(f"Deleted {deleted} step{'' if deleted == 1 else 's'}.")
