from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings


class SsoConfig(AppConfig):
    name = "dashboard.sso"
    label = "sso"
    verbose_name = "Single sign-on"

    def ready(self) -> None:
        from dashboard.sso import provider, signals

        signals.connect()
        # A misconfigured issuer stops the server here, at its start, with one sentence
        # (manage.py prints it), rather than at somebody's first sign-in.
        if settings.AGENTBOARD_OIDC_ISSUER:
            configured = provider.discover()
            if configured.signs_out_there:
                # The sign-out form's answer sends the browser on to the provider's page.
                from dashboard.core.security import FORM_ACTION_ORIGINS

                FORM_ACTION_ORIGINS.append(provider.origin(configured.end_session_endpoint))
