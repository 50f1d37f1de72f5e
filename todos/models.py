from __future__ import annotations

from django.db import models
from django.utils import timezone

from dashboard.models import IDEMPOTENCY_KEY_LENGTH, Agent


class TodoStatus(models.TextChoices):
    PENDING = "pending", "pending"
    IN_PROGRESS = "in_progress", "in progress"
    COMPLETED = "completed", "completed"
    CANCELLED = "cancelled", "cancelled"


class TodoPriority(models.TextChoices):
    HIGH = "high", "high"
    MEDIUM = "medium", "medium"
    LOW = "low", "low"


class Todo(models.Model):
    """One item of an agent's current list, in the agent's own order."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="todos")
    position = models.PositiveIntegerField()
    content = models.TextField()
    active_form = models.TextField(blank=True)
    status = models.CharField(max_length=20, choices=TodoStatus.choices)
    priority = models.CharField(max_length=10, choices=TodoPriority.choices, blank=True)
    external_id = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["agent", "position"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "position"], name="unique_todo_position")
        ]

    def __str__(self) -> str:
        return f"[{self.status}] {self.content}"

    @property
    def running_text(self) -> str:
        """What the spinner shows while the item runs: "Running tests…"."""
        text = (self.active_form or self.content).rstrip()
        return text if text.endswith(("…", "...")) else f"{text}…"


class TodoRevision(models.Model):
    """Every accepted write: the complete list before and after it. Immutable, but for the
    spinner texts of its newest list, which a later hook of the same change may complete
    (`todo_list_amend`)."""

    class Source(models.TextChoices):
        API = "api", "HTTP API"
        SOCKET = "socket", "agent socket"
        HOOK = "hook", "Claude Code hook"
        IMPORT = "import", "transcript import"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    old_todos = models.JSONField(default=list)
    new_todos = models.JSONField(default=list)
    source = models.CharField(max_length=10, choices=Source.choices)
    # NULL, not "", when absent: the unique constraint must ignore writes without a key.
    idempotency_key = models.CharField(max_length=IDEMPOTENCY_KEY_LENGTH, null=True, blank=True)  # noqa: DJ001
    request_hash = models.CharField(max_length=64, blank=True)
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["agent", "number"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "number"], name="unique_revision_number"),
            models.UniqueConstraint(
                fields=["agent", "idempotency_key"],
                condition=models.Q(idempotency_key__isnull=False),
                name="unique_revision_idempotency_key",
            ),
        ]

    def __str__(self) -> str:
        return f"revision {self.number} of {self.agent}"


class AgentTracking(models.Model):
    """What the enforcer knows of an agent between hooks: step counters and current flags."""

    agent = models.OneToOneField(Agent, on_delete=models.CASCADE, related_name="tracking")
    steps_since_write = models.PositiveIntegerField(default=0)
    steps_since_reminder = models.PositiveIntegerField(default=0)
    # Set by PreCompact; the next SessionStart(compact) or prompt re-injects the list.
    compaction_pending = models.BooleanField(default=False)
    consecutive_continuations = models.PositiveIntegerField(default=0)
    # The todo revision the last continuation was sent at: never ask twice at the same state.
    continued_at_revision = models.PositiveIntegerField(null=True, blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    # Discipline flags that hold now, as codes (see todos.enforcer.FLAGS).
    current_flags = models.JSONField(default=list)
    # Conditions of the current list (e.g. nothing in progress) that become flags once the
    # agent works on with the list so, not while a burst of todo calls passes through them.
    held_flags = models.JSONField(default=list)
    seen_step_keys = models.JSONField(default=list)

    def __str__(self) -> str:
        return f"tracking of {self.agent}"


class Continuation(models.Model):
    """One Stop that the enforcer considered: a countdown, then continue, cancel or skip."""

    class Status(models.TextChoices):
        COUNTING = "counting", "counting down"
        SENT = "sent", "continued"
        CANCELLED = "cancelled", "cancelled"
        SKIPPED = "skipped", "let it stop"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="continuations")
    status = models.CharField(max_length=10, choices=Status.choices)
    reason = models.CharField(max_length=300, blank=True)
    prompt = models.TextField(blank=True)
    unfinished = models.PositiveIntegerField(default=0)
    todo_revision = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    deadline = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["agent", "status"])]

    def __str__(self) -> str:
        return f"continuation of {self.agent}: {self.status}"

    @property
    def seconds_left(self) -> float:
        if self.deadline is None:
            return 0.0
        return max(0.0, (self.deadline - timezone.now()).total_seconds())


class EnforcerEvent(models.Model):
    """A line of the session history besides the todo writes: what the enforcer did or noticed
    (reminders, flags, outcomes), and what the agent's client reported of the session itself
    (a refusal of auto mode, a new folder, a new permission mode, an idle teammate)."""

    class Kind(models.TextChoices):
        REMINDER = "reminder", "reminder"
        CONTINUATION = "continuation", "continuation"
        FLAG = "flag", "discipline flag"
        SESSION = "session", "session"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="enforcer_events")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    code = models.CharField(max_length=40, blank=True)
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.kind} for {self.agent}: {self.text[:40]}"
