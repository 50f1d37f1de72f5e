from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import secrets
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any

from django.conf import settings
from django.db import connection, models, transaction
from django.utils import timezone

# The longest Idempotency-Key (or tool_use_id, kept as one) a todo revision or a plan stores.
IDEMPOTENCY_KEY_LENGTH = 200


class PermissionMode(models.TextChoices):
    DEFAULT = "default", "default"
    ACCEPT_EDITS = "acceptEdits", "acceptEdits"
    PLAN = "plan", "plan"
    AUTO = "auto", "auto"
    DONT_ASK = "dontAsk", "dontAsk"
    BYPASS_PERMISSIONS = "bypassPermissions", "bypassPermissions"


class Client(models.TextChoices):
    """Which kind of agent reports a session: the board labels it and can filter by it."""

    CLAUDE_CODE = "claude_code", "Claude Code"
    OPENCODE = "opencode", "opencode"
    CODEX = "codex", "Codex"
    GEMINI = "gemini", "Gemini CLI"
    API = "api", "API"


class Team(models.Model):
    """People who work together and own projects: its members see its projects' sessions, its
    reviewers decide their plans and permission requests (`dashboard.core.visibility`)."""

    name = models.CharField(max_length=100, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "pk"]

    def __str__(self) -> str:
        return self.name


class TeamRole(models.TextChoices):
    MEMBER = "member", "Member"
    REVIEWER = "reviewer", "Reviewer"


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships"
    )
    role = models.CharField(max_length=10, choices=TeamRole.choices, default=TeamRole.MEMBER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="one_membership_per_team")
        ]
        ordering = ["team", "user"]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class Project(models.Model):
    """What a team works on: a repository (every spelling of its remote is one project), or
    for sessions outside one, a folder's name. Created the first time a session is seen in it
    (`dashboard.core.origin`); its name can be changed."""

    # "github.com/acme/shop", or "folder:shop".
    key = models.CharField(max_length=300, unique=True)
    name = models.CharField(max_length=200)
    # The normalized repository ("github.com/acme/shop"); empty for a folder's project.
    repository = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # The team that owns it: only its members (and each session's owner) see its sessions.
    # None: every signed-in person sees them. A team that owns projects cannot be deleted.
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, null=True, blank=True, related_name="projects"
    )
    # Its own reviewers, asked first (people who see it: its team's members): they decide its
    # plans and permission requests, are notified at once and find them at the top of their
    # inbox; everyone else who would be told is told after AGENTBOARD_REVIEW_FALLBACK_MINUTES.
    reviewers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="reviewed_projects"
    )
    # How many reviewers approve each plan: 1, or 2 different ones (the agent waits for both;
    # a rejection by either ends it).
    approvals_required = models.PositiveSmallIntegerField(
        default=1, choices=[(1, "One reviewer"), (2, "Two different reviewers")]
    )

    class Meta:
        ordering = ["name", "pk"]

    def __str__(self) -> str:
        return self.name


def project_of(*, project_name: str, cwd: str) -> str:
    """A session's project as its rows say it (`Session.project`): for queries that read
    only these two columns."""
    if project_name:
        return project_name
    if cwd:
        return PurePath(cwd).name or cwd
    return "unnamed project"


