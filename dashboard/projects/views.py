"""The projects page, one project's page, renaming a project and giving it to a team."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from dashboard.core.audit import via_request
from dashboard.core.errors import ServiceError
from dashboard.core.panels import panels
from dashboard.core.security import login_required
from dashboard.core.visibility import audience_of
from dashboard.core.writer import write_sync
from dashboard.models import Project, Team
from dashboard.projects import selectors
from dashboard.projects.services import (
    project_approvals_set,
    project_rename,
    project_reviewer_add,
    project_reviewer_remove,
    project_team_set,
)


def _who(request: HttpRequest) -> dict[str, Any]:
    """Who changes a project and from where, for the audit log."""
    return {"actor": request.user, "via": via_request(request, "project page")}


def _visible_project(request: HttpRequest, pk: int) -> Project:
    project = selectors.visible_project(audience_of(request.user), pk)
    if project is None:
        raise Http404("There is no such project.")
    return project


def may_manage(user: AbstractBaseUser, project: Project) -> bool:
    """Renaming a project, naming its reviewers and how many approve a plan are for those who
    decide its sessions (`Audience.may_decide`)."""
    return audience_of(user).reviews_project(team_pk=project.team_id, project_pk=project.pk)


@login_required
def projects_page(request: HttpRequest) -> HttpResponse:
    rows = selectors.projects_overview(audience_of(request.user))
    return render(request, "projects/list.html", {"rows": rows})


@login_required
def project_page(
    request: HttpRequest,
    pk: int,
    error: str = "",
    team_error: str = "",
    status: int = 200,
    **extra: Any,
) -> HttpResponse:
    project = _visible_project(request, pk)
    audience = audience_of(request.user)
    try:
        sessions = selectors.project_sessions(
            project, audience, before=request.GET.get("before"), after=request.GET.get("after")
        )
    except ValueError:
        raise BadRequest(
            "This page link is not one this list handed out; start again from the newest sessions."
        ) from None
    context = {
        "project": project,
        "sessions": sessions.rows,
        "page": sessions,
        "people": selectors.project_people(project, audience),
        # What capabilities add (the cost and its chart, `dashboard.costs`).
        "panels": panels("project", request, project=project),
        "may_rename": may_manage(request.user, project),
        "reviewers": list(project.reviewers.order_by("username")),
        "fallback_minutes": f"{settings.AGENTBOARD_REVIEW_FALLBACK_MINUTES:g}",
        "may_assign": audience.everything,
        "teams": list(Team.objects.all()) if audience.everything else [],
        "error": error,
        "team_error": team_error,
        **extra,
    }
    return render(request, "projects/detail.html", context, status=status)


@login_required
@require_POST
def project_rename_view(request: HttpRequest, pk: int) -> HttpResponse:
    project = _visible_project(request, pk)
    if not may_manage(request.user, project):
        raise PermissionDenied("Only the project's reviewers can rename it.")
    try:
        renamed = write_sync(
            project_rename, project_pk=pk, name=request.POST.get("name", ""), **_who(request)
        )
    except ServiceError as error:
        return project_page(request, pk, error=error.message, status=error.status)
    messages.success(request, f"Renamed the project to {renamed.value.name}.")
    return redirect("project", pk=pk)


@login_required
@require_POST
def project_team_view(request: HttpRequest, pk: int) -> HttpResponse:
    """An admin gives the project to a team (or to no team: everyone sees it)."""
    _visible_project(request, pk)
    if not audience_of(request.user).everything:
        raise PermissionDenied("Only admins can choose which team owns a project.")
    try:
        changed = write_sync(
            project_team_set, project_pk=pk, team=request.POST.get("team", ""), **_who(request)
        )
    except ServiceError as error:
        return project_page(request, pk, team_error=error.message, status=error.status)
    team = changed.value.team
    messages.success(
        request,
        f"{changed.value.name} now belongs to {team.name}." if team else
        f"{changed.value.name} belongs to no team now: everyone signed in sees its sessions.",
    )  # fmt: skip
    return redirect("project", pk=pk)


def _review_change(
    request: HttpRequest, pk: int, change: Any, done: str, **arguments: Any
) -> HttpResponse:
    project = _visible_project(request, pk)
    if not may_manage(request.user, project):
        raise PermissionDenied("Only the project's reviewers can change who reviews it.")
    try:
        write_sync(change, project_pk=pk, **arguments, **_who(request))
    except ServiceError as error:
        return project_page(request, pk, review_error=error.message, status=error.status)
    messages.success(request, done)
    return redirect("project", pk=pk)


@login_required
@require_POST
def project_reviewer_add_view(request: HttpRequest, pk: int) -> HttpResponse:
    username = request.POST.get("username", "")[:150]
    return _review_change(
        request, pk, project_reviewer_add, f"{username.strip()} reviews the project first.",
        username=username,
    )  # fmt: skip


@login_required
@require_POST
def project_reviewer_remove_view(request: HttpRequest, pk: int, user_pk: int) -> HttpResponse:
    return _review_change(
        request, pk, project_reviewer_remove, "Removed from the project's reviewers.",
        user_pk=user_pk,
    )  # fmt: skip


@login_required
@require_POST
def project_approvals_view(request: HttpRequest, pk: int) -> HttpResponse:
    approvals = request.POST.get("approvals", "")
    return _review_change(
        request, pk, project_approvals_set,
        "Each plan now needs two different reviewers' approval."
        if approvals == "2" else "Each plan now needs one reviewer's approval.",
        approvals=approvals,
    )  # fmt: skip
