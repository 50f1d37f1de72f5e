"""`python manage.py rebuild_search`: index everything again, from what is stored."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from dashboard.core.writer import write_sync
from dashboard.search.indexer import REBUILD_CHUNK, SOURCES, clear_chunk, engine_tidy, rebuild_chunk


class Command(BaseCommand):
    help = (
        "Index every session, todo list revision, plan, comment, decision, permission request "
        "and tool step again (the server keeps the index current by itself; this mends it)."
    )

    def handle(self, *args: object, **options: object) -> None:
        while write_sync(clear_chunk) == REBUILD_CHUNK:
            pass
        for kind in SOURCES:
            after = 0
            while (last := write_sync(rebuild_chunk, kind=kind, after=after)) is not None:
                after = last
            self.stdout.write(f"Indexed {kind}.")
        write_sync(engine_tidy)
        self.stdout.write(self.style.SUCCESS("The search index is rebuilt."))
