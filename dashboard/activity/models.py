from __future__ import annotations

from datetime import datetime

from django.db import models
from django.utils import timezone

from dashboard.models import IDEMPOTENCY_KEY_LENGTH, Agent, Session

SUMMARY_CHARS = 300
DETAIL_CHARS = 100


class StepOutcome(models.TextChoices):
    RUNNING = "running", "running"
    OK = "ok", "ok"
    FAILED = "failed", "failed"
    DENIED = "denied", "denied"
    INTERRUPTED = "interrupted", "interrupted"


OUTCOME_WORDS = {
    StepOutcome.RUNNING: "running",
    StepOutcome.OK: "done",
    StepOutcome.FAILED: "failed",
    StepOutcome.DENIED: "denied",
    StepOutcome.INTERRUPTED: "interrupted",
}


def duration_text(seconds: float) -> str:
    """ "0.4 s", "12 s", "3 min 5 s", "1 h 12 min"."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, rest = divmod(whole // 60, 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"


class Step(models.Model):
    """One tool call of an agent, from its start (or, when only its end was reported, from its
    end) to its end. Append-only apart from its own end; pruned by age (`prune_activity`)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="steps")
    # The agent's session, kept on the step so a session's activity is read by one index.
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="steps")
    # The agent's own id of the call (Claude Code's and Codex's tool_use_id, opencode's callID).
    tool_use_id = models.CharField(max_length=IDEMPOTENCY_KEY_LENGTH)
    tool_name = models.CharField(max_length=200)
    # What a person reads: the command, the file, the URL, "server · tool" (`summaries`).
    summary = models.CharField(max_length=SUMMARY_CHARS, blank=True)
    # Beside it: "+12 -3" for an edit, the key argument of an MCP tool, a subagent's type.
    detail = models.CharField(max_length=DETAIL_CHARS, blank=True)
    # The tool and its whole input, hashed: the same call made again has the same hash.
    input_hash = models.CharField(max_length=32, blank=True)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(
        max_length=12, choices=StepOutcome.choices, default=StepOutcome.RUNNING
    )
    # A failed call's error, its first line.
    error = models.CharField(max_length=SUMMARY_CHARS, blank=True)
    # What it waited on a person for, as "permission:<id>" or "plan:<id>" (set by planmode).
    waited_on = models.CharField(max_length=40, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "tool_use_id"], name="one_step_per_tool_call")
        ]
        indexes = [
            # The latest step of an agent and of a session; a session's activity in order.
            models.Index(fields=["agent", "started_at", "id"], name="step_agent_time"),
            models.Index(fields=["session", "started_at", "id"], name="step_session_time"),
            # Pruning by age.
            models.Index(fields=["started_at"], name="step_time"),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} {self.summary}"[:80]

    @property
    def duration_seconds(self) -> float | None:
        if self.ended_at is None:
            return None
        return max(0.0, (self.ended_at - self.started_at).total_seconds())

    @property
    def outcome_words(self) -> str:
        return OUTCOME_WORDS.get(self.outcome, self.outcome)

    def took_at(self, now: datetime) -> str:
        """How long it took, or has been running at `now`."""
        end = self.ended_at or now
        return duration_text(max(0.0, (end - self.started_at).total_seconds()))

    @property
    def took(self) -> str:
        return self.took_at(timezone.now())


class ConcernKind(models.TextChoices):
    STUCK = "stuck", "stuck"
    LOOPING = "looping", "looping"
    OVERLONG = "overlong", "overlong"
    # A budget of its project or person (`dashboard.costs`): 80% spent, then all of it.
    BUDGET_WARNING = "budget_80", "budget 80% spent"
    OVER_BUDGET = "over_budget", "over budget"


class Concern(models.Model):
    """An episode of an agent that needs a look: the same failing call again and again
    (looping), no step for long while a task is in progress (stuck), a step running past its
    tool's limit (overlong). Open while `ended_at` is null; at most one open per agent and kind.
    It ends at the agent's next healthy step (for overlong: when the long step ends), when the
    agent stops, or when someone dismisses it; a later episode is a new row."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="concerns")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="concerns")
    kind = models.CharField(max_length=12, choices=ConcernKind.choices)
    since = models.DateTimeField()
    # What a person reads, bounded plain text: "“pytest -x” failed 20 times in 19 min: Exit
    # code 1" (a loop counts every failure and shows the last error's first line).
    detail = models.CharField(max_length=SUMMARY_CHARS, blank=True)
    # The repeated call of a loop: the same call again does not end it, another one does.
    input_hash = models.CharField(max_length=32, blank=True)
    # The call running long (overlong): its end ends the episode.
    tool_use_id = models.CharField(max_length=IDEMPOTENCY_KEY_LENGTH, blank=True)
    # A loop: every failure of its call so far, counted from the first of those that opened it.
    failures = models.PositiveIntegerField(default=0)
    first_failed_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # "healthy step", "agent stopped", "dismissed by <name>".
    end_reason = models.CharField(max_length=80, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "kind"],
                condition=models.Q(ended_at__isnull=True),
                name="one_open_concern_per_agent_and_kind",
            )
        ]
        indexes = [models.Index(fields=["ended_at", "session"], name="concern_open")]

    def __str__(self) -> str:
        return f"{self.kind} {self.detail}"[:80]
