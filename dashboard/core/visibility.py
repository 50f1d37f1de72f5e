"""Who sees which sessions, and who decides what waits in them: the one rule every page,
socket, API answer, notification, webhook and search result asks.

- An admin (a superuser) sees and decides everything.
- Anyone else signed in sees their own sessions (reported with their own tokens), the sessions
  of their teams' projects, and those of projects no team owns (a server without teams is one
  shared board, as it was before teams).
- They decide (plans, and permission requests, countdowns and concerns in others' sessions)
  for the teams they review and for the projects that name them as reviewers (among those
  they see); with the review permission (`planmode.review_plan`) also for the teams they are a
  member of and for the projects no team owns.
- What waits on them: what they decide, and whatever waits in their own sessions (they answer
  their own agents' permission requests).
- An agent token acts for its owner.

A session carries its project's team (`Session.team`), so each part of the rule is a condition
on the session row alone. `Audience` is the rule for one viewer, read once per request (one
query, kept on the user beside its permissions).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Permission
from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, QuerySet

from dashboard.models import Membership, Project, Session, TeamRole

REVIEW_PERMISSION = "planmode.review_plan"
_CACHE_ATTRIBUTE = "_agentboard_audience"


@dataclass(frozen=True)
class Audience:
    """What one viewer sees and decides. `user_pk` None is an admin: everything."""

    user_pk: int | None
    teams: frozenset[int] = field(default_factory=frozenset)
    reviews: frozenset[int] = field(default_factory=frozenset)
    reviews_open: bool = False
    # Projects that name them as one of their reviewers (asked first).
    named: frozenset[int] = field(default_factory=frozenset)
    # Signed out, or deactivated: nothing at all.
    nothing: bool = False

    @property
    def everything(self) -> bool:
        return self.user_pk is None and not self.nothing

    @property
    def key(self) -> str:
        """Names the viewer's own live groups: "all" for admins, else the user's pk."""
        return "all" if self.user_pk is None else str(self.user_pk)

    @property
    def reviews_anything(self) -> bool:
        return self.everything or self.reviews_open or bool(self.reviews) or bool(self.named)

    # --- as conditions on sessions (`prefix` leads from the model queried to its session) ---

    def sees(self, prefix: str = "") -> Q:
        if self.nothing:
            return Q(pk__in=[])
        if self.everything:
            return Q()
        return (
            Q(**{f"{prefix}owner_id": self.user_pk})
            | Q(**{f"{prefix}team_id__isnull": True})
            | Q(**{f"{prefix}team_id__in": sorted(self.teams)})
        )

    def decides(self, prefix: str = "") -> Q:
        """The sessions whose plans, and others' requests, this viewer decides."""
        if self.nothing:
            return Q(pk__in=[])
        if self.everything:
            return Q()
        condition = Q(**{f"{prefix}team_id__in": sorted(self.reviews)})
        if self.reviews_open:
            condition |= Q(**{f"{prefix}team_id__isnull": True})
        if self.named:
            named = Q(**{f"{prefix}project_record_id__in": sorted(self.named)})
            condition |= named & self.sees(prefix)
        return condition

    def waits_on(self, prefix: str = "") -> Q:
        """The sessions whose waits are this viewer's to answer: what they decide, and their
        own."""
        if self.nothing or self.everything:
            return self.decides(prefix)
        return self.decides(prefix) | Q(**{f"{prefix}owner_id": self.user_pk})

    def sessions_sql(self, alias: str = "s") -> tuple[str, tuple[Any, ...]]:
        """`sees()` as a condition on the session table `alias` for raw queries (search);
        ("", ()) is every session."""
        if self.nothing:
            return "1 = 0", ()
        if self.everything:
            return "", ()
        teams = sorted(self.teams)
        in_teams = f" OR {alias}.team_id IN ({', '.join(['%s'] * len(teams))})" if teams else ""
        return (
            f"({alias}.owner_id = %s OR {alias}.team_id IS NULL{in_teams})",
            (self.user_pk, *teams),
        )

    # --- for one session already read (its `owner_id` and `team_id`) ---------------------

    def may_see(self, session: Any) -> bool:
        if self.nothing:
            return False
        if self.everything or session.owner_id == self.user_pk:
            return True
        return session.team_id is None or session.team_id in self.teams

    def may_decide(self, session: Any) -> bool:
        return self.may_see(session) and self.reviews_project(
            team_pk=session.team_id, project_pk=session.project_record_id
        )

    def reviews_project(self, *, team_pk: int | None, project_pk: int | None) -> bool:
        """Whether this viewer decides for a project of this team (None: no team's), or for
        this very project, which names them as a reviewer."""
        if self.nothing:
            return False
        if self.everything or (project_pk is not None and project_pk in self.named):
            return True
        return self.reviews_open if team_pk is None else team_pk in self.reviews

    def is_waited_on_in(self, session: Any) -> bool:
        """Whether what waits in `session` waits on this viewer."""
        return self.may_decide(session) or (not self.nothing and session.owner_id == self.user_pk)

    def as_data(self) -> dict[str, str]:
        """For the page's script, which places rows that change live: whose waits are mine."""
        return {
            "audience": self.key,
            "reviews": " ".join(str(pk) for pk in sorted(self.reviews)),
            "reviews_open": "true" if self.reviews_open or self.everything else "false",
            "named": " ".join(str(pk) for pk in sorted(self.named)),
        }


