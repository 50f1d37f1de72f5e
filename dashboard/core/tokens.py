"""Agent tokens made and revoked by people (the settings page, the command line, the admin),
each recorded in the audit log in the transaction that makes the change. The entry names the
token by its label and number, never by any part of its secret."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from dashboard.core.audit import Via, audit, named
from dashboard.core.redaction import redact
from dashboard.models import AgentToken, AuditAction


def token_words(token: AgentToken) -> str:
    label = f"'{token.label}'" if token.label else "without a label"
    return redact(f"token {label} of {named(token.owner)}")


def token_issue(
    *, owner: Any, label: str, actor: Any = None, via: Via | None = None
) -> tuple[AgentToken, str]:
    """A new token for `owner` and its raw key (shown once, never stored)."""
    with transaction.atomic():
        token, raw = AgentToken.issue(owner=owner, label=label)
        audit(
            AuditAction.TOKEN_CREATED, actor=actor, via=via, about=f"token:{token.pk}",
            summary=f"{token_words(token)} created",
        )  # fmt: skip
    return token, raw


def token_revoke(*, token: AgentToken, actor: Any = None, via: Via | None = None) -> bool:
    """Revoke it (agents using it stop at once); False when it was revoked already."""
    with transaction.atomic():
        locked = AgentToken.objects.select_for_update().select_related("owner").get(pk=token.pk)
        if locked.revoked_at is not None:
            return False
        locked.revoked_at = timezone.now()
        # Saved, not updated: the save signal closes the agent sockets open with it.
        locked.save(update_fields=["revoked_at"])
        token.revoked_at = locked.revoked_at
        token_audit_revoked(locked, actor=actor, via=via)
    return True


def token_audit_revoked(
    token: AgentToken, *, actor: Any, via: Via | None, deleted: bool = False
) -> None:
    audit(
        AuditAction.TOKEN_REVOKED, actor=actor, via=via, about=f"token:{token.pk}",
        summary=f"{token_words(token)} {'deleted' if deleted else 'revoked'}",
    )  # fmt: skip
