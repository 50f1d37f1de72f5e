"""A sign-in through the identity provider, as one write: the person's account found by the
provider's subject (or made), their name brought up to date, and their team memberships and
admin role set from the groups claim, each change in the audit log.

How groups map (README, "Single sign-on"): a group named like a team (any case) makes the
person a member of it; a group `<team>:reviewers` a reviewer; the group named by
AGENTBOARD_OIDC_ADMIN_GROUP (when set) an admin, and its absence takes that away. The provider
manages the memberships it gave: they go when the group goes, at the next sign-in. A
membership an admin gave by hand is the admin's: the provider neither changes nor removes it.
Groups that name no team are ignored (admins make teams; a group does not).

Who is who: the provider's subject, never an e-mail address. Only with
AGENTBOARD_OIDC_LINK_BY_EMAIL does a first sign-in take over an account made before single
sign-on, and only the one account that has the verified address; when more than one account
has it, or the one that has it is someone else's at a provider, the sign-in is refused (it
cannot tell which account is theirs, and a second account would split their history).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.db.models.functions import Lower
from django.utils import timezone

from dashboard.core.audit import Via, audit, via_request
from dashboard.core.changes import Changes, Outcome
from dashboard.core.errors import ServiceError
from dashboard.models import AuditAction, Membership, Team, TeamRole
from dashboard.sso.models import GroupMembership, Identity

logger = logging.getLogger(__name__)

SURFACE = "single sign-on"
REVIEWERS_SUFFIX = ":reviewers"
# More groups than this in one claim are not read: a person in thousands of groups still signs
# in in a bounded number of queries.
MAX_GROUPS = 200
GROUP_CHARS = Team._meta.get_field("name").max_length + len(REVIEWERS_SUFFIX)
_USERNAME_CHARS = re.compile(r"[^\w.@+-]")


class SignInRefused(ServiceError):
    """A sign-in through the provider that cannot complete: `message` is the one sentence the
    person reads (what went wrong, what to do), `why` what the audit log keeps."""

    def __init__(self, message: str, *, why: str) -> None:
        super().__init__("sign_in_refused", message, status=400)
        self.why = why


def plain_text(value: object, limit: int) -> str:
    """A claim as plain text of one line: control characters dropped, cut to `limit`."""
    if not isinstance(value, str):
        return ""
    kept = "".join(ch for ch in value if unicodedata.category(ch)[0] != "C")
    return " ".join(kept.split())[:limit]


@dataclass(frozen=True)
class Claims:
    """What Agentboard reads of a person's claims, as plain, bounded text."""

    subject: str
    username: str
    email: str
    email_verified: bool
    first_name: str
    last_name: str
    groups: tuple[str, ...]

    @classmethod
    def of(cls, claims: dict[str, Any]) -> Claims:
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject or len(subject) > 255:
            raise ValueError("The ID token's sub claim is missing or longer than 255 characters.")
        given = plain_text(claims.get("given_name"), 150)
        family = plain_text(claims.get("family_name"), 150)
        if not (given or family):
            given, _, family = plain_text(claims.get("name"), 300).partition(" ")
        return cls(
            subject=subject,
            username=plain_text(claims.get("preferred_username"), 150),
            email=plain_text(claims.get("email"), 254),
            # Some providers send it as the string "true".
            email_verified=claims.get("email_verified") in (True, "true"),
            first_name=given[:150],
            last_name=family[:150],
            groups=_groups(claims.get(settings.AGENTBOARD_OIDC_GROUPS_CLAIM)),
        )


