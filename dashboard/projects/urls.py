from __future__ import annotations

from django.urls import path

from dashboard.projects import views

urlpatterns = [
    path("", views.projects_page, name="projects"),
    path("<int:pk>/", views.project_page, name="project"),
    path("<int:pk>/rename/", views.project_rename_view, name="project-rename"),
    path("<int:pk>/team/", views.project_team_view, name="project-team"),
    path("<int:pk>/reviewers/", views.project_reviewer_add_view, name="project-reviewer-add"),
    path(
        "<int:pk>/reviewers/<int:user_pk>/remove/",
        views.project_reviewer_remove_view,
        name="project-reviewer-remove",
    ),
    path("<int:pk>/approvals/", views.project_approvals_view, name="project-approvals"),
]
