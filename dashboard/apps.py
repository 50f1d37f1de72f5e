from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Sessions and agents"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_delete, post_save

        from dashboard.models import AgentToken
        from dashboard.services import forget_cached_tokens

        # Revoking a token or deactivating a user here takes effect at once in this process;
        # other processes drop their cached answer within TOKEN_CACHE_SECONDS.
        for model in (AgentToken, get_user_model()):
            post_save.connect(forget_cached_tokens, sender=model, dispatch_uid=f"tokens-{model}")
            post_delete.connect(forget_cached_tokens, sender=model, dispatch_uid=f"untoken-{model}")
