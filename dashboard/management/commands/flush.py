"""Django's `flush`, leaving the audit log alone and saying so: the log is append-only (the
database's triggers refuse to empty it), so no flush removes what it records."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.apps import apps
from django.core.management.base import CommandError
from django.core.management.color import no_style
from django.core.management.commands import flush
from django.core.management.sql import emit_post_migrate_signal
from django.db import connections

from dashboard.models import AuditEntry


class Command(flush.Command):
    help = (
        "Removes all data from the database but the audit log, which is append-only, and "
        "re-runs any post-synchronization handlers."
    )

    def handle(self, **options: Any) -> None:
        database = options["database"]
        connection = connections[database]
        for app_config in apps.get_app_configs():
            # As Django's flush: each app's management module, for its signal handlers.
            try:
                import_module(".management", app_config.name)
            except ImportError:
                pass
        kept = AuditEntry._meta.db_table
        tables = [
            table
            for table in connection.introspection.django_table_names(
                only_existing=True, include_views=False
            )
            if table != kept
        ]
        sql_list = connection.ops.sql_flush(
            no_style(),
            tables,
            reset_sequences=options.get("reset_sequences", True),
            allow_cascade=options.get("allow_cascade", False),
        )
        name = connection.settings_dict["NAME"]
        if options["interactive"]:
            confirm = input(
                f"You have requested a flush of the database.\n"
                f'This will IRREVERSIBLY DESTROY all data in the "{name}" database but its audit '
                f"log,\nwhich is append-only and never emptied.\n"
                f"Are you sure you want to do this?\n\n"
                f"    Type 'yes' to continue, or 'no' to cancel: "
            )
            if confirm != "yes":
                self.stdout.write("Flush cancelled.")
                return
        try:
            connection.ops.execute_sql_flush(sql_list)
        except Exception as error:
            raise CommandError(f"Database {name} could not be flushed: {error}") from error
        if sql_list and not options.get("inhibit_post_migrate", False):
            emit_post_migrate_signal(options["verbosity"], options["interactive"], database)
        if options["verbosity"] >= 1:
            count = AuditEntry.objects.using(database).count()
            self.stdout.write(
                f"Every table was emptied but the audit log ({count} entries): it is "
                f"append-only, and flush will not empty it."
            )
