"""When each person is told that something waits: the one place the delivered notifications
(webhooks and phones, `outbox`) and the browser's desktop notifications (`views.waiting`) ask.

A plan or a permission request in a project that names its own reviewers is told at once to
them and to the session's owner; everyone else it waits on is told
AGENTBOARD_REVIEW_FALLBACK_MINUTES after it began to wait, and not at all once it was answered
(the outbox drops what it held back; the browser's list no longer holds it). Everything else
is told to everyone at once. Who it waits on at all is the rule of `dashboard.core.visibility`;
this only says when. The inbox lists it for all of them from the start.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from django.conf import settings

from dashboard.models import Project, Session

# What a project's own reviewers are asked first about (the inbox's kinds of waiting).
ASKED_FIRST = frozenset({"plan", "permission"})


def named_reviewers(project_pks: Iterable[int | None]) -> dict[int, frozenset[int]]:
    """The projects among these that name their own reviewers, with those reviewers' pks (one
    query; none without projects)."""
    pks = sorted({pk for pk in project_pks if pk is not None})
    if not pks:
        return {}
    named: dict[int, set[int]] = defaultdict(set)
    rows = Project.reviewers.through.objects.filter(project_id__in=pks)
    for project_pk, user_pk in rows.values_list("project_id", "user_id"):
        named[project_pk].add(user_pk)
    return {project_pk: frozenset(users) for project_pk, users in named.items()}


def fallback() -> timedelta:
    return timedelta(minutes=settings.AGENTBOARD_REVIEW_FALLBACK_MINUTES)


def told_at(
    *,
    kind: str,
    session: Session,
    user_pk: int,
    since: datetime,
    named: Mapping[int, frozenset[int]],
) -> datetime:
    """When `user_pk` is told that something of `kind` ("plan", "permission", "countdown"...)
    waits in `session` since `since`, given the `named` reviewers of its project
    (`named_reviewers`). Only for someone it waits on."""
    reviewers = named.get(session.project_record_id) if kind in ASKED_FIRST else None
    if reviewers and user_pk not in reviewers and user_pk != session.owner_id:
        return since + fallback()
    return since
