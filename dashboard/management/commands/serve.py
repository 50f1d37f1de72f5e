from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from dashboard.core.audit import Via, audit
from dashboard.core.tokens import token_issue
from dashboard.models import AuditAction

# Connections the kernel may hold for the server to accept (capped by net.core.somaxconn).
LISTEN_BACKLOG = 4096
# In the data folder: the fingerprint of the sources the static files were collected from.
SOURCES_SEEN = "static-sources"


def _static_files_collected() -> None:
    """Hashed, compressed copies of the stylesheet and scripts (settings.STORAGES), made again
    only when a source file changed since the last start: hashing and compressing every file
    is most of a start's time."""
    collected = Path(settings.DATA_DIR) / SOURCES_SEEN
    manifest = Path(settings.STATIC_ROOT) / "staticfiles.json"
    seen = _static_sources_fingerprint()
    if manifest.is_file() and collected.is_file() and collected.read_text() == seen:
        return
    call_command("collectstatic", interactive=False, verbosity=0)
    collected.write_text(seen)


def _static_sources_fingerprint() -> str:
    """Every static source file's name, size and time of change, as one digest."""
    digest = hashlib.sha256()
    for finder in finders.get_finders():
        for path, storage in finder.list([]):
            stat = os.stat(storage.path(path))
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


class Command(BaseCommand):
    help = (
        "Migrate the database, collect the static files, create the first account on a fresh "
        "install, and serve (daphne)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--no-bootstrap", action="store_true", help="Do not create a first account."
        )

    def handle(
        self, *args: object, host: str, port: int, no_bootstrap: bool, **options: object
    ) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        _static_files_collected()
        if not no_bootstrap:
            self._bootstrap(host=host, port=port)
        self.stdout.write(f"Agentboard is serving on http://{host}:{port}/ (Ctrl+C stops it).")
        self.stdout.flush()
        from daphne.cli import CommandLineInterface
        from daphne.endpoints import build_endpoint_description_strings

        from dashboard.core import reader
        from dashboard.core.writer import writer
        from dashboard.live import publisher
        from dashboard.server import AgentboardServer

        class Daphne(CommandLineInterface):
            server_class = AgentboardServer

        (endpoint,) = build_endpoint_description_strings(host=host, port=port)
        # Twisted listens with a backlog of 50: a restart that a thousand agent sockets
        # reconnect to at once would overflow it, and the kernel drops the connections it has
        # no room for (their clients retry after one second, then three, then seven).
        arguments = ["--endpoint", f"{endpoint}:backlog={LISTEN_BACKLOG}"]
        if settings.AGENTBOARD_TRUSTED_PROXY:
            # Client address and scheme from X-Forwarded-For/-Proto: anyone could send those,
            # so they count only when a proxy in front sets them.
            arguments.append("--proxy-headers")
        try:
            Daphne().run([*arguments, "dashboard.asgi:application"])
        finally:
            # Everything answered has been committed; finish anything queued after it.
            writer.stop()
            publisher.close_connection()
            reader.close_connection()
        self.stdout.write("Agentboard stopped.")

    def _bootstrap(self, *, host: str, port: int) -> None:
        """On the very first start: a reviewer account and an agent token, printed once."""
        users = get_user_model()
        with transaction.atomic():
            if users.objects.exists():
                return
            password = secrets.token_urlsafe(12)
            user = users.objects.create_superuser(username="lead", email="", password=password)
            first_start = Via(surface="first start")
            audit(
                AuditAction.ROLE_CHANGED, via=first_start, about=f"user:{user.pk}",
                summary="lead: account created; admin yes",
            )  # fmt: skip
            _, token = token_issue(owner=user, label="first token", via=first_start)
        self.stdout.write(
            self.style.SUCCESS("First start: created a reviewer account and an agent token.")
        )
        self.stdout.write(
            f"\n  Log in at http://{host}:{port}/accounts/login/\n"
            f"    username: lead\n    password: {password}\n"
            f"\n  Agent token (send as 'Authorization: Bearer <token>'):\n    {token}\n"
            "\n  Both are shown only now. Change the password under Settings\n"
            f"  (http://{host}:{port}/accounts/password/); make more tokens there too, or with\n"
            "  'python manage.py create_token lead --label laptop'.\n"
        )
