from __future__ import annotations

from django.apps import AppConfig


class PolicyConfig(AppConfig):
    name = "dashboard.policy"
    label = "policy"
    verbose_name = "Team rules: suggestions, backtests, figures"
