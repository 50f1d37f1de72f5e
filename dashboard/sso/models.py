"""Who signed in through the identity provider, and which team memberships came from it."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from dashboard.models import Team


class Identity(models.Model):
    """A person's account at the identity provider: matched by its issuer and subject (`sub`,
    which the provider never reassigns), never by an e-mail address a person can change."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)
    signed_in_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="one_account_per_subject")
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class GroupMembership(models.Model):
    """A team membership the provider's groups gave: removed when the group goes. Memberships
    an admin gives by hand have none and stay until an admin removes them."""

    identity = models.ForeignKey(Identity, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["identity", "team"], name="one_sso_grant_per_team")
        ]

    def __str__(self) -> str:
        return f"{self.identity} in team {self.team_id}"
