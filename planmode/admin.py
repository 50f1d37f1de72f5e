from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from planmode.models import Decision, PermissionDecision, PermissionRequest, Plan, TeamRule


class ReadOnlyAdmin(admin.ModelAdmin):
    """Plans and decisions are the audit record of who decided what: they change only through
    review and are never deleted here. Without delete permission on them, the admin also
    refuses to delete a session, agent or user whose plans would go with it."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Plan)
class PlanAdmin(ReadOnlyAdmin):
    list_display = ("pk", "session", "agent", "revision", "status", "submitted_at", "decided_by")
    list_filter = ("status", "source")
    search_fields = ("session__session_id", "agent__agent_id", "markdown")


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ("plan", "outcome", "mode_after", "decided_by_name", "decided_at")
    list_filter = ("outcome",)


@admin.register(PermissionRequest)
class PermissionRequestAdmin(ReadOnlyAdmin):
    list_display = ("pk", "session", "agent", "tool_name", "status", "requested_at", "decided_by")
    list_filter = ("status", "tool_name")
    search_fields = ("session__session_id", "agent__agent_id", "tool_name")


@admin.register(PermissionDecision)
class PermissionDecisionAdmin(ReadOnlyAdmin):
    list_display = ("request", "outcome", "decided_by_name", "rule_text", "decided_at")
    list_filter = ("outcome",)


@admin.register(TeamRule)
class TeamRuleAdmin(admin.ModelAdmin):
    list_display = ("rule", "behavior", "project", "created_by", "created_at")
    list_filter = ("behavior", "project")
