"""Reading the audit log: what a viewer may read (admins everything, reviewers their teams'),
filtered, newest first, a page at a time with keyset cursors, or all of it for an export."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.core.exceptions import BadRequest
from django.db.models import Q, QuerySet
from django.http import QueryDict
from django.utils import timezone

from dashboard.core.edge import query_text
from dashboard.core.visibility import Audience
from dashboard.models import AuditAction, AuditEntry

PAGE = 50
EXPORT_CHUNK = 500
# Who signed in from where, and who was made an admin, belong to no team: admins read them.
ADMINS_ONLY = [
    AuditAction.SIGNED_IN,
    AuditAction.SIGNED_OUT,
    AuditAction.SIGN_IN_FAILED,
    AuditAction.LOCKED_OUT,
    AuditAction.ROLE_CHANGED,
]


# What an entry is about when it is a change to someone's account or devices (their tokens,
# push devices and webhooks, their roles, a group's permissions): no team's, read by admins.
ACCOUNT_KINDS = ("token", "device", "webhook", "user", "group")


def _about_an_account() -> Q:
    condition = Q()
    for kind in ACCOUNT_KINDS:
        condition |= Q(about__startswith=f"{kind}:")
    return condition


def readable(audience: Audience) -> Q:
    """The entries the audience may read: of the teams they review (decisions in their
    sessions, changes to the team, its members, its projects), of the projects that name them,
    and (with the review permission) of projects no team owns and the rules of every project;
    admins read all, and they alone the sign-ins, roles and changes to people's accounts."""
    if audience.everything:
        return Q()
    condition = Q(team_id__in=sorted(audience.reviews))
    if audience.reviews_open:
        condition |= Q(team_id__isnull=True) & ~_about_an_account() & ~Q(action__in=ADMINS_ONLY)
    if audience.named:
        condition |= Q(project_id__in=sorted(audience.named))
    return condition


@dataclass(frozen=True)
class AuditFilter:
    person: str = ""
    project: str = ""
    action: str = ""
    since: date | None = None
    until: date | None = None

    def as_query(self) -> dict[str, str]:
        values = {
            "person": self.person,
            "project": self.project,
            "action": self.action,
            "since": self.since.isoformat() if self.since else "",
            "until": self.until.isoformat() if self.until else "",
        }
        return {key: value for key, value in values.items() if value}


def _day(query: QueryDict, name: str) -> date | None:
    text = query.get(name, "").strip()
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        message = f"{name.capitalize()} is a day written 2026-11-01, not {text!r}."
        raise BadRequest(message) from None


def audit_filter(query: QueryDict) -> AuditFilter:
    action = query.get("action", "")
    if action and action not in AuditAction.values:
        raise BadRequest(f"There is no action {action!r}; pick one from the list.")
    return AuditFilter(
        person=query_text(query, "person", max_length=150),
        project=query_text(query, "project", max_length=200),
        action=action,
        since=_day(query, "since"),
        until=_day(query, "until"),
    )


def _start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def entries(audience: Audience, only: AuditFilter) -> QuerySet[AuditEntry]:
    chosen = AuditEntry.objects.filter(readable(audience))
    if only.person:
        chosen = chosen.filter(actor_name=only.person)
    if only.project:
        chosen = chosen.filter(project_name=only.project)
    if only.action:
        chosen = chosen.filter(action=only.action)
    if only.since:
        chosen = chosen.filter(at__gte=_start(only.since))
    if only.until:
        chosen = chosen.filter(at__lt=_start(only.until + timedelta(days=1)))
    return chosen.order_by("-at", "-pk")


@dataclass(frozen=True)
class AuditPage:
    rows: list[AuditEntry]
    # The cursor of the next (older) page, if there is one.
    older: str = ""


def cursor_of(entry: AuditEntry) -> str:
    return f"{entry.at.isoformat()}_{entry.pk}"


def _older_than(chosen: QuerySet[AuditEntry], at: datetime, pk: int) -> QuerySet[AuditEntry]:
    return chosen.filter(Q(at__lt=at) | Q(at=at, pk__lt=pk))


def page_of(chosen: QuerySet[AuditEntry], before: str) -> AuditPage:
    """One page, newest first, older than the cursor `before` ("" for the newest)."""
    if before:
        try:
            at_text, pk_text = before.rsplit("_", 1)
            at, pk = datetime.fromisoformat(at_text), int(pk_text)
        except ValueError:
            raise BadRequest("That page link is broken; start again from the newest.") from None
        chosen = _older_than(chosen, at, pk)
    rows = list(chosen[: PAGE + 1])
    older = cursor_of(rows[PAGE - 1]) if len(rows) > PAGE else ""
    return AuditPage(rows=rows[:PAGE], older=older)


def export_pages(chosen: QuerySet[AuditEntry]) -> Iterator[list[AuditEntry]]:
    """Every entry, newest first, EXPORT_CHUNK at a time: each page its own short query that
    starts after the last entry of the one before, so a year of entries never sits in memory
    and no database cursor stays open while a slow download takes its time."""
    rows = list(chosen[:EXPORT_CHUNK])
    while rows:
        yield rows
        if len(rows) < EXPORT_CHUNK:
            return
        last = rows[-1]
        rows = list(_older_than(chosen, last.at, last.pk)[:EXPORT_CHUNK])
