"""The projects page, one project's page, and renaming a project."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from dashboard.core.errors import ServiceError
from dashboard.core.security import login_required
from dashboard.core.writer import write_sync
from dashboard.models import Project
from dashboard.projects import selectors
from dashboard.projects.services import project_rename
from planmode.permissions import audience_of, is_reviewer


@login_required
def projects_page(request: HttpRequest) -> HttpResponse:
    rows = selectors.projects_overview(audience_of(request.user))
    return render(request, "projects/list.html", {"rows": rows})


@login_required
def project_page(request: HttpRequest, pk: int, error: str = "", status: int = 200) -> HttpResponse:
    project = get_object_or_404(Project, pk=pk)
    context = {
        "project": project,
        "sessions": selectors.project_sessions(project),
        "people": selectors.project_people(project),
        "may_rename": is_reviewer(request.user),
        "error": error,
    }
    return render(request, "projects/detail.html", context, status=status)


@login_required
@require_POST
def project_rename_view(request: HttpRequest, pk: int) -> HttpResponse:
    if not is_reviewer(request.user):
        raise PermissionDenied("Only reviewers can rename a project.")
    get_object_or_404(Project, pk=pk)
    try:
        renamed = write_sync(project_rename, project_pk=pk, name=request.POST.get("name", ""))
    except ServiceError as error:
        return project_page(request, pk, error=error.message, status=error.status)
    messages.success(request, f"Renamed the project to {renamed.value.name}.")
    return redirect("project", pk=pk)
