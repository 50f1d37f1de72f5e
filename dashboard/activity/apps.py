from __future__ import annotations

from django.apps import AppConfig


class ActivityConfig(AppConfig):
    name = "dashboard.activity"
    label = "activity"
    verbose_name = "Activity"

    def ready(self) -> None:
        from dashboard.activity.services import steps_store
        from dashboard.core.writer import writer

        # Every step of a batch of writes is stored in one statement, in the batch's transaction.
        if steps_store not in writer.within_batch:
            writer.within_batch.append(steps_store)