class Session(models.Model):
    """One agent session, e.g. one Claude Code conversation; created on first mention."""

    session_id = models.CharField(max_length=200, unique=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_sessions"
    )
    # The agent that reports it; "api" until an integration (a hook, a plugin) says which.
    client = models.CharField(max_length=20, choices=Client.choices, default=Client.API)
    cwd = models.CharField(max_length=1000, blank=True)
    # What the session is about: the first prompt, or else the title of its first plan.
    title = models.CharField(max_length=200, blank=True)
    # The git branch it works on, when a hook or a transcript says so.
    branch = models.CharField(max_length=200, blank=True)
    permission_mode = models.CharField(
        max_length=20, choices=PermissionMode.choices, default=PermissionMode.DEFAULT
    )
    started_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now, db_index=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # Ended by the server after AGENTBOARD_SESSION_IDLE_MINUTES without a word from its agents,
    # not by the agent's own SessionEnd; any later report brings it back.
    ended_quietly = models.BooleanField(default=False)
    # The lead can switch the continuation enforcer off for one session from the board.
    enforcer_enabled = models.BooleanField(default=True)
    # Another continuation enforcer that runs inside the agent (oh-my-opencode's), when its
    # plugin said so: Agentboard then never continues the session itself.
    other_enforcer = models.CharField(max_length=100, blank=True)
    # Where it runs, as its agent's side reports it (`dashboard.core.origin`): the repository
    # ("github.com/acme/shop") and the machine's host name; empty while unknown.
    repository = models.CharField(max_length=300, blank=True)
    host = models.CharField(max_length=255, blank=True)
    # Its project, and the project's name kept beside it (a rename updates both), so a list
    # of sessions names their projects without reading them.
    project_record = models.ForeignKey(
        Project, on_delete=models.SET_NULL, null=True, blank=True, related_name="sessions"
    )
    project_name = models.CharField(max_length=200, blank=True)
    # Its project's team, kept beside it (set with the project, changed with the project's
    # team), so that who may see it is a condition on this row alone.
    team = models.ForeignKey(
        Team, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-last_seen_at"]
        indexes = [
            # The running sessions, newest activity first (the overview, the idle sweep): a
            # handful among a year of ended ones, found without reading the others.
            models.Index(
                fields=["-last_seen_at"],
                condition=models.Q(ended_at__isnull=True),
                name="session_running_by_seen",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project} · {self.session_id}"

    @property
    def project(self) -> str:
        return project_of(project_name=self.project_name, cwd=self.cwd)

    @property
    def host_label(self) -> str:
        return self.host or "unknown machine"

    @property
    def short_id(self) -> str:
        return short_id(self.session_id, length=8)

    @property
    def display_title(self) -> str:
        return self.title or f"session {self.short_id}"

    @property
    def is_active(self) -> bool:
        return self.ended_at is None


class Agent(models.Model):
    """The main agent (agent_id == session_id) or one of its subagents."""

    class Status(models.TextChoices):
        RUNNING = "running", "running"
        STOPPED = "stopped", "stopped"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="agents")
    agent_id = models.CharField(max_length=200)
    agent_type = models.CharField(max_length=100, blank=True)
    parent = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="children"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)
    stopped_at = models.DateTimeField(null=True, blank=True)
    # When its turn ended (a Stop, opencode's idle session), until a prompt or a continuation
    # starts the next one; a step started since then supersedes it (`now_line`).
    turn_ended_at = models.DateTimeField(null=True, blank=True)
    # Number of the latest accepted TodoWrite (0 before the first one).
    todo_revision = models.PositiveIntegerField(default=0)
    # Size of the all-completed write that emptied the list, so the card can say "all done".
    cleared_total = models.PositiveIntegerField(default=0)
    # A plan of this agent may be waiting on a hook: its next event of other work says whether
    # the developer answered in the terminal first (planmode.services.plans_answered_elsewhere).
    awaiting_plan = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "agent_id"], name="unique_agent_per_session")
        ]
        ordering = ["started_at", "pk"]

    def __str__(self) -> str:
        return f"{self.label} in {self.session.session_id}"

    @property
    def is_main(self) -> bool:
        return self.agent_id == self.session.session_id

    @property
    def label(self) -> str:
        if self.is_main:
            return "main"
        return self.agent_type or "subagent"

    @property
    def short_id(self) -> str:
        return short_id(self.agent_id.removeprefix("agent-"))


HEX_ID = re.compile(r"^[0-9a-f]{8,}(-[0-9a-f]+)*$", re.IGNORECASE)
READABLE_ID_LENGTH = 16


def short_id(value: str, *, length: int = 6) -> str:
    """An id short enough to scan: the start of a random (hex, UUID) id, a readable id whole
    (never cut into a word fragment), a long readable one with an ellipsis."""
    if HEX_ID.match(value):
        return value[:length]
    if len(value) <= READABLE_ID_LENGTH:
        return value
    return value[: READABLE_ID_LENGTH - 1] + "…"


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class AgentTokenQuerySet(models.QuerySet["AgentToken"]):
    def active(self) -> AgentTokenQuerySet:
        return self.filter(revoked_at__isnull=True, owner__is_active=True)


