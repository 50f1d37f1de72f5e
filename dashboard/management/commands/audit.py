"""`python manage.py audit verify`: walks the audit log's chain and names the first entry that
was changed, removed or inserted out of order (exit status 1)."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dashboard.audit.chain import chain_verify


class Command(BaseCommand):
    help = "Checks the audit log: `audit verify` walks its chain of digests."

    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(dest="subcommand", required=True)
        verify = commands.add_parser(
            "verify", help="Walk the chain; exit status 1 at the first entry that is wrong."
        )
        verify.add_argument(
            "--head",
            default="",
            help="A head recorded earlier (the daily log line, the webhook): it must be there.",
        )

    def handle(self, *args: Any, subcommand: str, head: str = "", **options: Any) -> None:
        verdict = chain_verify(recorded_head=head.strip())
        if verdict.broken is not None:
            self.stderr.write(f"The audit log is not intact. {verdict.broken}")
            if verdict.head is not None:
                intact = f"The first {verdict.entries} entries are intact"
                self.stderr.write(f"{intact}, up to head {verdict.head.digest}.")
            sys.exit(1)
        digest = verdict.head.digest if verdict.head is not None else "none"
        self.stdout.write(f"The audit log's {verdict.entries} entries are intact; head {digest}")
