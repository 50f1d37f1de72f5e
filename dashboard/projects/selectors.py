"""The projects page: each project with its sessions running, what waits in it on the viewer,
the sessions done this week and the people active in it; and one project's own page."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, Q
from django.utils import timezone

from dashboard.models import Project, Session
from planmode.inbox import waiting

WEEK = timedelta(days=7)
# The most sessions a project's page lists (newest activity first).
PROJECT_SESSIONS = 100


@dataclass(frozen=True)
class ProjectRow:
    project: Project
    running: int
    waiting: int
    done_this_week: int
    people: int


def projects_overview(audience: int | None) -> list[ProjectRow]:
    """Every project, those with something waiting on the audience first, then the busiest.
    Three queries, however many projects and sessions: the counts, what waits, and which
    project each waiting session is in."""
    week_ago = timezone.now() - WEEK
    projects = Project.objects.annotate(
        running=Count("sessions", filter=Q(sessions__ended_at__isnull=True)),
        done_this_week=Count(
            "sessions", filter=Q(sessions__ended_at__gte=week_ago, sessions__ended_quietly=False)
        ),
        people=Count(
            "sessions__owner", filter=Q(sessions__last_seen_at__gte=week_ago), distinct=True
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


def waiting_by_project(audience: int | None) -> Counter[int]:
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


def project_sessions(project: Project) -> list[Session]:
    """The project's latest sessions, running ones first, each newest activity first."""
    latest = project.sessions.select_related("owner").order_by("-last_seen_at")
    return sorted(latest[:PROJECT_SESSIONS], key=lambda session: session.ended_at is not None)


def project_people(project: Project) -> list[tuple[str, int]]:
    """Who worked in the project this week (full name where set), with their session count."""
    week_ago = timezone.now() - WEEK
    rows = (
        project.sessions.filter(last_seen_at__gte=week_ago)
        .values("owner__username", "owner__first_name", "owner__last_name")
        .annotate(sessions=Count("pk"))
        .order_by("-sessions", "owner__username")
    )
    return [
        (f"{row['owner__first_name']} {row['owner__last_name']}".strip() or row["owner__username"],
         row["sessions"])
        for row in rows
    ]  # fmt: skip
