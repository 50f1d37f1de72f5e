from __future__ import annotations

from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "dashboard.projects"
    label = "projects"
    verbose_name = "Projects"
