from django.apps import AppConfig


class PlanmodeConfig(AppConfig):
    name = "planmode"
    verbose_name = "Plan review"