class AgentToken(models.Model):
    """A bearer token agents authenticate with. Only its hash is stored."""

    PREFIX = "ab_"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_tokens"
    )
    label = models.CharField(max_length=100, blank=True)
    key_hash = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=12, help_text="The first characters, to recognise it.")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = AgentTokenQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.hint}… ({self.label or 'no label'}) of {self.owner}"

    @classmethod
    def issue(cls, *, owner: models.Model, label: str = "") -> tuple[AgentToken, str]:
        """Create a token and return it with the raw key, which is never stored."""
        raw = cls.PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(
            owner=owner, label=label, key_hash=hash_token(raw), hint=raw[:10]
        )
        return token, raw


class AuditAction(models.TextChoices):
    PLAN_APPROVED = "plan.approved", "approved a plan"
    PLAN_APPROVED_AUTO = "plan.approved_auto", "approved a plan, auto-accepting edits"
    PLAN_REJECTED = "plan.rejected", "rejected a plan"
    PLAN_APPROVAL = "plan.approval", "approved a plan (one of two approvals)"
    REQUEST_ALLOWED = "request.allowed", "allowed a tool"
    REQUEST_REMEMBERED = "request.remembered", "always allowed a tool (rule written)"
    REQUEST_DENIED = "request.denied", "denied a tool"
    REQUEST_STOPPED = "request.stopped", "denied a tool and stopped the agent"
    COUNTDOWN_CANCELLED = "countdown.cancelled", "cancelled a continuation countdown"
    RULE_ADDED = "rule.added", "added a team rule"
    RULE_CHANGED = "rule.changed", "changed a team rule"
    RULE_REMOVED = "rule.removed", "removed a team rule"
    TOKEN_CREATED = "token.created", "created an agent token"
    TOKEN_REVOKED = "token.revoked", "revoked an agent token"
    SIGNED_IN = "auth.signed_in", "signed in"
    SIGNED_OUT = "auth.signed_out", "signed out"
    SIGN_IN_FAILED = "auth.failed", "failed to sign in"
    LOCKED_OUT = "auth.locked_out", "was locked out"
    ROLE_CHANGED = "role.changed", "changed a person's role"
    TEAM_CREATED = "team.created", "created a team"
    TEAM_CHANGED = "team.changed", "changed a team"
    TEAM_REMOVED = "team.removed", "removed a team"
    MEMBER_ADDED = "team.member_added", "added a team member"
    MEMBER_CHANGED = "team.member_changed", "changed a team member's role"
    MEMBER_REMOVED = "team.member_removed", "removed a team member"
    PROJECT_CHANGED = "project.changed", "changed a project's settings"
    TARGET_ADDED = "notify.target_added", "added a notification target"
    TARGET_CHANGED = "notify.target_changed", "changed a notification target"
    TARGET_REMOVED = "notify.target_removed", "removed a notification target"
    BUDGET_CHANGED = "budget.changed", "set a budget"
    BUDGET_CONTINUED = "budget.continued", "let an over-budget session continue once"
    BUDGET_BLOCKED = "budget.blocked", "refused a tool call over budget"
    DECISION_UNDONE = "decision.undone", "took back a decision before it was sent"
    AGENT_MESSAGED = "agent.messaged", "sent an agent a message"
    AGENT_PAUSED = "agent.paused", "paused an agent"
    AGENT_RESUMED = "agent.resumed", "resumed an agent"
    AGENT_STOPPED = "agent.stopped", "stopped an agent"


# Taken by whoever appends to the audit log on PostgreSQL, until its transaction ends (any
# number, the same in every process).
AUDIT_CHAIN_LOCK = 0x41_55_44_49_54

# The database's time and the chain's last entry (none in an empty log): one row either way.
_AUDIT_HEAD = """
    SELECT {now}, head.number, head.at, head.digest
    FROM (SELECT 1 AS one) AS always
    LEFT JOIN (
        SELECT number, at, digest FROM dashboard_auditentry ORDER BY number DESC LIMIT 1
    ) AS head ON 1 = 1
"""


