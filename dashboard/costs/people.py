"""A person's page: what their agents cost, over the sessions the viewer sees."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.core.security import login_required
from dashboard.core.visibility import audience_of
from dashboard.costs import selectors
from dashboard.costs.budget_views import budgets_html
from dashboard.costs.panels import summary_html
from dashboard.models import Session


@login_required
def person_page(request: HttpRequest, username: str) -> HttpResponse:
    """Anyone signed in finds a person whose sessions they see (and themselves); for anyone
    else the page does not exist, as their sessions do not."""
    audience = audience_of(request.user)
    person = get_user_model().objects.filter(username=username[:150]).first()
    if person is None or not (
        person.pk == request.user.pk
        or Session.objects.filter(audience.sees(), owner_id=person.pk).exists()
    ):
        raise Http404("There is no such person, or none of their sessions is yours to see.")
    summary = selectors.cost_summary(audience, owner_pk=person.pk)
    whose = "their sessions" if audience.everything else "their sessions you see"
    context = {
        "person": person,
        "cost": summary_html(
            request,
            summary,
            heading_id="cost-title",
            whose=whose,
            extra=budgets_html(request, person=person),
        ),
    }
    return render(request, "costs/person.html", context)
