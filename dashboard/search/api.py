"""`GET /api/v1/search`: the same search for an agent token, over the sessions its owner sees
on the search page (`dashboard.core.visibility`)."""

from __future__ import annotations

import re
from datetime import date, datetime
from html import unescape
from typing import Annotated, Literal

from channels.db import database_sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import BadRequest
from django.http import HttpRequest, QueryDict
from ninja import Query, Router
from pydantic import BaseModel, BeforeValidator, WithJsonSchema

from dashboard.core.edge import MAX_INTEGER
from dashboard.core.errors import ServiceError
from dashboard.core.visibility import audience_of
from dashboard.search import selectors
from dashboard.search.engines import MAX_QUERY_CHARS
from dashboard.search.models import EntryKind
from dashboard.search.views import search_filters
from todos.schemas import ErrorOut

router = Router(tags=["search"])
Kind = Literal["session", "todos", "plan", "comment", "decision", "request", "step"]
DAY_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


def _written_as_a_day(value: object) -> date:
    """Only `2026-11-01`: a date parser also takes `0`, `20261101` or a midnight datetime."""
    if not isinstance(value, str) or not re.fullmatch(DAY_PATTERN, value):
        raise ValueError("must be a day like 2026-11-01")
    return date.fromisoformat(value)


# A day as the search page takes it, and nothing else the schema would not call a date.
Day = Annotated[
    date,
    BeforeValidator(_written_as_a_day),
    WithJsonSchema({"type": "string", "format": "date", "pattern": DAY_PATTERN}),
]


class HitOut(BaseModel):
    kind: Kind
    session_id: str
    project: str
    at: datetime
    # Plain text; the matching words are between « and ».
    title: str
    snippet: str
    # Where it is on the dashboard (a path on this server).
    url: str


class SearchOut(BaseModel):
    results: list[HitOut]


@router.get(
    "/search",
    response={200: SearchOut, 401: ErrorOut, 404: ErrorOut, 422: ErrorOut},
    summary="Search your sessions, lists, plans, comments, decisions, requests and steps",
)
async def search(
    request: HttpRequest,
    q: Annotated[str, Query(description="Words, or a phrase in double quotes.")],
    kind: Annotated[Kind | None, Query(None, description="Only this kind of result.")] = None,
    project: Annotated[
        int | None, Query(None, ge=1, le=MAX_INTEGER, description="Only this project's (its id).")
    ] = None,
    since: Annotated[Day | None, Query(None, description="From this day, e.g. 2026-11-01.")] = None,
    until: Annotated[Day | None, Query(None, description="Up to this day, included.")] = None,
    limit: Annotated[int, Query(20, ge=1, le=60)] = 20,
) -> dict:
    """The most relevant first. Words are matched in any form ("paginate" finds "pagination");
    only the first 500 characters of `q` are used."""
    return await database_sync_to_async(_search)(
        request.auth, q[: MAX_QUERY_CHARS * 2], kind, project, since, until, limit
    )


def _search(owner: AbstractBaseUser, q, kind, project, since, until, limit) -> dict:
    query = QueryDict(mutable=True)
    for name, value in (("kind", kind), ("project", project), ("since", since), ("until", until)):
        if value is not None:
            query[name] = str(value)
    try:
        # What the token's owner sees on the search page, by the one rule.
        filters = search_filters(query, sessions=audience_of(owner).sessions_sql("s"))
    except BadRequest as error:
        # The only filter the schema cannot check is an id that names no project.
        raise ServiceError("project_not_found", str(error), status=404) from None
    results = selectors.search(q, filters, limit)
    return {
        "results": [
            {
                "kind": EntryKind(result.hit.kind).value,
                "session_id": result.session.session_id,
                "project": result.session.project,
                "at": result.hit.at,
                "title": _plain(result.hit.title),
                "snippet": _plain(result.hit.snippet),
                "url": result.url,
            }
            for result in results
        ]
    }


def _plain(marked: str) -> str:
    """The marked HTML back to text, the matches between « and »."""
    return unescape(marked.replace("<mark>", "«").replace("</mark>", "»"))
