from __future__ import annotations

from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "dashboard.notifications"
    label = "notifications"
    verbose_name = "Notifications"

    def ready(self) -> None:
        from dashboard.core.writer import writer
        from dashboard.notifications import outbox
        from dashboard.notifications.views import settings_context
        from dashboard.web.views import SETTINGS_SECTIONS

        # A write's notifications commit with it (enqueueing runs no query).
        if outbox.enqueue not in writer.within_write:
            writer.within_write.append(outbox.enqueue)
        # An agent found to need a look when its batch's steps were stored (after them).
        if outbox.enqueue_batch not in writer.within_batch:
            writer.within_batch.append(outbox.enqueue_batch)
        # Its devices and webhook targets on the settings page.
        if settings_context not in SETTINGS_SECTIONS:
            SETTINGS_SECTIONS.append(settings_context)
