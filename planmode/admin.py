from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from dashboard.core.audit import via_request
from dashboard.models import AuditAction
from planmode.models import Decision, PermissionDecision, PermissionRequest, Plan, TeamRule
from planmode.permissions import team_rule_audit, team_rule_words


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
    """Every rule added, changed or removed here is in the audit log, as on the team rules
    page."""

    list_display = ("rule", "behavior", "mode", "project", "expires_at", "created_by", "created_at")
    list_filter = ("behavior", "mode", "project")
    readonly_fields = ("updated_by",)

    def save_model(self, request: HttpRequest, obj: TeamRule, form: Any, change: bool) -> None:
        old = TeamRule.objects.filter(pk=obj.pk).first() if change else None
        obj.updated_by = request.user
        super().save_model(request, obj, form, change)
        via = via_request(request, "admin")
        if old is None:
            team_rule_audit(AuditAction.RULE_ADDED, obj, actor=request.user, via=via)
        elif team_rule_words(old) != team_rule_words(obj):
            team_rule_audit(
                AuditAction.RULE_CHANGED, obj, actor=request.user, via=via,
                before=team_rule_words(old),
            )  # fmt: skip

    def delete_model(self, request: HttpRequest, obj: TeamRule) -> None:
        team_rule_audit(
            AuditAction.RULE_REMOVED, obj, actor=request.user, via=via_request(request, "admin")
        )
        super().delete_model(request, obj)

    @transaction.atomic
    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[TeamRule]) -> None:
        for rule in queryset:
            self.delete_model(request, rule)
