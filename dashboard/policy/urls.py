from __future__ import annotations

from django.urls import path

from dashboard.policy import views

urlpatterns = [
    path("", views.team_rules, name="team-rules"),
    path("backtest/", views.rule_backtest_panel, name="team-rule-backtest"),
    path("<int:rule_id>/edit/", views.team_rule_edit, name="team-rule-edit"),
    path("<int:rule_id>/activate/", views.team_rule_activate, name="team-rule-activate"),
    path("<int:rule_id>/delete/", views.team_rule_delete, name="team-rule-delete"),
    path("suggestions/accept/", views.suggestion_accept, name="rule-suggestion-accept"),
    path("suggestions/dismiss/", views.suggestion_dismiss_view, name="rule-suggestion-dismiss"),
    path("suggestions/inbox/", views.inbox_suggestions, name="rule-suggestions-inbox"),
]
