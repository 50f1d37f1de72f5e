"""Signing in with the identity provider (OpenID Connect's authorization code flow, by
mozilla-django-oidc): the ID token checked, the person found by the provider's subject, their
account and team memberships brought up to date from the claims.

Whatever the provider answers that cannot sign anyone in (a refused code, a token that fails
a check, a userinfo endpoint that refuses) raises `SignInRefused`, naming what went wrong, for
the callback's page and the audit log; a provider that does not answer raises requests'
errors, for its "did not answer" page."""

from __future__ import annotations

import logging
from typing import Any

import jwt
import requests
from django.contrib.auth import get_user_model
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings

from dashboard.core.writer import write_sync
from dashboard.sso import provider, services
from dashboard.sso.services import SignInRefused, plain_text

logger = logging.getLogger(__name__)

# The kind of key each algorithm's signature needs (RFC 7518, 3.1).
KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC"}


def library_setting(name: str, *default: Any) -> Any:
    """mozilla-django-oidc's settings: this server's provider first, then Django's."""
    configured = provider.current()
    if configured is not None:
        values = configured.library_settings()
        if name in values:
            return values[name]
    return import_from_settings(name, *default)


def _name() -> str:
    configured = provider.current()
    return configured.name if configured is not None else "the provider"


def untrusted(reason: str) -> SignInRefused:
    """A check of the provider's answer failed; `reason` (a clause: "the ID token has
    expired") names the check, on the page and in the audit log."""
    return SignInRefused(
        f"The answer from {_name()} could not be trusted ({reason}), so nobody was signed in; "
        "start again from the login page.",
        why=f"{reason[0].upper()}{reason[1:]}.",
    )


