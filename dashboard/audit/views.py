"""The audit log page, and its CSV and JSON exports of the filtered view (streamed)."""

from __future__ import annotations

import csv
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied
from django.core.handlers.asgi import ASGIRequest
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse

from dashboard.audit import selectors
from dashboard.core.security import login_required
from dashboard.core.visibility import Audience, audience_of, visible_projects
from dashboard.models import AuditAction, AuditEntry, Team

FIELDS = ["at", "person", "rule", "action", "project", "session", "about", "summary", "surface",
          "address"]  # fmt: skip


def _reader(request: HttpRequest) -> Audience:
    audience = audience_of(request.user)
    if not audience.reviews_anything:
        raise PermissionDenied("The audit log is for admins and reviewers.")
    return audience


# The action filter's groups, by the first word of an action's value.
ACTION_GROUPS = {
    "plan": "Decisions", "request": "Decisions", "countdown": "Decisions",
    "rule": "Rules and tokens", "token": "Rules and tokens",
    "auth": "Sign-ins",
    "role": "People and teams", "team": "People and teams",
    "project": "Projects and notifications", "notify": "Projects and notifications",
    "budget": "Budgets",
}  # fmt: skip


def action_groups() -> list[tuple[str, list[tuple[str, str]]]]:
    groups: dict[str, list[tuple[str, str]]] = {}
    for value, label in AuditAction.choices:
        group = ACTION_GROUPS.get(value.partition(".")[0], "Other")
        groups.setdefault(group, []).append((value, label))
    return list(groups.items())


@dataclass(frozen=True)
class Row:
    entry: AuditEntry
    # Where what it concerns is shown to this viewer ("" when nowhere they may go); without
    # words of its own the link is on the project's name (or the entry's `about`).
    link: str = ""
    link_text: str = ""


@dataclass(frozen=True)
class _Reach:
    """What the viewer may open of the page's entries, read once per page (two queries)."""

    viewer_pk: int | None
    admin: bool
    teams: frozenset[int]
    projects: frozenset[int]


def _reach(audience: Audience, viewer_pk: int | None, entries: list[AuditEntry]) -> _Reach:
    teams, projects = set(), set()
    for entry in entries:
        kind, _, pk = entry.about.partition(":")
        if pk.isdigit() and kind in {"team", "project"}:
            (teams if kind == "team" else projects).add(int(pk))
    return _Reach(
        viewer_pk=viewer_pk,
        admin=audience.everything,
        teams=frozenset(Team.objects.filter(pk__in=teams).values_list("pk", flat=True))
        if teams else frozenset(),
        projects=frozenset(
            visible_projects(audience).filter(pk__in=projects).values_list("pk", flat=True)
        ) if projects else frozenset(),
    )  # fmt: skip


SETTINGS_PLACES = {
    "token": ("tokens-title", "agent tokens"),
    "webhook": ("webhooks-title", "webhooks"),
    "device": ("devices-title", "devices"),
}
ADMIN_PAGES = {
    "token": ("admin:dashboard_agenttoken_change", "the token in the admin"),
    "user": ("admin:auth_user_change", "the account in the admin"),
    "group": ("admin:auth_group_change", "the group in the admin"),
}


def row_of(entry: AuditEntry, reach: _Reach) -> Row:
    """The entry with a link to what it concerns, where the viewer may open it."""
    kind, _, pk_text = entry.about.partition(":")
    pk = int(pk_text) if pk_text.isdigit() else None
    if pk is not None:
        if kind == "plan":
            return Row(entry, reverse("plan-review", args=[pk]))
        if kind == "request":
            return Row(entry, reverse("inbox-request", args=[pk]))
        if kind == "team" and pk in reach.teams:
            return Row(entry, reverse("team", args=[pk]), "team page")
        if kind == "project" and pk in reach.projects:
            return Row(entry, reverse("project", args=[pk]))
        if kind == "rule":
            return Row(entry, reverse("team-rules"), "team rules")
        if (
            kind in SETTINGS_PLACES
            and entry.actor_id is not None
            and entry.actor_id == reach.viewer_pk
        ):
            anchor, words = SETTINGS_PLACES[kind]
            return Row(entry, f"{reverse('settings')}#{anchor}", f"your {words}")
        if kind in ADMIN_PAGES and reach.admin:
            name, words = ADMIN_PAGES[kind]
            return Row(entry, reverse(name, args=[pk]), words)
    if entry.session_key:
        return Row(entry, reverse("session-board", args=[entry.session_key]))
    return Row(entry)


