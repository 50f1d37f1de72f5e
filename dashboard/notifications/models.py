"""Where notifications go (webhook targets, push devices) and the outbox of what to send.

Webhook URLs, their signing secrets and push endpoints are secrets: pages show them masked
(`safety.mask_url`) and logs never print them whole.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Event(models.TextChoices):
    WAITING = "waiting", "waiting on a person"
    DECIDED = "decided", "decided"
    STOPPED_UNFINISHED = "stopped_unfinished", "agent stopped unfinished"
    SESSION_ENDED = "session_ended", "session ended"


class WebhookTarget(models.Model):
    class Kind(models.TextChoices):
        SLACK = "slack", "Slack-compatible incoming webhook"
        JSON = "json", "JSON webhook signed with HMAC-SHA256"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook_targets"
    )
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    url = models.CharField(max_length=2000)
    # The HMAC key of a JSON target (shown once when the target is added).
    secret = models.CharField(max_length=100, blank=True)
    events = models.JSONField(default=list)
    # Project names (a session's folder name); empty: every project the owner sees.
    projects = models.JSONField(default=list)
    # Where links point when AGENTBOARD_PUBLIC_URL is unset: the address the target was added from.
    base_url = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"


class PushDevice(models.Model):
    """One browser's Web Push subscription (a phone, a laptop), named by its user."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="push_devices"
    )
    name = models.CharField(max_length=100)
    endpoint = models.CharField(max_length=2000, unique=True)
    p256dh = models.CharField(max_length=200)
    auth = models.CharField(max_length=100)
    base_url = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name", "pk"]

    def __str__(self) -> str:
        return f"{self.name} of {self.user}"


class Delivery(models.Model):
    """One notification for one target or device, written in the transaction of its cause."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        SENT = "sent", "sent"
        FAILED = "failed", "failed"
        # The push service said the subscription is gone; the device was removed.
        GONE = "gone", "device gone"

    # One per cause and destination, e.g. "waiting:plan:12:t3": the same cause never twice.
    key = models.CharField(max_length=200, unique=True)
    event = models.CharField(max_length=30, choices=Event.choices)
    target = models.ForeignKey(
        WebhookTarget, on_delete=models.CASCADE, null=True, blank=True, related_name="deliveries"
    )
    device = models.ForeignKey(
        PushDevice, on_delete=models.SET_NULL, null=True, blank=True, related_name="deliveries"
    )
    payload = models.JSONField()
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    # A worker that claimed it sends it until then; after that another may.
    lease_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.CharField(max_length=40, blank=True, db_index=True)
    last_status = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="delivery_due")]

    def __str__(self) -> str:
        return f"{self.key} ({self.status})"
