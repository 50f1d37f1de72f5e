from __future__ import annotations

from django.urls import path

from dashboard.projects import views

urlpatterns = [
    path("", views.projects_page, name="projects"),
    path("<int:pk>/", views.project_page, name="project"),
    path("<int:pk>/rename/", views.project_rename_view, name="project-rename"),
]
