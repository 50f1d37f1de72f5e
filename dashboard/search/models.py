from __future__ import annotations

from django.conf import settings
from django.db import models

from dashboard.models import Session


class EntryKind(models.TextChoices):
    SESSION = "session", "Sessions"
    TODOS = "todos", "Todo lists"
    PLAN = "plan", "Plans"
    COMMENT = "comment", "Plan comments"
    DECISION = "decision", "Decisions"
    REQUEST = "request", "Permission requests"
    STEP = "step", "Tool steps"


class SearchEntry(models.Model):
    """One searchable thing, as the search engines index it: a session (its title, project,
    person, machine and branch), one revision of a todo list, one revision of a plan, a comment
    on a plan, a decision's words, a permission request, a tool step. Made from text already
    stored (and so already redacted) by the indexer, in the write batch that stored it.

    On SQLite an FTS5 table indexes `title` and `body` (kept in step by triggers); on
    PostgreSQL a generated `tsvector` column with a GIN index does (see the migration)."""

    kind = models.CharField(max_length=10, choices=EntryKind.choices)
    # The pk of the row it was made from (its kind says which table), and of the plan a
    # comment or a decision belongs to.
    ref = models.BigIntegerField()
    parent = models.BigIntegerField(null=True, blank=True)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    # The session's owner, copied: a person's newest entries are read on their own index
    # instead of every match of a common word being joined to its session. (No constraint of
    # its own: an entry goes with its session.)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        related_name="+",
    )
    at = models.DateTimeField()
    title = models.CharField(max_length=300, blank=True)
    body = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "ref"], name="one_entry_per_source")]
        indexes = [
            models.Index(fields=["kind", "at"], name="search_kind_time"),
            # PostgreSQL reads a common word's newest matches backwards on it, and stops
            # (`engines.PostgresFullText`).
            models.Index(fields=["at", "id"], name="search_time"),
            # A person's entries, newest first (the search's person filter).
            models.Index(fields=["owner", "at", "id"], name="search_owner_time"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.ref}: {self.title}"[:80]