def _groups(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        logger.warning("The groups claim is not a list of names; no groups were read.")
        return ()
    groups: list[str] = []
    for item in value[:MAX_GROUPS]:
        name = plain_text(item, GROUP_CHARS + 1)
        if len(name) > GROUP_CHARS:
            logger.warning("Ignored a group whose name is longer than %d characters.", GROUP_CHARS)
        elif name:
            groups.append(name)
    if len(value) > MAX_GROUPS:
        logger.warning("Read the first %d of %d groups of the claim.", MAX_GROUPS, len(value))
    return tuple(groups)


def address_of(request: Any) -> str | None:
    return via_request(request, SURFACE).address if request is not None else None


def _free_username(claims: Claims) -> str:
    """A new account's user name: the provider's preferred one (else the e-mail's, else the
    subject's), with a number added when a local account has it already."""
    base = claims.username or claims.email.partition("@")[0] or claims.subject
    base = _USERNAME_CHARS.sub("-", base)[:140] or "sso"
    users = get_user_model().objects
    name, number = base, 1
    while users.filter(username__iexact=name).exists():
        number += 1
        name = f"{base}-{number}"
    return name


def _account(issuer: str, claims: Claims) -> tuple[AbstractUser, Identity]:
    identity = (
        Identity.objects.select_for_update()
        .select_related("user")
        .filter(issuer=issuer, subject=claims.subject)
        .first()
    )
    if identity is not None:
        return identity.user, identity
    user = _account_with_address(claims) if settings.AGENTBOARD_OIDC_LINK_BY_EMAIL else None
    if user is None:
        user = get_user_model().objects.create_user(
            username=_free_username(claims), email=claims.email
        )
        user.set_unusable_password()
        user.save(update_fields=["password"])
    identity = Identity.objects.create(user=user, issuer=issuer, subject=claims.subject)
    return user, identity


def _account_with_address(claims: Claims) -> AbstractUser | None:
    """The account made before single sign-on that this person's first sign-in takes over: the
    only account with the address the provider says it verified. None when no account has it."""
    if not (claims.email and claims.email_verified):
        return None
    matches = list(get_user_model().objects.filter(email__iexact=claims.email).order_by("pk")[:3])
    if not matches:
        return None
    if len(matches) > 1:
        count = "more than two" if len(matches) > 2 else "two"
        raise SignInRefused(
            f"More than one Agentboard account has the address {claims.email}, so the one that "
            "is yours is not known and nobody was signed in; ask an admin to leave the address "
            "on your account only, then sign in again.",
            why=f"Not linked by e-mail: {count} accounts have the address {claims.email}.",
        )
    (match,) = matches
    if Identity.objects.filter(user=match).exists():
        raise SignInRefused(
            f"The Agentboard account with the address {claims.email} belongs to someone else "
            "who signs in with the provider, so nobody was signed in; ask an admin to change the "
            "address on that account, then sign in again.",
            why=f"Not linked by e-mail: {match.get_username()}, the account with the address "
            f"{claims.email}, is another subject's.",
        )
    return match


def _teams_named(groups: tuple[str, ...]) -> dict[str, Team]:
    names = {group.lower() for group in groups}
    names |= {name.removesuffix(REVIEWERS_SUFFIX) for name in names}
    teams = Team.objects.annotate(lowered=Lower("name")).filter(lowered__in=sorted(names))
    return {team.name.lower(): team for team in teams}


def _wanted_roles(groups: tuple[str, ...]) -> dict[int, str]:
    teams = _teams_named(groups)
    wanted: dict[int, str] = {}
    for group in (group.lower() for group in groups):
        if group.endswith(REVIEWERS_SUFFIX) and group.removesuffix(REVIEWERS_SUFFIX) in teams:
            wanted[teams[group.removesuffix(REVIEWERS_SUFFIX)].pk] = TeamRole.REVIEWER
        elif group in teams:
            wanted.setdefault(teams[group].pk, TeamRole.MEMBER)
    return wanted


def _sync_memberships(
    user: AbstractUser, identity: Identity, groups: tuple[str, ...], via: Via, rule: str
) -> bool:
    wanted = _wanted_roles(groups)
    granted = set(identity.memberships.values_list("team_id", flat=True))
    held = {
        membership.team_id: membership
        for membership in Membership.objects.select_for_update()
        .select_related("team")
        .filter(user=user)
    }
    teams = Team.objects.in_bulk(set(wanted) | granted)
    changed = False
    for team_pk, role in sorted(wanted.items()):
        membership = held.get(team_pk)
        role_name = TeamRole(role).label.lower()
        if membership is None:
            Membership.objects.create(team_id=team_pk, user=user, role=role)
            GroupMembership.objects.get_or_create(identity=identity, team_id=team_pk)
            audit(
                AuditAction.MEMBER_ADDED, actor=user, rule=rule, via=via, team=teams.get(team_pk),
                about=f"team:{team_pk}",
                summary=f"{user.get_username()} joined {teams[team_pk].name} as a {role_name}.",
            )  # fmt: skip
            changed = True
        elif team_pk in granted and membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
            audit(
                AuditAction.MEMBER_CHANGED, actor=user, rule=rule, via=via, team=teams.get(team_pk),
                about=f"team:{team_pk}",
                summary=f"{user.get_username()} is a {role_name} of {teams[team_pk].name} now.",
            )  # fmt: skip
            changed = True
    for team_pk in sorted(granted - set(wanted)):
        membership = held.get(team_pk)
        GroupMembership.objects.filter(identity=identity, team_id=team_pk).delete()
        if membership is None:
            continue
        membership.delete()
        team = teams.get(team_pk)
        audit(
            AuditAction.MEMBER_REMOVED, actor=user, rule=rule, via=via, team=team,
            about=f"team:{team_pk}",
            summary=f"{user.get_username()} left {team.name if team else 'a team'}: not in its "
            "group any more.",
        )  # fmt: skip
        changed = True
    return changed


def _sync_admin(user: AbstractUser, groups: tuple[str, ...], via: Via, rule: str) -> bool:
    admin_group = settings.AGENTBOARD_OIDC_ADMIN_GROUP.lower()
    if not admin_group:
        return False
    admin = admin_group in {group.lower() for group in groups}
    if user.is_superuser == admin and user.is_staff == admin:
        return False
    user.is_superuser = user.is_staff = admin
    user.save(update_fields=["is_superuser", "is_staff"])
    audit(
        AuditAction.ROLE_CHANGED, actor=user, rule=rule, via=via, about=f"user:{user.pk}",
        summary=f"{user.get_username()} is {'an admin' if admin else 'no longer an admin'}.",
    )  # fmt: skip
    return True


def sso_sign_in(*, issuer: str, claims: Claims, address: str | None) -> Outcome[AbstractUser]:
    """The account of the person the provider vouched for, brought up to date."""
    user, identity = _account(issuer, claims)
    if claims.first_name or claims.last_name:
        user.first_name, user.last_name = claims.first_name, claims.last_name
    if claims.email and claims.email_verified:
        user.email = claims.email
    user.save(update_fields=["first_name", "last_name", "email"])
    identity.signed_in_at = timezone.now()
    identity.save(update_fields=["signed_in_at"])
    if not user.is_active:
        return Outcome(user, Changes())
    via = Via(surface=SURFACE, address=address)
    rule = f"groups at {issuer}"
    changed = _sync_memberships(user, identity, claims.groups, via, rule)
    changed |= _sync_admin(user, claims.groups, via, rule)
    return Outcome(user, Changes(audiences_changed=changed))
