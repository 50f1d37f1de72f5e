from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from dashboard.costs import budget_views, people, price_views
from dashboard.costs.opencode import opencode_usage
from dashboard.integrations.claude_code import hooks as claude_code
from dashboard.integrations.codex.hooks import codex_hook
from dashboard.integrations.gemini.hooks import gemini_hook
from dashboard.integrations.opencode.steering import opencode_paused, opencode_steering
from dashboard.integrations.opencode.views import opencode_hook
from dashboard.notifications import views as notify_views
from dashboard.sso import views as sso_views
from dashboard.web import api_docs, views
from dashboard.web.api import api
from dashboard.web.timeline import session_timeline_page

urlpatterns = [
    # The agents' paths first: Django tries the patterns in order, and an agent waits for
    # each answer.
    path("hooks/claude-code", claude_code.claude_code_hook, name="claude-code-hook"),
    path("hooks/codex", codex_hook, name="codex-hook"),
    path("hooks/gemini", gemini_hook, name="gemini-hook"),
    path("hooks/opencode", opencode_hook, name="opencode-hook"),
    path("hooks/opencode/usage", opencode_usage, name="opencode-usage"),
    path("hooks/opencode/steering", opencode_steering, name="opencode-steering"),
    path("hooks/opencode/paused", opencode_paused, name="opencode-paused"),
    # The OTLP/HTTP receiver: what the agents' models cost (`dashboard.costs`).
    path("v1/", include("dashboard.costs.urls")),
    path("api/v1/docs", api_docs.api_docs, name="api-docs"),
    # The same liveness answer on the agents' path (`dashboard.asgi.AgentHandler`).
    path("api/v1/healthz", views.healthz, name="agent-healthz"),
    path("api/v1/", api.urls),
    path("", views.overview, name="overview"),
    path("ended/", views.ended_sessions, name="ended-sessions"),
    path("sessions/<str:session_id>/", views.session_board, name="session-board"),
    path(
        "sessions/<str:session_id>/timeline/",
        session_timeline_page,
        name="session-timeline",
    ),
    path("sessions/<str:session_id>/history/", views.session_history, name="session-history"),
    path("sessions/<str:session_id>/enforcer/", views.session_enforcer, name="session-enforcer"),
    path("continuations/<int:pk>/cancel/", views.continuation_cancel, name="continuation-cancel"),
    path("concerns/<int:pk>/dismiss/", views.concern_dismiss_view, name="concern-dismiss"),
    path("plans/", include("planmode.urls")),
    path("projects/", include("dashboard.projects.urls")),
    path("teams/", include("dashboard.teams.urls")),
    path("audit/", include("dashboard.audit.urls")),
    path("oidc/", include("dashboard.sso.urls")),
    path("search/", include("dashboard.search.urls")),
    # Before the inbox's own paths: the team rules page is the policy app's.
    path("inbox/rules/", include("dashboard.policy.urls")),
    path("inbox/", include("planmode.inbox_urls")),
    path("steer/", include("dashboard.steering.urls")),
    path("accounts/login/", sso_views.LoginPage.as_view(), name="login"),
    path("accounts/logout/", sso_views.LogoutPage.as_view(), name="logout"),
    path("accounts/password/", views.PasswordChange.as_view(), name="password-change"),
    path("settings/", views.user_settings, name="settings"),
    path("settings/notifications/", include("dashboard.notifications.urls")),
    path("sw.js", notify_views.service_worker, name="service-worker"),
    path("manifest.webmanifest", notify_views.manifest, name="manifest"),
    path("people/<str:username>/", people.person_page, name="person"),
    path("settings/prices/", price_views.prices_page, name="prices"),
    path("budgets/project/<int:pk>/", budget_views.project_budget_view, name="project-budget"),
    path("budgets/person/<int:pk>/", budget_views.person_budget_view, name="person-budget"),
    path(
        "budgets/sessions/<int:pk>/continue/",
        budget_views.session_continue_view,
        name="session-continue-budget",
    ),
    path("settings/inbox/", views.inbox_choices, name="inbox-choices"),
    path("settings/tokens/", views.token_create, name="token-create"),
    path("settings/tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
    path("admin/", admin.site.urls),
    path("healthz", views.healthz, name="healthz"),
]

handler400 = "dashboard.web.views.bad_request"
