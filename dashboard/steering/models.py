"""What a person tells an agent from the board: a message its model reads, a stop that ends
its turn, a pause that holds its tool calls until a resume.

Messages and stops are an outbox per agent: durable rows, each claimed by exactly one hook
answer with a conditional update (as decisions are), so two server processes, a client's retry
or a restart deliver each once. A pause is open until someone resumes it; while it is open,
the agent's tool calls are held as a permission request is.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from dashboard.models import Agent, Session

MAX_TEXT_CHARS = 4_000
# A claim key: what a client may name its poll or read with (`Directive.claim_key`).
CLAIM_KEY_PATTERN = r"^[A-Za-z0-9_-]{0,64}$"


class Directive(models.Model):
    """A message or a stop for one agent, queued until a hook of that agent carries it."""

    class Kind(models.TextChoices):
        MESSAGE = "message", "message"
        STOP = "stop", "stop"

    class State(models.TextChoices):
        QUEUED = "queued", "queued"
        DELIVERED = "delivered", "delivered"
        # The session ended first; nothing will carry it.
        UNDELIVERED = "undelivered", "not delivered"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="directives")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="directives")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    # Redacted before it is stored; for a stop, its reason.
    text = models.TextField(blank=True)
    state = models.CharField(max_length=12, choices=State.choices, default=State.QUEUED)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_by_name = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)
    # Which hook of which client carried it ("PostToolUse (Claude Code)"), or why none did.
    delivered_via = models.CharField(max_length=80, blank=True)
    # A stop delivered holds until the agent's turn ends (its Stop, or its developer's next
    # prompt): a tool call its model still tries meanwhile is refused too.
    turn_ended_at = models.DateTimeField(null=True, blank=True)
    # The key of the poll or read that claimed it, when the client sent one: the same key asked
    # again (a retry whose answer was lost on the way) is answered with it again.
    claim_key = models.CharField(max_length=64, blank=True)

    class Meta:
        indexes = [
            # Every hook asks (through a per-process cache) which agents have something queued.
            models.Index(
                fields=["agent"], condition=Q(state="queued"), name="steering_directive_queued"
            ),
            models.Index(fields=["session", "-created_at"], name="steering_directive_session"),
            models.Index(
                fields=["agent"],
                condition=Q(kind="stop", state="delivered", turn_ended_at__isnull=True),
                name="steering_stop_holding",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} for {self.agent_id} by {self.created_by_name}: {self.state}"


class Pause(models.Model):
    """An agent's tool calls are held from `paused_at` until `resumed_at`."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="pauses")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="pauses")
    reason = models.TextField(blank=True)
    paused_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    paused_by_name = models.CharField(max_length=150)
    paused_at = models.DateTimeField(default=timezone.now)
    resumed_at = models.DateTimeField(null=True, blank=True)
    resumed_by_name = models.CharField(max_length=150, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["agent"],
                condition=Q(resumed_at__isnull=True),
                name="steering_one_open_pause_per_agent",
            )
        ]
        indexes = [models.Index(fields=["session", "-paused_at"], name="steering_pause_session")]

    def __str__(self) -> str:
        return f"pause of {self.agent_id} by {self.paused_by_name}"

    @property
    def is_open(self) -> bool:
        return self.resumed_at is None
