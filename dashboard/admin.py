"""The Django admin: what it may change, and every change of a person's role, a team, a team
member or a token made here recorded in the audit log in the admin's own transaction (the
admin saves each form in one). The audit log itself is not offered here at all: entries are
read on /audit/ and never changed or removed."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from dashboard.core.audit import Via, audit, named, via_request
from dashboard.core.redaction import redact
from dashboard.core.tokens import token_audit_revoked
from dashboard.models import Agent, AgentToken, AuditAction, Membership, Session, Team
from dashboard.teams.services import membership_words, team_audit


def _via(request: HttpRequest) -> Via:
    return via_request(request, "admin")


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["session_id", "owner", "cwd", "permission_mode", "last_seen_at", "ended_at"]
    search_fields = ["session_id", "cwd", "title"]


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ["agent_id", "agent_type", "session", "status", "todo_revision"]


@admin.register(AgentToken)
class AgentTokenAdmin(admin.ModelAdmin):
    """Tokens are made where their key can be shown once (settings, `create_token`); here
    they are revoked or deleted."""

    list_display = ["hint", "label", "owner", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["key_hash", "hint", "owner", "created_at", "last_used_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: AgentToken, form: Any, change: bool) -> None:
        was_revoked = AgentToken.objects.filter(pk=obj.pk, revoked_at__isnull=False).exists()
        super().save_model(request, obj, form, change)
        if obj.revoked_at is not None and not was_revoked:
            token_audit_revoked(obj, actor=request.user, via=_via(request))

    def delete_model(self, request: HttpRequest, obj: AgentToken) -> None:
        token_audit_revoked(obj, actor=request.user, via=_via(request), deleted=True)
        super().delete_model(request, obj)

    @transaction.atomic
    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[AgentToken]) -> None:
        for token in queryset.select_related("owner"):
            token_audit_revoked(token, actor=request.user, via=_via(request), deleted=True)
        super().delete_queryset(request, queryset)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    """Also on the Teams page (`/teams/`); a project's team is chosen on the project's page,
    which gives its sessions along."""

    list_display = ["name", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]

    def save_model(self, request: HttpRequest, obj: Team, form: Any, change: bool) -> None:
        before = Team.objects.filter(pk=obj.pk).values_list("name", flat=True).first()
        super().save_model(request, obj, form, change)
        via = _via(request)
        if not change:
            team_audit(
                AuditAction.TEAM_CREATED, obj, actor=request.user, via=via,
                summary=f"team {obj.name} created",
            )  # fmt: skip
        elif before is not None and before != obj.name:
            team_audit(
                AuditAction.TEAM_CHANGED, obj, actor=request.user, via=via,
                summary=f"team {before} renamed to {obj.name}",
            )  # fmt: skip

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        if formset.model is not Membership:
            super().save_formset(request, form, formset, change)
            return
        team, via = form.instance, _via(request)
        old = {
            m.pk: m
            for m in Membership.objects.filter(team=team).select_related("user")
        }  # fmt: skip
        super().save_formset(request, form, formset, change)
        for membership in formset.deleted_objects:
            team_audit(
                AuditAction.MEMBER_REMOVED, team, actor=request.user, via=via,
                summary=f"{membership_words(old.get(membership.pk, membership))} removed from "
                f"{team.name}",
            )  # fmt: skip
        for membership in formset.new_objects:
            team_audit(
                AuditAction.MEMBER_ADDED, team, actor=request.user, via=via,
                summary=f"{membership_words(membership)} added to {team.name}",
            )  # fmt: skip
        for membership, _ in formset.changed_objects:
            before = old.get(membership.pk)
            if before is None:
                continue
            if before.user_id != membership.user_id:
                summary = (
                    f"{membership_words(before)} replaced by {membership_words(membership)} "
                    f"in {team.name}"
                )
            elif before.role != membership.role:
                summary = (
                    f"{named(membership.user)}: {before.get_role_display().lower()} → "
                    f"{membership.get_role_display().lower()} of {team.name}"
                )
            else:
                continue
            team_audit(
                AuditAction.MEMBER_CHANGED, team, actor=request.user, via=via, summary=summary
            )

    def delete_model(self, request: HttpRequest, obj: Team) -> None:
        team_audit(
            AuditAction.TEAM_REMOVED, obj, actor=request.user, via=_via(request),
            summary=f"team {obj.name} removed",
        )  # fmt: skip
        super().delete_model(request, obj)

    @transaction.atomic
    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Team]) -> None:
        for team in queryset:
            self.delete_model(request, team)


# --- people's roles ---------------------------------------------------------------------------

ROLE_FLAGS = {"is_superuser": "admin", "is_staff": "staff (admin site)", "is_active": "active"}


def _roles(user_pk: int | None) -> dict[str, Any]:
    """What a person may do, as the admin changes it: the flags, groups and permissions."""
    user = get_user_model()
    if user_pk is None:
        return {"is_superuser": False, "is_staff": False, "is_active": True, "groups": set(),
                "permissions": set()}  # fmt: skip
    flags = user.objects.filter(pk=user_pk).values(*ROLE_FLAGS).first() or {}
    groups = Group.objects.filter(user__pk=user_pk).values_list("name", flat=True)
    permissions = user.user_permissions.through.objects.filter(user_id=user_pk).values_list(
        "permission__content_type__app_label", "permission__codename"
    )
    return {
        **flags,
        "groups": set(groups),
        "permissions": {f"{app}.{codename}" for app, codename in permissions},
    }


def _changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    said = []
    for flag, words in ROLE_FLAGS.items():
        if before.get(flag) != after.get(flag):
            said.append(f"{words} {'yes' if after.get(flag) else 'no'}")
    for kind in ("groups", "permissions"):
        added = sorted(after[kind] - before[kind])
        removed = sorted(before[kind] - after[kind])
        if added or removed:
            said.append(f"{kind} {_added_removed(added, removed)}")
    return said


def _added_removed(added: list[str], removed: list[str]) -> str:
    return ", ".join([f"added {name}" for name in added] + [f"removed {name}" for name in removed])


def _role_audit(request: HttpRequest, user: Any, changes: list[str]) -> None:
    audit(
        AuditAction.ROLE_CHANGED, actor=request.user, via=_via(request),
        about=f"user:{user.pk}", summary=redact(f"{named(user)}: {'; '.join(changes)}"),
    )  # fmt: skip


User = get_user_model()
admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class AuditedUserAdmin(UserAdmin):
    """A change of whether someone is an admin, may use the admin site or sign in, of their
    groups or their own permissions (the review permission among them) is a ROLE_CHANGED
    entry; `save_model` reads the roles before the form is saved, `save_related` after its
    groups and permissions are."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        obj._roles_before = _roles(obj.pk if change else None)
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        user = form.instance
        changes = _changes(getattr(user, "_roles_before", _roles(None)), _roles(user.pk))
        if not change:
            changes.insert(0, "account created")
        if changes:
            _role_audit(request, user, changes)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        _role_audit(request, obj, ["account deleted"])
        super().delete_model(request, obj)

    @transaction.atomic
    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for user in queryset:
            self.delete_model(request, user)


@admin.register(Group)
class AuditedGroupAdmin(GroupAdmin):
    """A group's permissions are the roles of everyone in it."""

    def _permissions(self, group_pk: int | None) -> set[str]:
        if group_pk is None:
            return set()
        rows = Group.permissions.through.objects.filter(group_id=group_pk).values_list(
            "permission__content_type__app_label", "permission__codename"
        )
        return {f"{app}.{codename}" for app, codename in rows}

    def save_model(self, request: HttpRequest, obj: Group, form: Any, change: bool) -> None:
        obj._permissions_before = self._permissions(obj.pk if change else None)
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        group = form.instance
        before = getattr(group, "_permissions_before", set())
        after = self._permissions(group.pk)
        if before == after:
            return
        members = group.user_set.count()
        changed = _added_removed(sorted(after - before), sorted(before - after))
        audit(
            AuditAction.ROLE_CHANGED, actor=request.user, via=_via(request),
            about=f"group:{group.pk}",
            summary=redact(
                f"group {group.name} ({members} member{'s' if members != 1 else ''}): "
                f"permissions {changed}"
            ),
        )  # fmt: skip
