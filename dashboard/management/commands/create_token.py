from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.core.audit import Via
from dashboard.core.tokens import token_issue


class Command(BaseCommand):
    help = "Create an agent token for a user and print it once (only its hash is stored)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--label", default="", help="What the token is for, e.g. 'laptop'.")

    def handle(self, *args: object, username: str, label: str, **options: object) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"There is no user named {username!r}; create it first.")
        _, raw = token_issue(owner=user, label=label, via=Via(surface="command line"))
        self.stdout.write(raw)
