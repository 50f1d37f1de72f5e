from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from dashboard.models import IDEMPOTENCY_KEY_LENGTH, Agent, Session
from planmode.markdown import plain_title

TITLE_LENGTH = 90


class PlanStatus(models.TextChoices):
    PENDING = "pending", "waiting"
    APPROVED = "approved", "approved"
    REJECTED = "rejected", "rejected"
    WITHDRAWN = "withdrawn", "withdrawn"
    EXPIRED = "expired", "expired"
    # The developer answered Claude Code's own prompt first and the agent moved on.
    ANSWERED_IN_TERMINAL = "answered_in_terminal", "answered in the terminal"


class ModeAfter(models.TextChoices):
    """The permission mode a session switches to when its plan is approved."""

    DEFAULT = "default", "default"
    ACCEPT_EDITS = "acceptEdits", "acceptEdits"


class Plan(models.Model):
    """One submission of a plan (ExitPlanMode). Revisions count per agent: a resubmission after
    a rejection is the next revision of the same plan thread."""

    class Source(models.TextChoices):
        API = "api", "HTTP API"
        SOCKET = "socket", "agent socket"
        HOOK = "hook", "Claude Code hook"
        IMPORT = "import", "transcript import"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="plans")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="plans")
    revision = models.PositiveIntegerField()
    markdown = models.TextField()
    plan_file_path = models.CharField(max_length=1000, blank=True)
    status = models.CharField(
        max_length=24, choices=PlanStatus.choices, default=PlanStatus.PENDING, db_index=True
    )
    # None until approved, as agents read it (`"mode_after": null`).
    mode_after = models.CharField(  # noqa: DJ001
        max_length=20, choices=ModeAfter.choices, null=True, blank=True
    )
    # The reviewer's reason for a rejection, sent back to the agent.
    feedback = models.TextField(blank=True)
    # Optional words from the reviewer on an approval.
    notes = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(default=timezone.now)
    # When an agent socket last began waiting on it (a reconnecting `agentboard hook`).
    watched_at = models.DateTimeField(null=True, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices)
    # Until when a held hook waits for the answer; None when nobody holds it (an API plan its
    # agent polls). Past it no answer can reach the agent, so none is taken; one still pending
    # a little later lost the server process that held it, and any process expires it.
    held_until = models.DateTimeField(null=True, blank=True)
    # Why it ended, when its status alone does not say (an expiry after its server stopped).
    end_reason = models.CharField(max_length=200, blank=True)
    # A person's decision made in the browser, held back for the undo window: who, and what
    # they answered. The row stays pending (the agent still waits) until `sends_at`, when the
    # decision is made as it would have been at once; an undo clears both.
    staged_answer = models.JSONField(null=True, blank=True)
    sends_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # None when absent, so the unique constraint only covers keys that were sent.
    idempotency_key = models.CharField(max_length=IDEMPOTENCY_KEY_LENGTH, null=True, blank=True)  # noqa: DJ001
    request_hash = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["submitted_at", "pk"]
        permissions = [("review_plan", "Can approve or reject plans")]
        # The latest decisions (the queue's, and the pages of every decision), read backwards
        # on it: after a year, not a sort of every plan.
        indexes = [models.Index(fields=["decided_at", "id"], name="plan_decided_time")]
        constraints = [
            models.UniqueConstraint(fields=["agent", "revision"], name="unique_plan_revision"),
            models.UniqueConstraint(
                fields=["agent", "idempotency_key"],
                condition=models.Q(idempotency_key__isnull=False),
                name="unique_plan_idempotency_key",
            ),
        ]

    def __str__(self) -> str:
        return f"plan rev {self.revision} of {self.agent} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == PlanStatus.PENDING

    @property
    def is_staged(self) -> bool:
        """Decided by a person, not yet sent: the undo window is open."""
        return self.is_pending and self.staged_answer is not None

    @property
    def title(self) -> str:
        """The first heading, or else the first line, as plain text (markdown stripped), for
        lists, headings and the tab title."""
        lines = [line.strip() for line in self.markdown.splitlines() if line.strip()]
        heading = next((line for line in lines if line.startswith("#")), None)
        text = plain_title(heading or (lines[0] if lines else "")) or "Untitled plan"
        return text if len(text) <= TITLE_LENGTH else text[: TITLE_LENGTH - 1] + "…"


class DecisionRecord(models.Model):
    """A decision is a record: written once, never changed (nor deleted in the admin)."""

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ValueError("A decision is a record: it is written once and never changed.")
        super().save(*args, **kwargs)


