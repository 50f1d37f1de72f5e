"""The audit log's one writer: what a person (or a team rule) decided, recorded in the
transaction of the change it records, with where it came from.

Services take a `Via` from the page or endpoint that acted (the surface and the client's
address) and call `audit()` inside their own transaction; if the change rolls back, so does
its entry. Entries are never changed or removed (`AuditEntry`, and the database's triggers), and
each is chained to the one before by its digest (`AuditEntry.chain`).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.http import HttpRequest

from dashboard.core.sql import Statement
from dashboard.models import AuditEntry, Project, Session, Team

# Room for a rejection's notes with every comment on the plan sent with it (each comment may
# have 5,000 characters); past it the entry says how much it left out.
SUMMARY_CHARS = 20_000


@dataclass(frozen=True)
class Via:
    """Where a person's action came from: the surface ("review page", "inbox", "board",
    "keyboard", "API", ...) and the client's address (as daphne gives it, the proxy's
    X-Forwarded-For only when AGENTBOARD_TRUSTED_PROXY is on)."""

    surface: str = ""
    address: str | None = None

    def as_data(self) -> dict[str, Any]:
        return {"surface": self.surface, "address": self.address}

    @classmethod
    def from_data(cls, data: object) -> Via:
        if not isinstance(data, dict):
            return cls()
        return cls(
            surface=str(data.get("surface") or "")[:40], address=_address(data.get("address"))
        )


def _address(value: object) -> str | None:
    try:
        return str(ipaddress.ip_address(str(value))) if value else None
    except ValueError:
        return None


def via_request(request: HttpRequest, surface: str) -> Via:
    return Via(surface=surface, address=_address(request.META.get("REMOTE_ADDR")))


def named(user: Any) -> str:
    """A person as a security reviewer reads them: "Sam Okafor (sam)", or the user name."""
    full = user.get_full_name().strip() if hasattr(user, "get_full_name") else ""
    return f"{full} ({user.get_username()})" if full else user.get_username()


_INSERT = """
    INSERT INTO dashboard_auditentry
        (at, actor_id, actor_name, rule, action, session_id, session_key, project_id,
         project_name, team_id, about, summary, surface, address, number, digest)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""


def audit_statement(
    action: str,
    *,
    actor: Any = None,
    via: Via | None = None,
    session: Session | None = None,
    about: str = "",
    summary: str = "",
) -> Statement:
    """`audit()` as one plain statement, for a write that sends its statements together in one
    round trip (`dashboard.core.sql.run_together`): a plan's decision. The entry is chained now,
    so nothing else may be added to the log before the statement runs."""
    entry = _entry(action, actor=actor, via=via, session=session, about=about, summary=summary)
    entry.chain()
    return (
        _INSERT,
        [
            connection.ops.adapt_datetimefield_value(entry.at),
            entry.actor_id, entry.actor_name, entry.rule, entry.action, entry.session_id,
            entry.session_key, entry.project_id, entry.project_name, entry.team_id, entry.about,
            entry.summary, entry.surface, entry.address, entry.number, entry.digest,
        ],
    )  # fmt: skip


def audit(
    action: str,
    *,
    actor: Any = None,
    rule: str = "",
    via: Via | None = None,
    session: Session | None = None,
    project: Project | None = None,
    team: Team | None = None,
    about: str = "",
    summary: str = "",
) -> AuditEntry:
    """Record one decision or change; the caller is inside the transaction of the change.

    What it concerns decides who reads it (`dashboard.audit.selectors.readable`): a session
    (its project and team), or else a project (its team, unless `team` is given), or a team.
    With none of them it is a rule of every project, or (when `about` names a token, device,
    webhook, user or group) a change to someone's account, which admins read."""
    entry = _entry(
        action, actor=actor, rule=rule, via=via, session=session, project=project, team=team,
        about=about, summary=summary,
    )  # fmt: skip
    entry.save()
    return entry


def _entry(
    action: str,
    *,
    actor: Any = None,
    rule: str = "",
    via: Via | None = None,
    session: Session | None = None,
    project: Project | None = None,
    team: Team | None = None,
    about: str = "",
    summary: str = "",
) -> AuditEntry:
    via = via or Via()
    if session is not None:
        project_pk, project_name = session.project_record_id, session.project
        team_pk = session.team_id
    else:
        project_pk = project.pk if project is not None else None
        project_name = project.name if project is not None else ""
        team_pk = team.pk if team is not None else project.team_id if project is not None else None
    return AuditEntry(
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_name=actor.get_username() if actor is not None else "",
        rule=rule[:300],
        action=action,
        session=session,
        session_key=session.session_id if session is not None else "",
        project_id=project_pk,
        project_name=project_name,
        team_id=team_pk,
        about=about[:60],
        summary=_bounded(summary),
        surface=via.surface[:40],
        address=via.address,
    )


def _bounded(summary: str) -> str:
    if len(summary) <= SUMMARY_CHARS:
        return summary
    return f"{summary[:SUMMARY_CHARS]}… ({len(summary) - SUMMARY_CHARS} more characters not kept)"