def _oauth_error(response: requests.Response) -> tuple[str, str]:
    """The error code and description of a refusal (RFC 6749, 5.2), as plain text."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return "", ""
    return plain_text(body.get("error"), 60), plain_text(body.get("error_description"), 300)


def _refused_by_the_token_endpoint(response: requests.Response) -> SignInRefused:
    name = _name()
    error, description = _oauth_error(response)
    said = f"{error or response.status_code}" + (f" ({description})" if description else "")
    if error == "invalid_grant":
        return SignInRefused(
            f"{name} did not accept the sign-in code: it was used already, or it expired; start "
            "again from the login page.",
            why=f"{name} refused the authorization code: {said}.",
        )
    if error in {"invalid_client", "unauthorized_client"}:
        return SignInRefused(
            f"{name} did not accept Agentboard's client id and secret, so nobody was signed in; "
            "ask an admin to check AGENTBOARD_OIDC_CLIENT_ID and AGENTBOARD_OIDC_CLIENT_SECRET.",
            why=f"{name} refused the client: {said}.",
        )
    return SignInRefused(
        f"{name} refused to finish the sign-in ({error or response.status_code}); start again "
        "from the login page, or sign in with your Agentboard password.",
        why=f"{name}'s token endpoint answered {response.status_code}: {said}.",
    )


def _refused_by_the_provider(error: requests.HTTPError) -> bool:
    """A 4xx: the provider answered, and said no. A 5xx is a provider in trouble."""
    return error.response is not None and 400 <= error.response.status_code < 500


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

    def get_token(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The token endpoint's answer to the code: a refusal (a code used already, the client's
        secret wrong) names itself; a provider in trouble (5xx, no answer) raises as it was."""
        try:
            answer = super().get_token(payload)
        except requests.JSONDecodeError:
            raise untrusted(f"{_name()}'s token endpoint did not answer with JSON") from None
        except requests.HTTPError as error:
            if not _refused_by_the_provider(error):
                raise
            raise _refused_by_the_token_endpoint(error.response) from None
        if not isinstance(answer, dict) or not isinstance(answer.get("id_token"), str):
            raise untrusted(f"{_name()}'s token endpoint gave no ID token")
        return answer

    def retrieve_matching_jwk(self, token: str) -> jwt.PyJWK:
        """The published key that signed the token: the one its header names (`kid`), or,
        when it names none, the provider's only key for its algorithm. A token signed with
        another algorithm than the provider's (`none`, or HS256 with the client secret) is
        refused before any key is read."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as error:
            raise untrusted(f"the ID token could not be read: {error}") from None
        algorithm = header.get("alg")
        if algorithm in (None, "none"):
            raise untrusted("the ID token is not signed")
        if algorithm != self.OIDC_RP_SIGN_ALGO:
            raise untrusted(
                f"the ID token is signed with {plain_text(algorithm, 20) or 'an unknown algorithm'}"
                f", not {self.OIDC_RP_SIGN_ALGO} as {_name()} says it signs"
            )
        keys = self._published_keys(algorithm)
        kid = header.get("kid")
        if kid is not None:
            keys = [key for key in keys if key.get("kid") == kid]
            if not keys:
                raise untrusted(f"the ID token was signed with a key {_name()} does not publish")
        elif not keys:
            raise untrusted(f"{_name()} publishes no {algorithm} key")
        elif len(keys) > 1:
            name = _name()
            raise SignInRefused(
                f"{name}'s ID token does not say which of its {len(keys)} {algorithm} keys signed "
                "it, so it could not be checked and nobody was signed in; ask an admin to have "
                f"{name} name the key in its tokens (kid), or publish only one.",
                why=f"The ID token names no key (no kid) and {name} publishes {len(keys)} "
                f"{algorithm} keys.",
            )
        try:
            return jwt.PyJWK(keys[0], algorithm=algorithm)
        except jwt.PyJWTError as error:
            raise untrusted(f"{_name()}'s key could not be read: {error}") from None

    def _published_keys(self, algorithm: str) -> list[dict[str, Any]]:
        """The provider's published keys that can check a signature of this algorithm."""
        response = requests.get(
            self.OIDC_OP_JWKS_ENDPOINT,
            verify=self.get_settings("OIDC_VERIFY_SSL", True),
            timeout=self.get_settings("OIDC_TIMEOUT", None),
            proxies=self.get_settings("OIDC_PROXY", None),
        )
        response.raise_for_status()
        try:
            keys = response.json().get("keys")
        except (ValueError, AttributeError):
            keys = None
        if not isinstance(keys, list):
            raise untrusted(f"{_name()}'s key set could not be read")
        return [
            key
            for key in keys
            if isinstance(key, dict)
            and key.get("kty") == KEY_TYPES.get(algorithm[:2])
            and key.get("use", "sig") == "sig"
            and key.get("alg", algorithm) == algorithm
        ]

    def get_payload_data(self, token: str, key: Any) -> dict[str, Any]:
        # Always verified: the library's OIDC_ALLOW_UNSECURED_JWT would accept `alg: none`.
        return self._verify_jws(token, key)

    def _verify_jws(self, token: str, key: Any) -> dict[str, Any]:
        try:
            payload = jwt.decode(
                token, key, algorithms=[self.OIDC_RP_SIGN_ALGO], options={"verify_aud": False}
            )
        except jwt.InvalidSignatureError:
            raise untrusted(
                f"the ID token's signature does not verify with {_name()}'s key"
            ) from None
        except jwt.ExpiredSignatureError:
            raise untrusted("the ID token has expired") from None
        except jwt.PyJWTError as error:
            raise untrusted(f"the ID token was refused: {error}") from None
        if not isinstance(payload, dict):
            raise untrusted("the ID token holds no claims")
        return payload

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The signature, expiry and nonce, then the issuer and the audience (the library
        leaves those out), so a token issued to another application, or by another issuer,
        signs nobody in."""
        payload = self.get_payload_data(token, self.retrieve_matching_jwk(token))
        if self.get_settings("OIDC_USE_NONCE", True) and kwargs.get("nonce") != payload.get(
            "nonce"
        ):
            raise untrusted("the ID token was issued for another sign-in (its nonce differs)")
        configured = provider.current()
        assert configured is not None
        if payload.get("iss") != configured.issuer:
            raise untrusted("the ID token was issued by another provider")
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        client_id = self.OIDC_RP_CLIENT_ID
        if client_id not in audiences:
            raise untrusted("the ID token was issued to another application")
        if len(audiences) > 1 and payload.get("azp") != client_id:
            raise untrusted("the ID token was issued to another application")
        if not isinstance(payload.get("sub"), str) or not payload["sub"]:
            raise untrusted("the ID token names nobody (no sub claim)")
        return payload

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        """The ID token's claims, with the userinfo endpoint's when the provider has one; its
        subject must be the ID token's (OpenID Connect Core 5.3.2)."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            name = _name()
            try:
                userinfo = super().get_userinfo(access_token, id_token, payload)
            except requests.JSONDecodeError:
                raise untrusted(f"{name}'s userinfo endpoint did not answer with JSON") from None
            except requests.HTTPError as error:
                if not _refused_by_the_provider(error):
                    raise
                status = error.response.status_code
                error_code, _ = _oauth_error(error.response)
                raise SignInRefused(
                    f"{name} did not give Agentboard your details (its userinfo endpoint "
                    f"answered {status}); start again from the login page.",
                    why=f"{name}'s userinfo endpoint answered {status}"
                    + (f": {error_code}." if error_code else "."),
                ) from None
            if not isinstance(userinfo, dict) or userinfo.get("sub") != payload["sub"]:
                raise untrusted(f"{name}'s userinfo names another person")
            claims.update(userinfo)
        return claims

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        configured = provider.current()
        assert configured is not None
        try:
            claims = services.Claims.of(self.get_userinfo(access_token, id_token, payload))
        except ValueError as error:
            raise untrusted(str(error)[0].lower() + str(error)[1:].rstrip(".")) from None
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
