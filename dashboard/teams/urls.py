from __future__ import annotations

from django.urls import path

from dashboard.teams import views

urlpatterns = [
    path("", views.teams_page, name="teams"),
    path("new/", views.team_create_view, name="team-create"),
    path("<int:pk>/", views.team_page, name="team"),
    path("<int:pk>/rename/", views.team_rename_view, name="team-rename"),
    path("<int:pk>/delete/", views.team_delete_view, name="team-delete"),
    path("<int:pk>/members/", views.member_add_view, name="team-member-add"),
    path(
        "<int:pk>/members/<int:membership_pk>/role/",
        views.member_role_view,
        name="team-member-role",
    ),
    path(
        "<int:pk>/members/<int:membership_pk>/remove/",
        views.member_remove_view,
        name="team-member-remove",
    ),
]
