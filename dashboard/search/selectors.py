"""Searching: one query over everything indexed, as the searcher may see it, in groups by
kind, each hit with a link to the exact place."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.urls import reverse

from dashboard.models import Session
from dashboard.search.engines import Filters, Hit, engine
from dashboard.search.models import EntryKind

# Hits read per search; each group shows them all (the kind filter narrows to one group).
LIMIT = 60


@dataclass(frozen=True)
class Result:
    hit: Hit
    session: Session
    url: str

    @property
    def kind_label(self) -> str:
        return EntryKind(self.hit.kind).label


@dataclass
class Group:
    kind: str
    label: str
    results: list[Result] = field(default_factory=list)


def search(text: str, filters: Filters, limit: int = LIMIT) -> list[Result]:
    hits = engine().search(text, filters, limit)
    sessions = Session.objects.select_related("owner").in_bulk({hit.session for hit in hits})
    return [
        Result(hit=hit, session=sessions[hit.session], url=link(hit, sessions[hit.session]))
        for hit in hits
        if hit.session in sessions
    ]


def grouped(results: list[Result]) -> list[Group]:
    """In the order of the kinds, each group in order of relevance."""
    groups = {kind: Group(kind=kind, label=label) for kind, label in EntryKind.choices}
    for result in results:
        groups[result.hit.kind].results.append(result)
    return [group for group in groups.values() if group.results]


def link(hit: Hit, session: Session) -> str:
    """Where the hit is: the board (its history line), the plan revision, the comment, the
    request, the step on the timeline."""
    board = reverse("session-board", args=[session.session_id])
    match hit.kind:
        case EntryKind.TODOS:
            return f"{board}#revision-{hit.ref}"
        case EntryKind.PLAN:
            return reverse("plan-review", args=[hit.ref])
        case EntryKind.COMMENT:
            return reverse("plan-review", args=[hit.parent]) + f"#annotation-{hit.ref}"
        case EntryKind.DECISION:
            return reverse("plan-review", args=[hit.parent])
        case EntryKind.REQUEST:
            return reverse("inbox-request", args=[hit.ref])
        case EntryKind.STEP:
            timeline = reverse("session-timeline", args=[session.session_id])
            return f"{timeline}?{urlencode({'step': hit.ref})}"
    return board
