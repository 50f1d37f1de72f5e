from __future__ import annotations

from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "dashboard.teams"
    label = "teams"
    verbose_name = "Teams"
