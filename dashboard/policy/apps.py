from __future__ import annotations

from django.apps import AppConfig


class PolicyConfig(AppConfig):
    name = "dashboard.policy"
    label = "policy"
    verbose_name = "Team rules: suggestions, backtests, figures"

    def ready(self) -> None:
        from dashboard.policy.api import router
        from dashboard.web.api import api

        # Its API beside the others (`/api/v1/rules`).
        if router not in [registered for _, registered in api._routers]:
            api.add_router("", router)