@login_required
def audit_page(request: HttpRequest) -> HttpResponse:
    audience = _reader(request)
    only = selectors.audit_filter(request.GET)
    chosen = selectors.entries(audience, only)
    page = selectors.page_of(chosen, request.GET.get("before", ""))
    query = only.as_query()
    reach = _reach(audience, request.user.pk, page.rows)
    context = {
        "rows": [row_of(entry, reach) for entry in page.rows],
        "only": only,
        "action_groups": action_groups(),
        "older": urlencode({**query, "before": page.older}) if page.older else "",
        "newest": urlencode(query),
        "export_query": urlencode(query),
        "paged": bool(request.GET.get("before")),
    }
    return render(request, "audit/page.html", context)


def _row(entry: AuditEntry) -> dict[str, Any]:
    return {
        "at": entry.at.isoformat(),
        "person": entry.actor_name,
        "rule": entry.rule,
        "action": entry.action,
        "project": entry.project_name,
        "session": entry.session_key,
        "about": entry.about,
        "summary": entry.summary,
        "surface": entry.surface,
        "address": entry.address or "",
    }


class _Line:
    """A file-like object for csv.writer that hands each line back."""

    def write(self, value: str) -> str:
        return value


# A spreadsheet runs a cell that starts with one of these as a formula; an entry's summary holds
# what agents asked for, so such a cell starts with an apostrophe (shown as text) instead.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: str) -> str:
    return f"'{value}" if value.startswith(FORMULA_STARTS) else value


def _csv_pieces(pages: Iterator[list[AuditEntry]]) -> Iterator[str]:
    writer = csv.DictWriter(_Line(), fieldnames=FIELDS)
    yield writer.writeheader()
    for rows in pages:
        yield "".join(
            writer.writerow({name: _cell(value) for name, value in _row(entry).items()})
            for entry in rows
        )


def _json_pieces(pages: Iterator[list[AuditEntry]]) -> Iterator[str]:
    yield '{"entries": ['
    separator = ""
    for rows in pages:
        yield separator + ",".join(json.dumps(_row(entry), ensure_ascii=False) for entry in rows)
        separator = ","
    yield "]}\n"


async def _sent_as_made(pieces: Iterator[str]) -> AsyncIterator[str]:
    """The export's pieces for the ASGI server, each made in the request's thread (one page of
    entries, one short query) and sent before the next page is read: a sync iterator would be
    read whole into memory before the first byte left."""
    advance = sync_to_async(next)
    while (piece := await advance(pieces, None)) is not None:
        yield piece


@login_required
def audit_export(request: HttpRequest, kind: str) -> StreamingHttpResponse:
    if kind not in {"csv", "json"}:
        raise Http404("The audit log exports as CSV or JSON.")
    audience = _reader(request)
    chosen = selectors.entries(audience, selectors.audit_filter(request.GET))
    pages = selectors.export_pages(chosen)
    pieces = _csv_pieces(pages) if kind == "csv" else _json_pieces(pages)
    # Django's test client is a WSGI request: it reads the same pieces without the event loop.
    content = _sent_as_made(pieces) if isinstance(request, ASGIRequest) else pieces
    content_type = "text/csv; charset=utf-8" if kind == "csv" else "application/json"
    response = StreamingHttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="agentboard-audit.{kind}"'
    return response
