from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class DismissedSuggestion(models.Model):
    """A suggested rule someone dismissed: it comes back only when as much new evidence as it
    first needed arrives after the dismissal (`dashboard.policy.suggestions`)."""

    # The suggestion: its project, answer and rule text, hashed.
    key = models.CharField(max_length=64, db_index=True)
    # The requests it was suggested on, hashed: what was seen when it was dismissed.
    evidence_digest = models.CharField(max_length=64)
    dismissed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    dismissed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-dismissed_at", "-pk"]

    def __str__(self) -> str:
        return f"suggestion {self.key[:8]} dismissed"
