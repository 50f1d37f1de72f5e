from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard import api_docs, hooks, views
from dashboard.api import api

urlpatterns = [
    path("", views.overview, name="overview"),
    path("sessions/<str:session_id>/", views.session_board, name="session-board"),
    path("sessions/<str:session_id>/enforcer/", views.session_enforcer, name="session-enforcer"),
    path("continuations/<int:pk>/cancel/", views.continuation_cancel, name="continuation-cancel"),
    path("plans/", include("planmode.urls")),
    path("inbox/", include("planmode.inbox_urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", views.PasswordChange.as_view(), name="password-change"),
    path("settings/", views.user_settings, name="settings"),
    path("settings/tokens/", views.token_create, name="token-create"),
    path("settings/tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
    path("admin/", admin.site.urls),
    path("api/v1/docs", api_docs.api_docs, name="api-docs"),
    path("api/v1/", api.urls),
    path("healthz", views.healthz, name="healthz"),
    path("hooks/claude-code", hooks.claude_code_hook, name="claude-code-hook"),
]
