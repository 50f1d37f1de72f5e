"""The teams page and one team's page: everyone signed in reads who is in which team and who
reviews; admins create teams, add and remove people and set their roles."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from dashboard.core.audit import via_request
from dashboard.core.changes import Outcome
from dashboard.core.errors import ServiceError
from dashboard.core.security import login_required
from dashboard.core.visibility import audience_of
from dashboard.core.writer import write_sync
from dashboard.models import Team, TeamRole
from dashboard.teams import selectors, services


def _who(request: HttpRequest) -> dict[str, Any]:
    """Who changes a team and from where, for the audit log."""
    return {"actor": request.user, "via": via_request(request, "teams page")}


def _require_admin(request: HttpRequest) -> None:
    if not audience_of(request.user).everything:
        raise PermissionDenied("Only admins can change teams.")


@login_required
def teams_page(
    request: HttpRequest, *, error: str = "", name: str = "", status: int = 200
) -> HttpResponse:
    context = {
        "rows": selectors.teams_overview(),
        "may_edit": audience_of(request.user).everything,
        "error": error,
        "name": name,
    }
    return render(request, "teams/list.html", context, status=status)


@login_required
@require_POST
def team_create_view(request: HttpRequest) -> HttpResponse:
    _require_admin(request)
    name = request.POST.get("name", "")
    try:
        created = write_sync(services.team_create, name=name, **_who(request))
    except ServiceError as error:
        return teams_page(request, error=error.message, name=name[:200], status=error.status)
    messages.success(request, f"Created the team {created.value.name}.")
    return redirect("team", pk=created.value.pk)


def _team_or_404(pk: int) -> Team:
    team = Team.objects.filter(pk=pk).first()
    if team is None:
        raise Http404("There is no such team.")
    return team


@login_required
def team_page(request: HttpRequest, pk: int, *, status: int = 200, **extra: Any) -> HttpResponse:
    team = _team_or_404(pk)
    context = {
        "team": team,
        "members": selectors.team_members(team),
        "projects": selectors.team_projects(team),
        "roles": TeamRole.choices,
        "may_edit": audience_of(request.user).everything,
        **extra,
    }
    return render(request, "teams/detail.html", context, status=status)


def _team_change(
    request: HttpRequest,
    pk: int,
    change: Callable[..., Outcome[Any]],
    done: Callable[[Any], str],
    *,
    error_key: str = "error",
    **arguments: Any,
) -> HttpResponse:
    _require_admin(request)
    _team_or_404(pk)
    try:
        changed = write_sync(change, team_pk=pk, **arguments, **_who(request))
    except ServiceError as error:
        if error.status == 404:
            raise Http404(error.message) from None
        return team_page(request, pk, status=error.status, **{error_key: error.message})
    messages.success(request, done(changed.value))
    return redirect("team", pk=pk)


@login_required
@require_POST
def team_rename_view(request: HttpRequest, pk: int) -> HttpResponse:
    return _team_change(
        request, pk, services.team_rename, lambda team: f"Renamed the team to {team.name}.",
        error_key="rename_error", name=request.POST.get("name", ""),
    )  # fmt: skip


@login_required
@require_POST
def team_delete_view(request: HttpRequest, pk: int) -> HttpResponse:
    _require_admin(request)
    _team_or_404(pk)
    try:
        removed = write_sync(services.team_delete, team_pk=pk, **_who(request))
    except ServiceError as error:
        return team_page(request, pk, status=error.status, delete_error=error.message)
    messages.success(request, f"Removed the team {removed.value}.")
    return redirect("teams")


@login_required
@require_POST
def member_add_view(request: HttpRequest, pk: int) -> HttpResponse:
    username = request.POST.get("username", "")[:150]
    role = request.POST.get("role", "")
    return _team_change(
        request, pk, services.member_add,
        lambda m: f"{m.user.get_username()} is a {m.get_role_display().lower()} of the team.",
        error_key="add_error", username=username, role=role,
    )  # fmt: skip


@login_required
@require_POST
def member_role_view(request: HttpRequest, pk: int, membership_pk: int) -> HttpResponse:
    return _team_change(
        request, pk, services.member_role_set,
        lambda m: f"{m.user.get_username()} is a {m.get_role_display().lower()} of the team.",
        membership_pk=membership_pk, role=request.POST.get("role", ""),
    )  # fmt: skip


@login_required
@require_POST
def member_remove_view(request: HttpRequest, pk: int, membership_pk: int) -> HttpResponse:
    return _team_change(
        request, pk, services.member_remove,
        lambda m: f"{m.user.get_username()} is no longer in the team.",
        membership_pk=membership_pk,
    )  # fmt: skip