class Decision(DecisionRecord):
    """How a plan revision ended: who, when, what they said. Written once, never edited."""

    plan = models.OneToOneField(Plan, on_delete=models.CASCADE, related_name="decision")
    outcome = models.CharField(max_length=24, choices=PlanStatus.choices)
    mode_after = models.CharField(  # noqa: DJ001
        max_length=20, choices=ModeAfter.choices, null=True, blank=True
    )
    feedback = models.TextField(blank=True)
    notes = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="plan_decisions",
    )
    # Kept as text too, so the history still says who decided after an account is deleted.
    decided_by_name = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-decided_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.outcome} {self.plan}"


# --- permission requests: any tool an agent asks to use -----------------------------------------


class RequestStatus(models.TextChoices):
    PENDING = "pending", "waiting"
    ALLOWED = "allowed", "allowed"
    DENIED = "denied", "denied"
    EXPIRED = "expired", "expired"
    # The developer answered Claude Code's own prompt first and the agent moved on.
    ANSWERED_IN_TERMINAL = "answered_in_terminal", "answered in the terminal"


class RuleBehavior(models.TextChoices):
    ALLOW = "allow", "allow"
    DENY = "deny", "deny"


class RuleMode(models.TextChoices):
    ACTIVE = "active", "active"
    # Decides nothing: records what it would have answered beside what a person answered.
    SHADOW = "shadow", "shadow"


class TeamRule(models.Model):
    """A rule the server applies itself: a matching permission request is answered at once.

    `rule` is written as Claude Code writes permission rules: `Bash(git status*)`, `Read(*)`,
    `WebFetch(domain:docs.*)`, `mcp__github`. An empty `project` applies to every project.
    A shadow rule, or one past its `expires_at`, decides nothing."""

    project = models.CharField(max_length=200, blank=True, db_index=True)
    rule = models.CharField(max_length=500)
    behavior = models.CharField(max_length=10, choices=RuleBehavior.choices)
    mode = models.CharField(max_length=10, choices=RuleMode.choices, default=RuleMode.ACTIVE)
    # What the agent is told when the rule denies; blank: the server's own words.
    message = models.TextField(blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    # A reviewer confirmed that this allow rule may allow the dangerous shape its pattern names
    # (`planmode.rules.dangerous_shape`); without it such a request waits for a person.
    allows_dangerous = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # Set by every save: each server process's parsed rules are read again when it moves
    # (`planmode.rulebook`).
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["project", "behavior", "rule", "pk"]

    def __str__(self) -> str:
        return f"{self.behavior} {self.rule} in {self.project or 'every project'}"

    def is_expired(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())

    @property
    def is_shadow(self) -> bool:
        return self.mode == RuleMode.SHADOW


class PermissionRequest(models.Model):
    """One PermissionRequest of an agent for a tool, held until someone (or a rule) decides."""

    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="permission_requests"
    )
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="permission_requests")
    tool_name = models.CharField(max_length=200)
    # Exactly as received: an allow hands it back to Claude Code as `updatedInput`.
    tool_input = models.JSONField(default=dict)
    # sha256 of the tool name and input: identical requests (across agents) share it.
    input_key = models.CharField(max_length=64, db_index=True)
    # Claude Code's `permission_suggestions`: the "always allow" choices it would offer.
    suggestions = models.JSONField(default=list)
    permission_mode = models.CharField(max_length=20, blank=True)
    # Not asked by the agent: auto mode's classifier refused the call (Claude Code's
    # PermissionDenied), and a person may let it through once (the hook answers `retry`).
    refused_by_auto_mode = models.BooleanField(default=False)
    # A refusal allowed once: when the call's next PreToolUse, in whichever server process it
    # arrived, used the allowance up (`planmode.allow_once`). None while it is unused.
    once_used_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(
        max_length=24, choices=RequestStatus.choices, default=RequestStatus.PENDING, db_index=True
    )
    requested_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    rule = models.ForeignKey(
        TeamRule, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # What the agent is told: the deny message, whether to stop, the rules to remember.
    message = models.TextField(blank=True)
    interrupt = models.BooleanField(default=False)
    updated_permissions = models.JSONField(default=list)
    # When the model was handed the message of a "deny and stop" with the session's next
    # prompt: Claude Code drops a denial's message when it interrupts the agent.
    message_told_at = models.DateTimeField(null=True, blank=True)
    # Until when a held hook waits for the answer; None when nobody holds it (an API plan its
    # agent polls). Past it no answer can reach the agent, so none is taken; one still pending
    # a little later lost the server process that held it, and any process expires it.
    held_until = models.DateTimeField(null=True, blank=True)
    # Why it ended, when its status alone does not say (an expiry after its server stopped).
    end_reason = models.CharField(max_length=200, blank=True)
    # A person's decision made in the browser, held back for the undo window: who, and what
    # they answered. The row stays pending (the agent still waits) until `sends_at`, when the
    # decision is made as it would have been at once; an undo clears both.
    staged_answer = models.JSONField(null=True, blank=True)
    sends_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["requested_at", "pk"]
        # The latest decisions (the inbox's, and the pages of every decision), read backwards
        # on it: after a year, not a sort of every request.
        indexes = [models.Index(fields=["decided_at", "id"], name="request_decided_time")]

    def __str__(self) -> str:
        return f"{self.tool_name} request of {self.agent} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == RequestStatus.PENDING

    @property
    def is_staged(self) -> bool:
        """Answered by a person, not yet sent: the undo window is open."""
        return self.is_pending and self.staged_answer is not None


class PermissionDecision(DecisionRecord):
    """How a permission request ended: who or which rule, when, what. Written once."""

    request = models.OneToOneField(
        PermissionRequest, on_delete=models.CASCADE, related_name="decision"
    )
    outcome = models.CharField(max_length=24, choices=RequestStatus.choices)
    message = models.TextField(blank=True)
    interrupt = models.BooleanField(default=False)
    updated_permissions = models.JSONField(default=list)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="permission_decisions",
    )
    # Kept as text too, so the history still says who or what decided after a deletion.
    decided_by_name = models.CharField(max_length=150, blank=True)
    rule = models.ForeignKey(TeamRule, on_delete=models.SET_NULL, null=True, blank=True)
    rule_text = models.CharField(max_length=600, blank=True)
    decided_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-decided_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.outcome} {self.request}"