def _utc(moment: datetime | str) -> datetime:
    """A time as the database gave it (SQLite: naive UTC, as text from a plain statement)."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    if timezone.is_naive(moment):
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


class AuditQuerySet(models.QuerySet["AuditEntry"]):
    """Append-only: no entry is changed or removed (the database's triggers say so too)."""

    def update(self, **kwargs: Any) -> int:
        raise PermissionError("The audit log is append-only: entries are never changed.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise PermissionError("The audit log is append-only: entries are never removed.")


class AuditEntry(models.Model):
    """One thing a person (or a team rule) decided, written in the transaction of the change
    it records (`dashboard.core.audit`). Names are kept as they were: the record outlives
    accounts, sessions and projects."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    # Kept when what they point at is deleted (no constraint, nothing changed): the entry
    # says who and what by name too.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.DO_NOTHING,
        null=True,
        related_name="+",
        db_constraint=False,
    )
    actor_name = models.CharField(max_length=150, blank=True)
    # A team rule that decided, in its own words ("allow Bash(npm test *)").
    rule = models.CharField(max_length=300, blank=True)
    action = models.CharField(max_length=40, choices=AuditAction.choices)
    session = models.ForeignKey(
        Session, on_delete=models.DO_NOTHING, null=True, related_name="+", db_constraint=False
    )
    session_key = models.CharField(max_length=200, blank=True)
    project = models.ForeignKey(
        Project, on_delete=models.DO_NOTHING, null=True, related_name="+", db_constraint=False
    )
    project_name = models.CharField(max_length=200, blank=True)
    # Whose team saw it then (who may read the entry: its reviewers and admins).
    team = models.ForeignKey(
        Team, on_delete=models.DO_NOTHING, null=True, related_name="+", db_constraint=False
    )
    # What it was about: "plan:12", "request:40", "countdown:7".
    about = models.CharField(max_length=60, blank=True)
    # The plan's title, the command, the notes or feedback sent, the rule written.
    summary = models.TextField(blank=True)
    # Where it was done: "review page", "inbox", "board", "keyboard", "API"...
    surface = models.CharField(max_length=40, blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)
    # Its place in the chain (1, 2, ...) and the SHA-256 of the entry before's digest and its
    # own content (`chain()`): an entry changed, removed or slipped in breaks every digest after
    # it (`python manage.py audit verify`).
    number = models.PositiveBigIntegerField(unique=True)
    digest = models.CharField(max_length=64)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["team", "at"], name="audit_team_at")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_name or self.rule}: {self.action}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise PermissionError("The audit log is append-only: entries are never changed.")
        with transaction.atomic(savepoint=False):
            if self.number is None:
                self.chain()
            super().save(*args, **kwargs)

    def chain(self) -> None:
        """Make this entry the chain's next: its number, the database's time (never before the
        last entry's, whatever any server's clock says) and its digest. Inside the transaction
        that inserts it: on PostgreSQL a transaction-wide lock keeps appends one after another
        until it ends, across every server process; SQLite's one writer does already."""
        if not connection.in_atomic_block:
            raise RuntimeError("An audit entry is chained inside the transaction that adds it.")
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                # One round trip: the head is read after the lock is taken (its own statement,
                # so it sees what the lock's last holder committed).
                with connection.wrap_database_errors, connection.connection.pipeline():
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [AUDIT_CHAIN_LOCK])
                    cursor.execute(_AUDIT_HEAD.format(now="clock_timestamp()"))
            else:
                cursor.execute(_AUDIT_HEAD.format(now="strftime('%Y-%m-%d %H:%M:%f', 'now')"))
            now, number, at, previous = cursor.fetchone()
        now = _utc(now)
        self.at = max(now, _utc(at)) if at is not None else now
        self.number = (number or 0) + 1
        self.digest = self.digest_after(previous or "")

    def digest_after(self, previous: str) -> str:
        return audit_digest(self, previous)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise PermissionError("The audit log is append-only: entries are never removed.")


def audit_digest(entry: Any, previous: str) -> str:
    """SHA-256 of the previous entry's digest (empty for the first) and an entry's content, in
    a canonical form: what `audit verify` recomputes."""
    content = [
        entry.number, _utc(entry.at).isoformat(timespec="microseconds"), entry.actor_id,
        entry.actor_name, entry.rule, entry.action, entry.session_id, entry.session_key,
        entry.project_id, entry.project_name, entry.team_id, entry.about, entry.summary,
        entry.surface, str(ipaddress.ip_address(entry.address)) if entry.address else None,
    ]  # fmt: skip
    canonical = json.dumps(content, separators=(",", ":"))
    return hashlib.sha256(f"{previous}\n{canonical}".encode()).hexdigest()