NOBODY = Audience(user_pk=None, nothing=True)
EVERYONE = Audience(user_pk=None)


def audience_of(user: AbstractBaseUser | AnonymousUser) -> Audience:
    """The rule for `user`: one query for their teams, then kept on the user object."""
    cached = getattr(user, _CACHE_ATTRIBUTE, None)
    if cached is not None:
        return cached
    audience = _audience_read(user)
    try:
        setattr(user, _CACHE_ATTRIBUTE, audience)
    except AttributeError:  # AnonymousUser has slots of its own; nothing to keep anyway
        pass
    return audience


async def aaudience_of(user: AbstractBaseUser | AnonymousUser) -> Audience:
    """`audience_of` for async views: no thread when the user was read with it (as the
    sign-in middleware does, `dashboard.core.security`)."""
    cached = getattr(user, _CACHE_ATTRIBUTE, None)
    if cached is not None:
        return cached
    return await sync_to_async(audience_of)(user)


def _audience_read(user: AbstractBaseUser | AnonymousUser) -> Audience:
    if not user.is_authenticated or not user.is_active:
        return NOBODY
    if user.is_superuser:
        return EVERYONE
    memberships = Membership.objects.filter(user_id=user.pk).values_list("team_id", "role")
    named = Project.reviewers.through.objects.filter(user_id=user.pk)
    return _audience(
        user.pk,
        reviewer=user.has_perm(REVIEW_PERMISSION),
        memberships=list(memberships),
        named=named.values_list("project_id", flat=True),
    )


def _audience(
    user_pk: int,
    *,
    reviewer: bool,
    memberships: Iterable[tuple[int, str]],
    named: Iterable[int],
) -> Audience:
    """The rule of a signed-in person who is not an admin: their teams (reviewing those of
    their role, and all of them with the review permission) and the projects naming them."""
    memberships = list(memberships)
    return Audience(
        user_pk=user_pk,
        teams=frozenset(team for team, _ in memberships),
        reviews=frozenset(
            team for team, role in memberships if reviewer or role == TeamRole.REVIEWER
        ),
        reviews_open=reviewer,
        named=frozenset(named),
    )


def _review_permission() -> Q:
    """Users who hold the review permission, themselves or by a group."""
    app_label, codename = REVIEW_PERMISSION.split(".")
    perm = Permission.objects.filter(codename=codename, content_type__app_label=app_label)
    user = get_user_model()
    by_user = user.user_permissions.through.objects.filter(
        user_id=OuterRef("pk"), permission__in=perm
    )
    by_group = user.groups.through.objects.filter(
        user_id=OuterRef("pk"), group__permissions__in=perm
    )
    return Q(Exists(by_user)) | Q(Exists(by_group))


def review_permission_holders() -> set[int]:
    """Active users with the review permission (superusers aside: they are admins)."""
    users = get_user_model().objects.filter(_review_permission(), is_active=True)
    return set(users.filter(is_superuser=False).values_list("pk", flat=True))


def audiences_of(user_pks: Iterable[int]) -> dict[int, Audience]:
    """The rule for many users at once (notifications, live updates): three queries however
    many. An inactive or unknown user sees nothing."""
    pks = sorted(set(user_pks))
    if not pks:
        return {}
    users = get_user_model().objects.filter(pk__in=pks, is_active=True)
    found = {
        pk: (superuser, reviewer)
        for pk, superuser, reviewer in users.annotate(
            reviewer=ExpressionWrapper(_review_permission(), output_field=BooleanField())
        ).values_list("pk", "is_superuser", "reviewer")
    }
    memberships: dict[int, list[tuple[int, str]]] = {pk: [] for pk in found}
    rows = Membership.objects.filter(user_id__in=list(found))
    for user_pk, team_pk, role in rows.values_list("user_id", "team_id", "role"):
        memberships[user_pk].append((team_pk, role))
    named: dict[int, list[int]] = {pk: [] for pk in found}
    names = Project.reviewers.through.objects.filter(user_id__in=list(found))
    for user_pk, project_pk in names.values_list("user_id", "project_id"):
        named[user_pk].append(project_pk)
    audiences = {}
    for pk in pks:
        if pk not in found:
            audiences[pk] = NOBODY
        elif found[pk][0]:
            audiences[pk] = EVERYONE
        else:
            audiences[pk] = _audience(
                pk, reviewer=bool(found[pk][1]), memberships=memberships[pk], named=named[pk]
            )
    return audiences


def visible_sessions(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Session]:
    """The sessions `user` sees: every page that names a session finds it here (one that
    is not is not found, as if it did not exist)."""
    return Session.objects.filter(audience_of(user).sees())


def visible_projects(audience: Audience) -> QuerySet[Project]:
    """The projects whose sessions the audience sees: those of no team, of their teams, and
    those they have sessions of themselves."""
    if audience.everything:
        return Project.objects.all()
    if audience.nothing:
        return Project.objects.none()
    own = Session.objects.filter(owner_id=audience.user_pk, project_record__isnull=False)
    return Project.objects.filter(
        Q(team__isnull=True) | Q(team__in=sorted(audience.teams))
        | Q(pk__in=own.values("project_record_id"))
    )  # fmt: skip


def sessions_sql(user: AbstractBaseUser) -> tuple[str, tuple]:
    """The sessions `user` may see, as a condition on the session table `s` with its
    parameters, for raw queries (search); ("", ()) is every session."""
    return audience_of(user).sessions_sql("s")
