"""Changing teams: creating, renaming and removing one, and who is in it in which role.

Each change is what admins do on the teams pages (or in the admin), recorded in the audit
log in its own transaction, by whom and from where; who sees what follows at once
(`dashboard.core.visibility`): every open browser is told to reconnect and reads afresh what
it may see.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from dashboard.core.audit import Via, audit, named
from dashboard.core.changes import Changes, Outcome
from dashboard.core.edge import plain_name
from dashboard.core.errors import ServiceError
from dashboard.core.redaction import redact
from dashboard.models import AuditAction, Membership, Team, TeamRole

NAME_LENGTH = Team._meta.get_field("name").max_length


def _changed() -> Changes:
    return Changes(audiences_changed=True)


def team_name_checked(name: str) -> str:
    return plain_name(name, what="team", max_length=NAME_LENGTH)


def _taken(name: str) -> ServiceError:
    return ServiceError("name_taken", f"There is already a team named {name}.", status=409)


def team_create(*, name: str, actor: Any = None, via: Via | None = None) -> Outcome[Team]:
    name = team_name_checked(name)
    if Team.objects.filter(name__iexact=name).exists():
        raise _taken(name)
    try:
        with transaction.atomic():
            team = Team.objects.create(name=name)
    except IntegrityError:
        raise _taken(name) from None
    team_audit(AuditAction.TEAM_CREATED, team, actor=actor, via=via, summary=f"team {name} created")
    return Outcome(team, _changed())


def team_audit(action: str, team: Team, *, actor: Any, via: Via | None, summary: str) -> None:
    """A change to a team or who is in it: for the team's reviewers (and admins)."""
    audit(action, actor=actor, via=via, team=team, about=f"team:{team.pk}", summary=redact(summary))


def membership_words(membership: Membership) -> str:
    return f"{named(membership.user)} as {membership.get_role_display().lower()}"


def _team(team_pk: int) -> Team:
    team = Team.objects.select_for_update().filter(pk=team_pk).first()
    if team is None:
        raise ServiceError("not_found", "There is no such team.", status=404)
    return team


def team_rename(
    *, team_pk: int, name: str, actor: Any = None, via: Via | None = None
) -> Outcome[Team]:
    name = team_name_checked(name)
    team = _team(team_pk)
    if Team.objects.filter(name__iexact=name).exclude(pk=team_pk).exists():
        raise _taken(name)
    before = team.name
    if before == name:
        return Outcome(team, Changes())
    team.name = name
    team.save(update_fields=["name"])
    team_audit(
        AuditAction.TEAM_CHANGED, team, actor=actor, via=via,
        summary=f"team {before} renamed to {name}",
    )  # fmt: skip
    return Outcome(team, Changes())


def team_delete(*, team_pk: int, actor: Any = None, via: Via | None = None) -> Outcome[str]:
    """Only a team that owns no project: its projects would otherwise be seen by everyone."""
    team = _team(team_pk)
    owned = team.projects.count()
    if owned:
        raise ServiceError(
            "team_owns_projects",
            f"{team.name} owns {owned} project{'s' if owned != 1 else ''}; give "
            f"{'them' if owned != 1 else 'it'} to another team first.",
            status=409,
        )
    name = team.name
    team_audit(AuditAction.TEAM_REMOVED, team, actor=actor, via=via, summary=f"team {name} removed")
    team.delete()
    return Outcome(name, _changed())


def _role(role: str) -> str:
    if role not in TeamRole.values:
        raise ServiceError("validation_error", "Choose Member or Reviewer.", status=422)
    return role


def member_add(
    *, team_pk: int, username: str, role: str, actor: Any = None, via: Via | None = None
) -> Outcome[Membership]:
    """Add a person by user name, or change their role if they are in the team already."""
    role = _role(role)
    team = _team(team_pk)
    username = username.strip()
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise ServiceError(
            "user_not_found",
            "There is no active account with that user name; add the person first (in "
            "/admin/, or by their first sign-in).",
            status=422,
        )
    membership, created = Membership.objects.get_or_create(
        team=team, user=user, defaults={"role": role}
    )
    if created:
        team_audit(
            AuditAction.MEMBER_ADDED, team, actor=actor, via=via,
            summary=f"{membership_words(membership)} added to {team.name}",
        )  # fmt: skip
    elif membership.role != role:
        _role_change(membership, role, actor=actor, via=via)
    return Outcome(membership, _changed())


def _role_change(membership: Membership, role: str, *, actor: Any, via: Via | None) -> None:
    """ "Sam Okafor (sam): member → reviewer of Shop"."""
    if membership.role == role:
        return
    before = membership.get_role_display().lower()
    membership.role = role
    membership.save(update_fields=["role"])
    team_audit(
        AuditAction.MEMBER_CHANGED, membership.team, actor=actor, via=via,
        summary=f"{named(membership.user)}: {before} → "
        f"{membership.get_role_display().lower()} of {membership.team.name}",
    )  # fmt: skip


def _membership(team_pk: int, membership_pk: int) -> Membership:
    membership = (
        Membership.objects.select_for_update()
        .select_related("user", "team")
        .filter(pk=membership_pk, team_id=team_pk)
        .first()
    )
    if membership is None:
        raise ServiceError("not_found", "That person is not in this team any more.", status=404)
    return membership


def member_role_set(
    *, team_pk: int, membership_pk: int, role: str, actor: Any = None, via: Via | None = None
) -> Outcome[Membership]:
    role = _role(role)
    membership = _membership(team_pk, membership_pk)
    _role_change(membership, role, actor=actor, via=via)
    return Outcome(membership, _changed())


def member_remove(
    *, team_pk: int, membership_pk: int, actor: Any = None, via: Via | None = None
) -> Outcome[Membership]:
    membership = _membership(team_pk, membership_pk)
    team_audit(
        AuditAction.MEMBER_REMOVED, membership.team, actor=actor, via=via,
        summary=f"{membership_words(membership)} removed from {membership.team.name}",
    )  # fmt: skip
    membership.delete()
    return Outcome(membership, _changed())
