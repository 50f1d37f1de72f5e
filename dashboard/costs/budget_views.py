"""Setting budgets (a project's, by its reviewers and admins; a person's, by admins) and
letting an over-budget session continue (by those who decide its session)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from dashboard.core.audit import via_request
from dashboard.core.errors import ServiceError
from dashboard.core.security import login_required
from dashboard.core.visibility import audience_of, visible_projects
from dashboard.core.writer import write_sync
from dashboard.costs import budgets
from dashboard.costs.models import Budget
from dashboard.models import Session


def budgets_html(request: HttpRequest, *, project: Any = None, person: Any = None) -> SafeString:
    """The budgets of a project or a person, with their spending this period and, for those
    who may, the form to set them."""
    if project is not None:
        rows = Budget.objects.filter(scope=Budget.Scope.PROJECT, project=project)
        may_set = audience_of(request.user).reviews_project(
            team_pk=project.team_id, project_pk=project.pk
        )
        action = f"/budgets/project/{project.pk}/"
        who = "The project's reviewers"
    else:
        rows = Budget.objects.filter(scope=Budget.Scope.PERSON, person=person)
        may_set = bool(request.user.is_superuser)
        action = f"/budgets/person/{person.pk}/"
        who = "Admins"
    shown = []
    for budget in rows.select_related("project", "person").order_by("period"):
        spent = budgets.spent_micros(budget, budgets.period_of(budget.period))
        shown.append(
            {
                "budget": budget,
                "limit": budgets.dollars(budget.limit_micros),
                "spent": budgets.dollars(spent),
                "percent": round(100 * spent / budget.limit_micros),
                "over": spent >= budget.limit_micros,
            }
        )
    return render_to_string(
        "costs/_budgets.html",
        {"rows": shown, "may_set": may_set, "action": action, "who": who,
         "periods": Budget.Period.choices},
        request=request,
    )  # fmt: skip


def _set(request: HttpRequest, back: str, **whose: Any) -> HttpResponse:
    remove = request.POST.get("remove") == "1"
    try:
        outcome = write_sync(
            budgets.budget_set,
            actor=request.user,
            via=via_request(request, "budget form"),
            period=request.POST.get("period", ""),
            limit=request.POST.get("limit", "")[:60],
            stop_at_limit=request.POST.get("stop_at_limit") == "on",
            remove=remove,
            **whose,
        )
    except ServiceError as error:
        context = {"error": error.message, "back": back, "post": request.POST}
        return render(request, "costs/budget_error.html", context, status=error.status)
    if remove:
        messages.success(request, "Removed the budget.")
    elif outcome.value is not None:
        messages.success(request, _set_message(outcome.value))
    return redirect(back)


def _set_message(budget: Budget) -> str:
    """What setting it did: and, when it is spent already, which sessions it holds now."""
    said = f"Budget set: {budgets.budget_name(budget)}."
    held = budgets.held_by(budget)
    if not held:
        return said
    if held == 1:
        sessions, its = "1 running session waits", "its"
    else:
        sessions, its = f"{held} running sessions wait", "their"
    refused = f", {its} tool calls refused" if budget.stop_at_limit else ""
    return f"{said} It is spent already: {sessions} on a reviewer{refused}."


@login_required
@require_POST
def project_budget_view(request: HttpRequest, pk: int) -> HttpResponse:
    audience = audience_of(request.user)
    project = visible_projects(audience).filter(pk=pk).first()
    if project is None:
        raise Http404("There is no such project.")
    if not audience.reviews_project(team_pk=project.team_id, project_pk=project.pk):
        raise PermissionDenied("Only the project's reviewers and admins set its budget.")
    return _set(request, f"/projects/{project.pk}/#cost-title", project=project)


@login_required
@require_POST
def person_budget_view(request: HttpRequest, pk: int) -> HttpResponse:
    if not request.user.is_superuser:
        raise PermissionDenied("Only admins set a person's budget.")
    person = get_user_model().objects.filter(pk=pk).first()
    if person is None:
        raise Http404("There is no such person.")
    return _set(request, f"/people/{person.get_username()}/#cost-title", person=person)


@login_required
@require_POST
def session_continue_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Let an over-budget session run until its budgets' periods end."""
    session = Session.objects.filter(pk=pk).first()
    audience = audience_of(request.user)
    if session is None or not audience.may_see(session):
        raise Http404("There is no such session.")
    if not audience.may_decide(session):
        raise PermissionDenied("Only the session's reviewers can let it continue over budget.")
    outcome = write_sync(
        budgets.session_continue,
        session_pk=session.pk,
        actor=request.user,
        via=via_request(request, "inbox" if "inbox" in request.POST.get("from", "") else "board"),
    )
    if request.htmx:
        # The board and the inbox hear of it live; the button asked for nothing else.
        return HttpResponse(status=204)
    if outcome.value:
        messages.success(request, "The session continues until its budget's period ends.")
    else:
        messages.info(request, "The session was not held by a budget.")
    back = request.POST.get("from", "")
    return redirect(back if back in {"/inbox/"} else f"/sessions/{session.session_id}/")
