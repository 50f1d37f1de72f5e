"""`python manage.py import_claude [PATH] [--watch]`: backfill the board from Claude Code's files
(`dashboard.integrations.claude_code.importer`)."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import close_old_connections

from dashboard.integrations.claude_code.importer import COUNT_LABELS, ClaudeImporter


class Command(BaseCommand):
    help = (
        "Backfill the board from Claude Code's own files: transcripts (todo writes and plans) "
        "and legacy todo files. Safe to run again: nothing is imported twice."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Set to end --watch (from a signal handler, or by whoever runs the command in a thread).
        self.stop = threading.Event()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "path",
            nargs="?",
            default="~/.claude",
            help="Claude Code's data folder (default: ~/.claude).",
        )
        parser.add_argument(
            "--user",
            dest="username",
            help="Who owns the imported sessions (default: the first superuser).",
        )
        parser.add_argument(
            "--watch",
            action="store_true",
            help="Keep running and import lines as they are appended.",
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=1.0,
            help="Seconds between looks at the files with --watch (default 1).",
        )
        parser.add_argument(
            "--watch-seconds",
            type=float,
            default=None,
            help="Stop watching after this many seconds (default: until Ctrl+C).",
        )

    def handle(
        self,
        *args: Any,
        path: str,
        username: str | None,
        watch: bool,
        interval: float,
        watch_seconds: float | None,
        **options: Any,
    ) -> None:
        root = Path(path).expanduser()
        if not root.is_dir():
            raise CommandError(
                f"{root} is not a folder; give Claude Code's data folder, such as ~/.claude."
            )
        importer = ClaudeImporter(root=root, owner=self._owner(username))
        self._report(importer, importer.scan(final=not watch), first=True)
        if not watch:
            self._report_refusals(importer)
            return
        self._stop_on_sigterm()
        deadline = time.monotonic() + watch_seconds if watch_seconds is not None else None
        self.stdout.write(f"Watching {root} for new lines (Ctrl+C stops).")
        try:
            while not self.stop.wait(interval):
                close_old_connections()
                self._report(importer, importer.scan(final=False), first=False)
                if deadline is not None and time.monotonic() >= deadline:
                    break
        except KeyboardInterrupt:
            pass
        self.stdout.write("Stopped watching.")
        self._report_refusals(importer)

    def _owner(self, username: str | None) -> AbstractBaseUser:
        users = get_user_model()
        if username:
            owner = users.objects.filter(**{users.USERNAME_FIELD: username}).first()
            if owner is None:
                raise CommandError(
                    f"There is no user {username!r}; check the name given to --user."
                )
            return owner
        owner = users.objects.filter(is_superuser=True, is_active=True).order_by("pk").first()
        if owner is None:
            raise CommandError(
                "No superuser exists to own the imported sessions; create one with "
                "'python manage.py createsuperuser' or name an owner with --user USERNAME."
            )
        return owner

    def _stop_on_sigterm(self) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: self.stop.set())

    def _report(self, importer: ClaudeImporter, counts: Counter[str], *, first: bool) -> None:
        if not first and not counts:
            return
        parts = [f"{counts[name]} {label}" for name, label in COUNT_LABELS.items() if counts[name]]
        summary = "; ".join(parts) if parts else "nothing new"
        prefix = f"Imported from {importer.root}" if first else "New lines"
        self.stdout.write(f"{prefix}: {summary}.")

    def _report_refusals(self, importer: ClaudeImporter) -> None:
        for reason in importer.refusals[:10]:
            self.stderr.write(f"  skipped {reason}")
        if len(importer.refusals) > 10:
            self.stderr.write(f"  … and {len(importer.refusals) - 10} more.")
        if importer.pending_plans:
            self.stdout.write(
                f"{len(importer.pending_plans)} plan(s) still waiting for an answer in the "
                "terminal were left out; run again (or use --watch) once they are answered."
            )
