"""The projects page: each project with its sessions running, what waits in it on the viewer,
the sessions done this week and the people active in it; and one project's own page."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, Q
from django.utils import timezone

from dashboard.core.keyset import Page, page_of
from dashboard.core.visibility import Audience, visible_projects
from dashboard.models import Project, Session
from planmode.inbox import waiting

WEEK = timedelta(days=7)
# Sessions on a page of a project's sessions (newest first, then older pages).
PROJECT_SESSIONS = 50


@dataclass(frozen=True)
class ProjectRow:
    project: Project
    running: int
    waiting: int
    done_this_week: int
    people: int


def visible_project(audience: Audience, pk: int) -> Project | None:
    return visible_projects(audience).select_related("team").filter(pk=pk).first()


def projects_overview(audience: Audience) -> list[ProjectRow]:
    """Every project the audience sees, those with something waiting on them first, then the
    busiest; counted over the sessions they see. Three queries, however many projects and
    sessions: the counts, what waits, and which project each waiting session is in."""
    week_ago = timezone.now() - WEEK
    seen = audience.sees("sessions__")
    projects = visible_projects(audience).annotate(
        running=Count("sessions", filter=seen & Q(sessions__ended_at__isnull=True)),
        done_this_week=Count(
            "sessions",
            filter=seen & Q(sessions__ended_at__gte=week_ago, sessions__ended_quietly=False),
        ),
        people=Count(
            "sessions__owner", filter=seen & Q(sessions__last_seen_at__gte=week_ago), distinct=True
        ),
    )
    waits = waiting_by_project(audience)
    rows = [
        ProjectRow(
            project=project,
            running=project.running,
            waiting=waits.get(project.pk, 0),
            done_this_week=project.done_this_week,
            people=project.people,
        )
        for project in projects
    ]
    return sorted(rows, key=lambda row: (-row.waiting, -row.running, row.project.name.lower()))


def waiting_by_project(audience: Audience) -> Counter[int]:
    """How many things wait on the audience in each project."""
    waits = waiting(audience)
    if not waits:
        return Counter()
    sessions = Counter(wait.session_id for wait in waits)
    projects = Session.objects.filter(pk__in=list(sessions), project_record__isnull=False)
    found: Counter[int] = Counter()
    for session_pk, project_pk in projects.values_list("pk", "project_record_id"):
        found[project_pk] += sessions[session_pk]
    return found


def project_sessions(
    project: Project, audience: Audience, *, before: str | None = None, after: str | None = None
) -> Page[Session]:
    """A page of the project's sessions the audience sees, the newest started first (keyset on
    the start, which never changes: a session's activity does not move it between pages).
    Raises ValueError for a cursor this list did not hand out."""
    sessions = project.sessions.filter(audience.sees()).select_related("owner")
    return page_of(sessions, at="started_at", before=before, after=after, size=PROJECT_SESSIONS)


def project_people(project: Project, audience: Audience) -> list[tuple[str, int, str]]:
    """Who worked in the project this week (full name where set), with their session count
    and user name, in the sessions the audience sees."""
    week_ago = timezone.now() - WEEK
    rows = (
        project.sessions.filter(audience.sees(), last_seen_at__gte=week_ago)
        .values("owner__username", "owner__first_name", "owner__last_name")
        .annotate(sessions=Count("pk"))
        .order_by("-sessions", "owner__username")
    )
    return [
        (f"{row['owner__first_name']} {row['owner__last_name']}".strip() or row["owner__username"],
         row["sessions"], row["owner__username"])
        for row in rows
    ]  # fmt: skip
