"""The search page: one box over sessions, todo lists, plans, comments, decisions, permission
requests and tool steps, with filters for kind, project, person and dates."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from urllib.parse import urlencode

from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.utils import timezone
from django.utils.dateparse import parse_date

from dashboard.core.edge import query_person, query_project
from dashboard.core.security import login_required
from dashboard.core.visibility import sessions_sql
from dashboard.models import Project
from dashboard.search import selectors
from dashboard.search.engines import MAX_QUERY_CHARS, Filters
from dashboard.search.models import EntryKind


def search_filters(query: QueryDict, *, sessions: tuple[str, tuple]) -> Filters:
    """The filters from the address; one that names nothing is a clear 400."""
    kind = query.get("kind", "")
    if kind and kind not in EntryKind.values:
        raise BadRequest(f"There is no kind {kind!r} to search; pick one from the list.")
    person = query_person(query)
    return Filters(
        kinds=(kind,) if kind else (),
        project=query_project(query),
        person=person[1] if person else None,
        since=_day(query.get("since", ""), "since"),
        until=_day(query.get("until", ""), "until", after=True),
        sessions_sql=sessions[0],
        sessions_params=sessions[1],
    )


def _day(value: str, name: str, *, after: bool = False) -> datetime | None:
    if not value:
        return None
    try:
        day = parse_date(value)
    except ValueError:
        day = None
    if day is None:
        raise BadRequest(f"The {name} date must be a day like 2026-11-26.")
    # The first and last days a date can hold bound nothing (and a day after the last is none).
    if day == (date.max if after else date.min):
        return None
    if after:
        day += timedelta(days=1)
    return timezone.make_aware(datetime.combine(day, time.min))


@login_required
def search_page(request: HttpRequest) -> HttpResponse:
    text = request.GET.get("q", "")
    filters = search_filters(request.GET, sessions=sessions_sql(request.user))
    results = selectors.search(text, filters) if text.strip() else []
    kept = {key: value for key, value in request.GET.items() if key != "kind" and value}
    context = {
        "q": text,
        "too_long": len(text) > MAX_QUERY_CHARS,
        "max_chars": MAX_QUERY_CHARS,
        "groups": selectors.grouped(results),
        "count": len(results),
        "filters": request.GET,
        "kinds": EntryKind.choices,
        "projects": Project.objects.only("pk", "name"),
        "kind_query": urlencode(kept),
    }
    return render(request, "search/page.html", context)
