"""The identity provider's endpoints, read once at start from its discovery document
(`<issuer>/.well-known/openid-configuration`). A provider that cannot be read then stops the
server with one sentence; one that is down later only fails the sign-ins that need it."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger(__name__)

DISCOVERY_TIMEOUT_SECONDS = 10.0
# Signing algorithms mozilla-django-oidc verifies with the provider's published keys, best first.
ALGORITHMS = ("RS256", "ES256", "PS256", "RS384", "RS512", "ES384", "ES512")


@dataclass(frozen=True)
class Provider:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str
    end_session_endpoint: str
    algorithm: str
    # The client authenticates at the token endpoint with HTTP Basic (the default of the
    # specification) unless the provider offers only client_secret_post.
    basic_auth: bool
    name: str

    def library_settings(self) -> dict[str, object]:
        """What mozilla-django-oidc reads from settings, for this provider."""
        return {
            "OIDC_OP_AUTHORIZATION_ENDPOINT": self.authorization_endpoint,
            "OIDC_OP_TOKEN_ENDPOINT": self.token_endpoint,
            "OIDC_OP_USER_ENDPOINT": self.userinfo_endpoint,
            "OIDC_OP_JWKS_ENDPOINT": self.jwks_uri,
            "OIDC_RP_SIGN_ALGO": self.algorithm,
            "OIDC_TOKEN_USE_BASIC_AUTH": self.basic_auth,
            "OIDC_RP_CLIENT_ID": settings.AGENTBOARD_OIDC_CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": settings.AGENTBOARD_OIDC_CLIENT_SECRET,
            "OIDC_RP_SCOPES": settings.AGENTBOARD_OIDC_SCOPES,
            "OIDC_USE_PKCE": True,
            "OIDC_TIMEOUT": DISCOVERY_TIMEOUT_SECONDS,
            "OIDC_CREATE_USER": True,
            # Kept in the session only to name the session at the provider's sign-out.
            "OIDC_STORE_ID_TOKEN": self.signs_out_there,
        }

    @property
    def signs_out_there(self) -> bool:
        return bool(settings.AGENTBOARD_OIDC_SIGN_OUT_AT_PROVIDER and self.end_session_endpoint)


_configured: Provider | None = None


def current() -> Provider | None:
    """The provider of this server, or None when single sign-on is off."""
    return _configured


def use(provider: Provider | None) -> None:
    """Sets the provider (`discover` does at start; tests with a provider of their own)."""
    global _configured
    _configured = provider


def _url(document: dict[str, object], key: str, *, required: bool) -> str:
    value = document.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or urlsplit(value).scheme not in {"http", "https"}:
        raise ImproperlyConfigured(
            f"The identity provider's discovery document has no usable {key}; check "
            "AGENTBOARD_OIDC_ISSUER."
        )
    return value


def provider_of(issuer: str, document: object) -> Provider:
    """The provider a discovery document describes, or one sentence saying what is wrong."""
    if not isinstance(document, dict):
        raise ImproperlyConfigured(
            f"{issuer} did not answer with an OpenID Connect discovery document; check "
            "AGENTBOARD_OIDC_ISSUER."
        )
    if document.get("issuer") != issuer:
        raise ImproperlyConfigured(
            f"The identity provider calls itself {str(document.get('issuer'))[:200]!r}, not "
            f"{issuer!r}: set AGENTBOARD_OIDC_ISSUER to its exact issuer."
        )
    offered = document.get("id_token_signing_alg_values_supported") or ["RS256"]
    algorithm = next((alg for alg in ALGORITHMS if alg in offered), None)
    if algorithm is None:
        raise ImproperlyConfigured(
            "The identity provider signs ID tokens with none of "
            f"{', '.join(ALGORITHMS)}; Agentboard verifies those only."
        )
    methods = document.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    return Provider(
        issuer=issuer,
        authorization_endpoint=_url(document, "authorization_endpoint", required=True),
        token_endpoint=_url(document, "token_endpoint", required=True),
        jwks_uri=_url(document, "jwks_uri", required=True),
        userinfo_endpoint=_url(document, "userinfo_endpoint", required=False),
        end_session_endpoint=_url(document, "end_session_endpoint", required=False),
        algorithm=algorithm,
        basic_auth="client_secret_basic" in methods or "client_secret_post" not in methods,
        name=settings.AGENTBOARD_OIDC_NAME or urlsplit(issuer).hostname or issuer,
    )


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


def discover() -> Provider:
    """Reads the configured issuer's discovery document and makes it this server's provider."""
    issuer = settings.AGENTBOARD_OIDC_ISSUER
    url = discovery_url(issuer)
    try:
        response = httpx.get(url, timeout=DISCOVERY_TIMEOUT_SECONDS, follow_redirects=False)
        response.raise_for_status()
        document = response.json()
    except httpx.HTTPStatusError as error:
        raise ImproperlyConfigured(
            f"{url} answered {error.response.status_code}; check AGENTBOARD_OIDC_ISSUER."
        ) from None
    except httpx.HTTPError as error:
        raise ImproperlyConfigured(
            f"The identity provider at {issuer} could not be reached ({type(error).__name__}); "
            "check AGENTBOARD_OIDC_ISSUER and that the provider is up."
        ) from None
    except ValueError:
        document = None
    provider = provider_of(issuer, document)
    use(provider)
    logger.info("Single sign-on with %s (%s).", provider.name, issuer)
    return provider


def reachable(provider: Provider) -> bool:
    """Whether the provider answers now (before a browser is sent there)."""
    try:
        response = httpx.get(discovery_url(provider.issuer), timeout=5.0)
    except httpx.HTTPError:
        return False
    return response.status_code < 500
