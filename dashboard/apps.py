from __future__ import annotations

from django.apps import AppConfig
from django.db.backends.signals import connection_created
from django.db.models.signals import m2m_changed, post_delete, post_save


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Sessions and agents"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model, user_logged_out
        from django.contrib.auth.models import Group
        from django.contrib.sessions.models import Session

        from dashboard.core.security import forget_signed_in
        from dashboard.models import AgentToken, Membership, Project, Team

        # Who a browser session belongs to is remembered for a second (`dashboard.core.security`);
        # signing out, a changed user or changed permissions forget it in this process at once.
        user = get_user_model()
        user_logged_out.connect(forget_signed_in, dispatch_uid="signed-in-out")
        post_save.connect(forget_signed_in, sender=user, dispatch_uid="signed-in-user")
        post_delete.connect(forget_signed_in, sender=user, dispatch_uid="signed-in-unuser")
        post_delete.connect(forget_signed_in, sender=Session, dispatch_uid="signed-in-session")
        for through in (
            user.groups.through,
            user.user_permissions.through,
            Group.permissions.through,
        ):
            uid = f"signed-in-{through}"
            m2m_changed.connect(forget_signed_in, sender=through, dispatch_uid=uid)
        # Who sees what (`dashboard.core.visibility`) is read with who they are: a changed team
        # forgets it too.
        for model in (Membership, Project, Team):
            post_save.connect(forget_signed_in, sender=model, dispatch_uid=f"signed-in-{model}")
            post_delete.connect(forget_signed_in, sender=model, dispatch_uid=f"unsigned-{model}")

        # Revoking a token or deactivating a user here takes effect at once in this process
        # and closes the agent sockets opened with those tokens in every process; other
        # processes also drop their cached answer within TOKEN_CACHE_SECONDS.
        for model in (AgentToken, get_user_model()):
            post_save.connect(_tokens_changed, sender=model, dispatch_uid=f"tokens-{model}")
            post_delete.connect(_tokens_changed, sender=model, dispatch_uid=f"untoken-{model}")

        from dashboard.core.sql import keep_prepared

        connection_created.connect(keep_prepared, dispatch_uid="keep-prepared")

        # What a write changed goes out once it is committed (`dashboard.live.publisher`).
        from dashboard.core.writer import writer
        from dashboard.live import publisher

        if publisher.publish not in writer.after_commit:
            writer.after_commit.append(publisher.publish)


def _tokens_changed(sender: type, instance: object, **kwargs: object) -> None:
    from django.db import transaction

    from dashboard.core.services import forget_cached_tokens
    from dashboard.live import publisher
    from dashboard.models import AgentToken

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
        transaction.on_commit(lambda: publisher.close_token_sockets(revoked))
