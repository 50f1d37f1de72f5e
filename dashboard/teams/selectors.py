"""The teams pages: every team with its people and projects, and one team's own page."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from dashboard.models import Membership, Project, Team, TeamRole


@dataclass(frozen=True)
class TeamRow:
    team: Team
    members: int
    reviewers: int
    projects: int


def teams_overview() -> list[TeamRow]:
    """Every team by name, with how many people, reviewers and projects (one query)."""
    teams = Team.objects.annotate(
        members=Count("memberships", distinct=True),
        reviewers=Count(
            "memberships", filter=Q(memberships__role=TeamRole.REVIEWER), distinct=True
        ),
        owned=Count("projects", distinct=True),
    )
    return [
        TeamRow(team=t, members=t.members, reviewers=t.reviewers, projects=t.owned) for t in teams
    ]


def team_members(team: Team) -> QuerySet[Membership]:
    """Reviewers first, then by name."""
    return team.memberships.select_related("user").order_by("-role", "user__username")


def team_projects(team: Team) -> QuerySet[Project]:
    return team.projects.order_by("name")
