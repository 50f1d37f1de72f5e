from __future__ import annotations

from django.apps import AppConfig


class SteeringConfig(AppConfig):
    name = "dashboard.steering"
    label = "steering"
    verbose_name = "Steering"

    def ready(self) -> None:
        from dashboard.core.writer import writer
        from dashboard.steering.services import ended_sessions_settle

        # What was queued for a session that ended is marked "not delivered", in the write
        # that ended it.
        if ended_sessions_settle not in writer.within_write:
            writer.within_write.append(ended_sessions_settle)