class RuleVerdict(models.Model):
    """What a shadow rule would have answered to a request it matched, beside what a person
    (or an active rule) did answer: its agreement so far."""

    rule = models.ForeignKey(TeamRule, on_delete=models.CASCADE, related_name="verdicts")
    request = models.ForeignKey(
        PermissionRequest, on_delete=models.CASCADE, related_name="rule_verdicts"
    )
    would = models.CharField(max_length=10, choices=RuleBehavior.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["rule", "request"], name="one_verdict_per_rule")
        ]

    def __str__(self) -> str:
        return f"rule {self.rule_id} would {self.would} request {self.request_id}"


class TerminalWait(models.Model):
    """An agent waiting for its developer in its own terminal (Claude Code's Notification
    hook): it cannot be answered from the board, only seen. Open until the agent moves on."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="terminal_waits")
    notification_type = models.CharField(max_length=100, blank=True)
    message = models.TextField(blank=True)
    since = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["since", "pk"]

    def __str__(self) -> str:
        return f"{self.agent} waiting in its terminal"


class Annotation(models.Model):
    """A reviewer's remark on a part of a plan: the text they selected and what to do with it.
    Editable while the plan waits; sent to the agent with the decision and kept with the plan
    (the next revision's page shows them beside what changed)."""

    class Kind(models.TextChoices):
        COMMENT = "comment", "comment"
        DELETE = "delete", "delete"
        REPLACE = "replace", "replace"

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="annotations")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.COMMENT)
    # The words of the rendered plan the reviewer selected.
    quote = models.TextField()
    comment = models.TextField(blank=True)
    # For "replace": the text to put instead.
    replacement = models.TextField(blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="plan_annotations",
    )
    author_name = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.kind} on plan {self.plan_id}: {self.quote[:40]}"


class PlanApproval(models.Model):
    """One reviewer's approval of a plan whose project asks for two: the plan waits until a
    second, different reviewer approves it too."""

    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="approvals")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    # Kept as it was when approving: the record outlives the account.
    reviewer_name = models.CharField(max_length=150)
    notes = models.TextField(blank=True)
    auto_accept = models.BooleanField(default=False)
    approved_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["approved_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "reviewer"], name="one_approval_per_reviewer")
        ]

    def __str__(self) -> str:
        return f"{self.reviewer_name} approved plan {self.plan_id}"


class InboxChoice(models.Model):
    """What a person asks to find in their inbox besides what agents ask for."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="inbox_choice"
    )
    # Calls auto mode's classifier refused, in the sessions they decide for: the agent waits
    # (as for a permission request) until someone allows it once or keeps it refused.
    auto_mode_refusals = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"inbox choices of {self.user}"
