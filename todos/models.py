from __future__ import annotations

from django.db import models
from django.utils import timezone

from dashboard.models import Agent


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
    """Every accepted write, immutable: the complete list before and after it."""

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
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
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
