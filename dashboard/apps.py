from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Sessions and agents"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model

        from dashboard.models import AgentToken

        # Revoking a token or deactivating a user here takes effect at once in this process
        # and closes the agent sockets opened with those tokens in every process; other
        # processes also drop their cached answer within TOKEN_CACHE_SECONDS.
        for model in (AgentToken, get_user_model()):
            post_save.connect(_tokens_changed, sender=model, dispatch_uid=f"tokens-{model}")
            post_delete.connect(_tokens_changed, sender=model, dispatch_uid=f"untoken-{model}")


def _tokens_changed(sender: type, instance: object, **kwargs: object) -> None:
    from django.db import transaction

    from dashboard import live
    from dashboard.models import AgentToken
    from dashboard.services import forget_cached_tokens

    forget_cached_tokens()
    deleted = kwargs.get("signal") is post_delete
    revoked: list[str] = []
    if isinstance(instance, AgentToken):
        if deleted or instance.revoked_at is not None:
            revoked = [instance.key_hash]
    elif not deleted and not getattr(instance, "is_active", True):
        # (A deleted user's tokens are deleted with it, each with its own signal.)
        tokens = AgentToken.objects.filter(owner=instance, revoked_at__isnull=True)
        revoked = list(tokens.values_list("key_hash", flat=True))
    if revoked:
        transaction.on_commit(lambda: live.close_token_sockets(revoked))
