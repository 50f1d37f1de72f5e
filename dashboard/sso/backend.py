"""Signing in with the identity provider (OpenID Connect's authorization code flow, by
mozilla-django-oidc): the ID token checked, the person found by the provider's subject, their
account and team memberships brought up to date from the claims."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings

from dashboard.core.writer import write_sync
from dashboard.sso import provider, services

logger = logging.getLogger(__name__)


def library_setting(name: str, *default: Any) -> Any:
    """mozilla-django-oidc's settings: this server's provider first, then Django's."""
    configured = provider.current()
    if configured is not None:
        values = configured.library_settings()
        if name in values:
            return values[name]
    return import_from_settings(name, *default)


class SsoBackend(OIDCAuthenticationBackend):
    get_settings = staticmethod(library_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Django builds every backend for every sign-in, a password's too: without a provider
        # this one takes part in none.
        self.enabled = provider.current() is not None
        self.UserModel = get_user_model()
        if self.enabled:
            super().__init__(*args, **kwargs)

    def authenticate(self, request: Any, **kwargs: Any) -> Any:
        if not self.enabled or "username" in kwargs or "password" in kwargs:
            return None
        return super().authenticate(request, **kwargs)

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The library checks the signature, expiry and nonce; the issuer and the audience
        are checked here (it leaves them out), so a token issued to another application, or
        by another issuer, signs nobody in."""
        payload = super().verify_token(token, **kwargs)
        configured = provider.current()
        assert configured is not None
        if payload.get("iss") != configured.issuer:
            raise SuspiciousOperation("The ID token was issued by another provider.")
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        client_id = self.OIDC_RP_CLIENT_ID
        if client_id not in audiences:
            raise SuspiciousOperation("The ID token was issued to another application.")
        if len(audiences) > 1 and payload.get("azp") != client_id:
            raise SuspiciousOperation("The ID token was issued to another application.")
        if not isinstance(payload.get("sub"), str) or not payload["sub"]:
            raise SuspiciousOperation("The ID token names nobody (no sub claim).")
        return payload

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        """The ID token's claims, with the userinfo endpoint's when the provider has one; its
        subject must be the ID token's (OpenID Connect Core 5.3.2)."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            userinfo = super().get_userinfo(access_token, id_token, payload)
            if not isinstance(userinfo, dict) or userinfo.get("sub") != payload["sub"]:
                raise SuspiciousOperation("The provider's userinfo names another person.")
            claims.update(userinfo)
        return claims

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        configured = provider.current()
        assert configured is not None
        try:
            claims = services.Claims.of(self.get_userinfo(access_token, id_token, payload))
        except ValueError as error:
            raise SuspiciousOperation(str(error)) from None
        outcome = write_sync(
            services.sso_sign_in,
            issuer=configured.issuer,
            claims=claims,
            address=services.address_of(self.request),
        )
        return outcome.value

    def get_user(self, user_id: int) -> Any:
        user = self.UserModel.objects.filter(pk=user_id).first()
        return user if user is not None and user.is_active else None
