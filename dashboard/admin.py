from __future__ import annotations

from django.contrib import admin

from dashboard.models import Agent, AgentToken, Session


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["session_id", "owner", "cwd", "permission_mode", "last_seen_at", "ended_at"]
    search_fields = ["session_id", "cwd", "title"]


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ["agent_id", "agent_type", "session", "status", "todo_revision"]


@admin.register(AgentToken)
class AgentTokenAdmin(admin.ModelAdmin):
    list_display = ["hint", "label", "owner", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["key_hash", "hint"]
