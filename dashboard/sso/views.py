"""The login page's button, the way to the identity provider and back, and the clear page a
sign-in that did not work ends on (nothing signed in, the password form a link away)."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from mozilla_django_oidc import views as oidc_views

from dashboard.core.audit import audit, via_request
from dashboard.models import AuditAction
from dashboard.sso import provider
from dashboard.sso.backend import library_setting
from dashboard.sso.services import SURFACE, SignInRefused, plain_text

logger = logging.getLogger(__name__)


# What the provider's error codes (OpenID Connect Core 3.1.2.6, OAuth 2.0 4.1.2.1) mean to
# the person who sees them.
PROVIDER_ERRORS = {
    "access_denied": "you may not use Agentboard, or the sign-in was cancelled",
    "login_required": "you need to sign in there first",
    "consent_required": "Agentboard needs your consent there first",
    "interaction_required": "it needs something from you first",
    "temporarily_unavailable": "it is busy right now",
    "server_error": "something went wrong on its side",
}


class LoginPage(auth_views.LoginView):
    """Django's login form, with the provider's button above it when there is one."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        configured = provider.current()
        context["sso_name"] = configured.name if configured is not None else ""
        return context


class LogoutPage(auth_views.LogoutView):
    """Ends the Agentboard session; with AGENTBOARD_OIDC_SIGN_OUT_AT_PROVIDER, someone who
    signed in with the provider is then sent to its sign-out, which sends them back here."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        configured = provider.current()
        id_token = request.session.get("oidc_id_token", "")
        response = super().post(request, *args, **kwargs)
        if configured is None or not configured.signs_out_there or not id_token:
            return response
        query = urlencode(
            {
                "id_token_hint": id_token,
                "client_id": settings.AGENTBOARD_OIDC_CLIENT_ID,
                "post_logout_redirect_uri": request.build_absolute_uri(reverse("login")),
            }
        )
        separator = "&" if "?" in configured.end_session_endpoint else "?"
        return HttpResponseRedirect(f"{configured.end_session_endpoint}{separator}{query}")


def failed(request: HttpRequest, message: str, *, status: int, why: str = "") -> HttpResponse:
    """The page a sign-in through the provider ends on when it did not work, recorded."""
    with transaction.atomic():
        audit(
            AuditAction.SIGN_IN_FAILED, via=via_request(request, SURFACE),
            summary=why or message,
        )  # fmt: skip
    configured = provider.current()
    context = {"message": message, "sso_name": configured.name if configured else ""}
    return render(request, "sso/failed.html", context, status=status)


class SsoStart(oidc_views.OIDCAuthenticationRequestView):
    get_settings = staticmethod(library_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if provider.current() is None:
            # Without a provider the view has no endpoint to read; `get` answers 404.
            super(oidc_views.OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)
            return
        super().__init__(*args, **kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        configured = provider.current()
        if configured is None:
            raise Http404("Single sign-on is not set up on this server.")
        # The browser would otherwise land on its own error page, far from the password form.
        if not provider.reachable(configured):
            return failed(
                request,
                f"{configured.name} is not answering right now; sign in with your Agentboard "
                "password, or try again in a few minutes.",
                status=503,
                why=f"{configured.issuer} did not answer.",
            )
        return super().get(request)


class SsoCallback(oidc_views.OIDCAuthenticationCallbackView):
    get_settings = staticmethod(library_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        configured = provider.current()
        if configured is None:
            raise Http404("Single sign-on is not set up on this server.")
        name = configured.name
        self.failure: tuple[str, int, str] | None = None
        if request.GET.get("error"):
            # Anyone can send a browser here with any error text: the page says only what the
            # code means; the provider's own words go to the audit log, as text.
            error = plain_text(request.GET.get("error"), 60)
            text = plain_text(request.GET.get("error_description"), 300)
            meaning = PROVIDER_ERRORS.get(error, "it did not sign you in")
            self.failure = (
                f"{name} said {meaning}; try again, or sign in with your Agentboard password.",
                400,
                f"{name} answered {error}: {text}",
            )
        elif "code" in request.GET and not self._started_here(request.GET.get("state")):
            # The library would answer Django's bare 400 (a state it never issued) or its
            # page for an inactive account.
            return failed(
                request,
                f"This answer from {name} belongs to no sign-in started in this browser, or to "
                "one that finished already, so nobody was signed in; start again from the login "
                "page.",
                status=400,
                why="The answer's state is not one this browser is waiting for (replayed, or "
                "started elsewhere).",
            )
        try:
            return super().get(request)
        except SignInRefused as error:
            refusal = error
        except requests.RequestException as error:
            logger.warning("Single sign-on: %s did not answer: %s", configured.issuer, error)
            return failed(
                request,
                f"{name} did not answer while signing you in; try again, or sign in with your "
                "Agentboard password.",
                status=502,
                why=f"{configured.issuer} did not answer ({type(error).__name__}).",
            )
        logger.warning("Single sign-on refused: %s", refusal.why)
        return failed(request, refusal.message, status=400, why=refusal.why)

    def _started_here(self, state: str | None) -> bool:
        states = self.request.session.get("oidc_states")
        return bool(state) and isinstance(states, dict) and state in states

    def login_failure(self) -> HttpResponse:
        if getattr(self, "failure", None):
            message, status, why = self.failure
            return failed(self.request, message, status=status, why=why)
        configured = provider.current()
        name = configured.name if configured is not None else "the provider"
        return failed(
            self.request,
            f"Signing in with {name} did not complete (it was started in another browser, or "
            "your account is inactive); start again from the login page.",
            status=400,
            why="The sign-in did not complete: no matching start, or an inactive account.",
        )
