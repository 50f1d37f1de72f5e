"""Who may talk to the dashboard and what browsers are told: the browser socket's origin check,
links built from request headers, and the headers every response carries."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from copy import copy
from functools import partial
from time import monotonic
from typing import Any
from urllib.parse import urlsplit

from asgiref.sync import iscoroutinefunction, sync_to_async
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib import auth
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.decorators import login_required as django_login_required
from django.contrib.auth.decorators import user_passes_test
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.auth.models import AnonymousUser
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.http.request import is_same_domain, split_domain_port, validate_host
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware
from django.middleware.security import SecurityMiddleware
from django.utils.decorators import sync_and_async_middleware

from dashboard.core import reader
from dashboard.core.visibility import audience_of

DEFAULT_PORTS = {"http": 80, "https": 443}


def scope_header(scope: dict[str, Any], name: bytes) -> str:
    """One request header of an ASGI scope ("" when absent); `name` in lower case."""
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return ""


def scope_is_secure(scope: dict[str, Any]) -> bool:
    """Whether the socket arrived over TLS: directly, or at a trusted proxy that says so."""
    if scope.get("scheme") in {"wss", "https"}:
        return True
    forwarded = scope_header(scope, b"x-forwarded-proto").split(",")[0].strip().lower()
    return settings.AGENTBOARD_TRUSTED_PROXY and forwarded == "https"


def allowed_host(host: str) -> bool:
    """Whether a Host header names this dashboard (one of ALLOWED_HOSTS), as Django checks it."""
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


def public_url(path: str, *, host: str, secure: bool) -> str:
    """The address to give out for `path`: AGENTBOARD_PUBLIC_URL when set, else the request's
    host when it is one of ours, else the path alone (never a host an attacker sent)."""
    if settings.AGENTBOARD_PUBLIC_URL:
        return settings.AGENTBOARD_PUBLIC_URL + path
    if host and allowed_host(host):
        return f"{'https' if secure else 'http'}://{host}{path}"
    return path


def _origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) origin, the port filled in; None if it is not one."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme]


def origin_allowed(origin: str, *, host: str, secure: bool) -> bool:
    """Whether a page at `origin` may use this dashboard's login: the origin the request came
    to (if its Host is one of ours) or one of CSRF_TRUSTED_ORIGINS, by scheme, host and port."""
    given = _origin(origin)
    if given is None or not allowed_host(host):
        return False
    if given == _origin(f"{'https' if secure else 'http'}://{host}"):
        return True
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        pattern = _origin(trusted)
        if pattern is None or (pattern[0], pattern[2]) != (given[0], given[2]):
            continue
        if given[1] == pattern[1]:
            return True
        # "https://*.example.com" trusts every subdomain, as Django's CSRF check does.
        if pattern[1].startswith("*.") and is_same_domain(given[1], pattern[1][1:]):
            return True
    return False


class BrowserOriginValidator:
    """Lets a browser socket through only from the dashboard's own pages; any other origin
    gets a refused handshake (403) before the consumer runs. A browser sends its login cookie
    whatever page opens the socket, so without this any site could read the board."""

    def __init__(self, application: Callable[..., Awaitable[None]]) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        allowed = origin_allowed(
            scope_header(scope, b"origin"),
            host=scope_header(scope, b"host"),
            secure=scope_is_secure(scope),
        )
        if not allowed:
            await WebsocketDenier()(scope, receive, send)
            return
        await self.application(scope, receive, send)


# Origins besides this one that a form may be sent to, or be redirected to after it is sent:
# registered by the apps above when they are ready (the identity provider's sign-out page).
FORM_ACTION_ORIGINS: list[str] = []


def content_security_policy(request: HttpRequest) -> str:
    """No inline script or style anywhere; scripts, styles and sockets from this host only."""
    try:
        host = request.get_host()
    except DisallowedHost:  # the 400 page for a Host that is not ours
        host = ""
    # Older Safari does not count ws:// and wss:// of the same host as 'self'.
    sockets = f" ws://{host} wss://{host}" if host else ""
    forms = " ".join(["'self'", *FORM_ACTION_ORIGINS])
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self'{sockets}; object-src 'none'; frame-ancestors 'none'; "
        f"base-uri 'self'; form-action {forms}"
    )


def _with_security_headers(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    # Every answer shows someone's sessions and plans or one token's data: no browser or
    # proxy cache may keep it (views that set their own Cache-Control keep it).
    if "Cache-Control" not in response:
        response["Cache-Control"] = "private, no-store"
    is_html = response.get("Content-Type", "").startswith("text/html")
    if is_html and "Content-Security-Policy" not in response:
        response["Content-Security-Policy"] = content_security_policy(request)
    # Over HTTPS the login and CSRF cookies must never leak onto plain http; over plain http
    # (the embedded default) a Secure cookie would not come back and login would fail.
    if request.is_secure():
        for cookie in response.cookies.values():
            cookie["secure"] = True
    return response


@sync_and_async_middleware
def security_headers(get_response: Callable) -> Callable:
    """Cache-Control, Content-Security-Policy and Secure cookies on every dynamic response."""
    if iscoroutinefunction(get_response):

        async def middleware(request: HttpRequest) -> HttpResponse:
            return _with_security_headers(request, await get_response(request))

    else:

        def middleware(request: HttpRequest) -> HttpResponse:
            return _with_security_headers(request, get_response(request))

    return middleware


def on_the_loop(middleware_class: type) -> Callable[[Callable], Callable]:
    """One of Django's middleware classes run on the event loop under async views.

    Django runs such a middleware's `process_request` and `process_response` in a thread, two
    hops per request each. For those that only read the request and set headers, with no
    database or file in reach (security headers, common redirects, clickjacking), the hops are
    pure cost. A class with other hooks (process_view, ...) keeps Django's own handling.
    """
    hooks = {"process_view", "process_exception", "process_template_response"}
    assert not hooks & set(dir(middleware_class)), f"{middleware_class} has more hooks"

    @sync_and_async_middleware
    def factory(get_response: Callable) -> Callable:
        instance = middleware_class(get_response)
        if not iscoroutinefunction(get_response):
            return instance
        before = getattr(instance, "process_request", None)
        after = getattr(instance, "process_response", None)

        async def middleware(request: HttpRequest) -> HttpResponse:
            response = before(request) if before else None
            if response is None:
                response = await get_response(request)
            return after(request, response) if after else response

        return middleware

    return factory


django_common = on_the_loop(CommonMiddleware)
django_clickjacking = on_the_loop(XFrameOptionsMiddleware)
_django_security = on_the_loop(SecurityMiddleware)


@sync_and_async_middleware
def django_security(get_response: Callable) -> Callable:
    """Django's SecurityMiddleware (HTTPS redirect, HSTS, nosniff, referrer and opener
    policies) on the event loop; a Host outside ALLOWED_HOSTS gets 400, as pages do (where
    CommonMiddleware checks it)."""
    inner = _django_security(get_response)
    if not iscoroutinefunction(get_response):
        return inner

    async def middleware(request: HttpRequest) -> HttpResponse:
        request.get_host()  # DisallowedHost: 400
        return await inner(request)

    return middleware


# --- the browser's middleware, without a thread per step under async views ------------------
#
# Django runs each of its middleware classes' steps in a thread under an async view: with
# sessions, CSRF, login and messages that is eight thread hops for a reviewer's click. These
# subclasses do the same work on the event loop wherever it reads nothing but the request, and
# take a thread only for what may reach the database (a session to save, messages to store, a
# CSRF failure page to render). Sync views run them exactly as Django does.


class Sessions(SessionMiddleware):
    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        self.process_request(request)  # a store that reads the session when first used
        response = await self.get_response(request)
        session = getattr(request, "session", None)
        if session is not None and (session.modified or settings.SESSION_SAVE_EVERY_REQUEST):
            return await sync_to_async(self.process_response)(request, response)
        return self.process_response(request, response)  # headers and cookies only


class Messages(MessageMiddleware):
    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        self.process_request(request)  # a store that reads the messages when first used
        response = await self.get_response(request)
        storage = getattr(request, "_messages", None)
        if storage is not None and (storage.used or storage.added_new):
            return await sync_to_async(self.process_response)(request, response)
        return response  # nothing read or added: nothing to store


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Csrf(CsrfViewMiddleware):
    """The CSRF token is in a cookie (CSRF_USE_SESSIONS is off): checking it and setting it
    read and write headers only; the failure page is rendered in a thread."""

    def __init__(self, get_response: Callable) -> None:
        super().__init__(get_response)
        self.on_the_loop = iscoroutinefunction(get_response) and not settings.CSRF_USE_SESSIONS
        if self.on_the_loop:
            self.process_view = self._process_view_on_the_loop  # type: ignore[method-assign]

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        if not self.on_the_loop:
            return await super().__acall__(request)
        self.process_request(request)
        response = await self.get_response(request)
        return self.process_response(request, response)

    async def _process_view_on_the_loop(
        self, request: HttpRequest, callback: Callable, args: Any, kwargs: Any
    ) -> HttpResponse | None:
        try:
            return CsrfViewMiddleware.process_view(self, request, callback, args, kwargs)
        except _Refused as refused:
            reject = CsrfViewMiddleware._reject
            return await sync_to_async(reject)(self, request, refused.reason)

    def _reject(self, request: HttpRequest, reason: str) -> HttpResponse:
        if self.on_the_loop:
            raise _Refused(reason)
        return super()._reject(request, reason)


def _user_and_permissions(request: HttpRequest) -> AbstractBaseUser | AnonymousUser:
    user = auth.get_user(request)
    if user.is_active and not user.is_superuser:
        user.get_all_permissions()  # kept on the user: has_perm() and ahas_perm() read no more
    audience_of(user)  # who they see and decide for, kept on the user likewise
    return user


# Who a browser's session belongs to, once read, is remembered for this long in each process:
# a reviewer's clicks then cost no query for who they are. Signing out, a new password, a
# deactivated user or changed permissions take effect at once in the process where they
# happen (`forget_signed_in`) and within this time in the others, as revoked tokens do.
SIGNED_IN_SECONDS = 1.0
SIGNED_IN_SIZE = 10_000
_session_users: dict[str, tuple[float, AbstractBaseUser]] = {}


def forget_signed_in(**kwargs: object) -> None:
    _session_users.clear()


async def _auser(request: HttpRequest) -> AbstractBaseUser | AnonymousUser:
    if hasattr(request, "_acached_user"):
        return request._acached_user
    key = request.COOKIES.get(settings.SESSION_COOKIE_NAME, "")
    remembered = _session_users.get(key)
    if remembered is not None and remembered[0] > monotonic():
        # A copy: a request may set attributes on its user; the next one starts clean.
        user: AbstractBaseUser | AnonymousUser = copy(remembered[1])
    else:
        user = await reader.read(_user_and_permissions, request)
        if key and user.is_authenticated:
            if len(_session_users) >= SIGNED_IN_SIZE:
                _session_users.clear()
            _session_users[key] = (monotonic() + SIGNED_IN_SECONDS, copy(user))
    request._acached_user = user
    return user


class Authentication(AuthenticationMiddleware):
    """Django's AuthenticationMiddleware, with async views' user read on the reading thread.

    Django's `request.auser()` reads the session, then the user, each in a thread of the
    request's own that connects to the database first; `ahas_perm()` reads the permissions
    the same way. Here all of it is one call on the reading thread's open connection
    (`dashboard.core.reader`), and the permissions stay on the user. Sync views keep Django's lazy
    `request.user`. Setting the two attributes touches nothing, so under async views it runs
    on the event loop.
    """

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        self.process_request(request)
        request.auser = partial(_auser, request)
        return await self.get_response(request)


async def _signed_in(user: AbstractBaseUser | AnonymousUser) -> bool:
    return user.is_authenticated


def login_required(view: Callable) -> Callable:
    """Django's login_required; for an async view the check runs on the event loop (Django
    hands its plain test function to a thread)."""
    if iscoroutinefunction(view):
        return user_passes_test(_signed_in)(view)
    return django_login_required(view)
