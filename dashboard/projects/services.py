"""Changing a project: its name (every session of it shows the new one at once), its team,
its named reviewers and how many approve a plan; each change recorded in the audit log in its
own transaction, by whom and from where."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from dashboard.core.audit import Via, audit, named
from dashboard.core.changes import Changes, Outcome
from dashboard.core.edge import plain_name
from dashboard.core.errors import ServiceError
from dashboard.core.redaction import redact
from dashboard.models import AuditAction, Membership, Project, Session, Team

NAME_LENGTH = Project._meta.get_field("name").max_length


def project_name_checked(name: str) -> str:
    return plain_name(name, what="project", max_length=NAME_LENGTH)


def _project_audit(project: Project, *, actor: Any, via: Via | None, summary: str) -> None:
    """For the reviewers of the team that owns the project now, and those it names."""
    audit(
        AuditAction.PROJECT_CHANGED, actor=actor, via=via, project=project,
        about=f"project:{project.pk}", summary=redact(summary),
    )  # fmt: skip


def project_rename(
    *, project_pk: int, name: str, actor: Any = None, via: Via | None = None
) -> Outcome[Project]:
    """Rename the project; its sessions' rows and boards name it anew."""
    name = project_name_checked(name)
    project = Project.objects.select_for_update().filter(pk=project_pk).first()
    if project is None:
        raise ServiceError("not_found", "There is no such project.", status=404)
    before = project.name
    project.name = name
    project.save(update_fields=["name"])
    sessions = Session.objects.filter(project_record=project)
    sessions.update(project_name=name)
    if before != name:
        _project_audit(project, actor=actor, via=via, summary=f"project {before} renamed to {name}")
    # Running sessions' rows and headers show it now; ended ones on their next render.
    running = set(sessions.filter(ended_at__isnull=True).values_list("pk", flat=True)[:500])
    return Outcome(project, Changes(sessions=running))


def project_team_set(
    *, project_pk: int, team: str, actor: Any = None, via: Via | None = None
) -> Outcome[Project]:
    """Give the project to the team whose pk `team` is ("" for no team); its sessions, past
    and running, go with it: from now on who sees them follows the team."""
    chosen: Team | None = None
    if team.strip():
        try:
            chosen = Team.objects.filter(pk=int(team)).first()
        except ValueError:
            chosen = None
        if chosen is None:
            raise ServiceError("validation_error", "Choose one of the teams listed.", status=422)
    project = Project.objects.select_for_update().filter(pk=project_pk).first()
    if project is None:
        raise ServiceError("not_found", "There is no such project.", status=404)
    before = project.team
    project.team = chosen
    project.save(update_fields=["team"])
    if before != chosen:
        _project_audit(
            project, actor=actor, via=via,
            summary=f"{project.name}: team {before.name if before else '(none)'} → "
            f"{chosen.name if chosen else '(none): everyone signed in sees it'}",
        )  # fmt: skip
    sessions = Session.objects.filter(project_record=project)
    sessions.update(team=chosen)
    running = set(sessions.filter(ended_at__isnull=True).values_list("pk", flat=True)[:500])
    return Outcome(project, Changes(sessions=running, audiences_changed=True))


def _project(project_pk: int) -> Project:
    project = Project.objects.select_for_update().filter(pk=project_pk).first()
    if project is None:
        raise ServiceError("not_found", "There is no such project.", status=404)
    return project


def project_reviewer_add(
    *, project_pk: int, username: str, actor: Any = None, via: Via | None = None
) -> Outcome[AbstractBaseUser]:
    """Name someone who sees the project (a member of its team, when a team owns it) as one of
    its reviewers, asked first."""
    project = _project(project_pk)
    user = get_user_model().objects.filter(username=username.strip(), is_active=True).first()
    if user is None:
        raise ServiceError(
            "user_not_found", "There is no active account with that user name.", status=422
        )
    in_team = (
        project.team_id is None
        or Membership.objects.filter(team_id=project.team_id, user=user).exists()
    )
    if not (in_team or user.is_superuser):
        raise ServiceError(
            "not_in_team",
            f"{user.get_username()} is not in the team that owns this project, so cannot see "
            "its sessions; add them to the team first.",
            status=422,
        )
    if not project.reviewers.filter(pk=user.pk).exists():
        project.reviewers.add(user)
        _project_audit(
            project, actor=actor, via=via,
            summary=f"{named(user)} named a reviewer of {project.name}",
        )  # fmt: skip
    return Outcome(user, Changes(audiences_changed=True))


def project_reviewer_remove(
    *, project_pk: int, user_pk: int, actor: Any = None, via: Via | None = None
) -> Outcome[bool]:
    project = _project(project_pk)
    reviewer = project.reviewers.filter(pk=user_pk).first()
    removed = reviewer is not None
    if reviewer is not None:
        project.reviewers.remove(user_pk)
        _project_audit(
            project, actor=actor, via=via,
            summary=f"{named(reviewer)} no longer a named reviewer of {project.name}",
        )  # fmt: skip
    return Outcome(removed, Changes(audiences_changed=removed))


def project_approvals_set(
    *, project_pk: int, approvals: str, actor: Any = None, via: Via | None = None
) -> Outcome[Project]:
    """How many different reviewers approve each of its plans: "1" or "2". Plans waiting now
    follow the new rule from their next approval."""
    if approvals not in {"1", "2"}:
        raise ServiceError(
            "validation_error", "Choose one reviewer or two different reviewers.", status=422
        )
    project = _project(project_pk)
    before = project.approvals_required
    project.approvals_required = int(approvals)
    project.save(update_fields=["approvals_required"])
    if before != project.approvals_required:
        _project_audit(
            project, actor=actor, via=via,
            summary=f"{project.name}: approvals each plan needs {before} → {approvals}",
        )  # fmt: skip
    return Outcome(project, Changes())
