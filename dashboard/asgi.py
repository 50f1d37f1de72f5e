"""ASGI entry point: HTTP through Django, websockets through the channels router.

Agents and browsers take two stacks of the same Django project. Pages go through the full
middleware (sessions, CSRF, login, messages, static files). The agent endpoints (`/hooks/`,
the `/api/v1/` API, the OTLP receiver at `/v1/`) authenticate every call with a bearer token
and use none of that, and an agent waits for each of their answers: they go through
`AgentHandler`, with only the security headers. Same URLs, views, settings and error pages.
"""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from typing import Any

import django
from asgiref.sync import iscoroutinefunction
from channels.routing import ProtocolTypeRouter
from django.conf import settings
from django.core import signals
from django.core.handlers.asgi import ASGIHandler
from django.db import close_old_connections, reset_queries
from django.http import HttpRequest
from django.urls import Resolver404, ResolverMatch, get_resolver

django.setup(set_prefix=False)


def skip_the_request_started_hop() -> None:
    """At the start of each request Django closes the database connections of the thread that
    runs its sync code, and clears their query log: a thread hop for every request. Under this
    server that thread is either new (a sync page's own thread, with nothing to close yet) or
    asgiref's shared thread, whose connections the end of every request closes
    (`request_finished` keeps its receiver). Only the hop would remain, on the way of every hook
    and every decision."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_started.disconnect(reset_queries)


skip_the_request_started_hop()

# Paths only agents use; the API's reference page is a page, in the dashboard's layout.
AGENT_PATHS = ("/hooks/", "/api/v1/", "/v1/")
PAGE_PATHS = ("/api/v1/docs",)


class AgentHandler(ASGIHandler):
    """Django's ASGI handler with `AGENTBOARD_AGENT_MIDDLEWARE` instead of `MIDDLEWARE`.

    It also leaves out the per-request thread that Django starts for the sync parts of a
    request (`ThreadSensitiveContext`): the agent views are async and their database work
    runs on the writer and reading threads, so starting and joining a thread per hook would be
    pure cost. What little sync work remains (the request signals) runs on asgiref's one
    shared sync thread.
    """

    def load_middleware(self, is_async: bool = False) -> None:
        pages = settings.MIDDLEWARE
        settings.MIDDLEWARE = settings.AGENTBOARD_AGENT_MIDDLEWARE
        try:
            super().load_middleware(is_async=is_async)
        finally:
            settings.MIDDLEWARE = pages

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self.handle(scope, receive, send)


class PageHandler(ASGIHandler):
    """Django's ASGI handler for pages; a request for an async view gets no thread of its own.

    Django runs each request inside a `ThreadSensitiveContext`, which starts a thread for its
    sync parts (the request signals, middleware) and, in it, a database connection. That is
    what sync views need. An async view (a reviewer's decision, a countdown cancelled) does
    its database work on the writer and reading threads, so for it the thread would only add
    its start and a connection to every click; its few sync steps run on asgiref's shared
    sync thread, as the agents' requests do.
    """

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        try:
            match = get_resolver().resolve(scope["path"])
        except Resolver404:
            match = None
        # Kept for `resolve_request`, so that the path is resolved once.
        scope[RESOLVED] = (scope["path"], match)
        if match is not None and iscoroutinefunction(match.func):
            await self.handle(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)

    def resolve_request(self, request: HttpRequest) -> ResolverMatch:
        path, match = request.scope.get(RESOLVED, (None, None))
        if match is None or path != request.path_info or hasattr(request, "urlconf"):
            return super().resolve_request(request)
        request.resolver_match = match
        return match


RESOLVED = "agentboard.resolved"


page_application = PageHandler()
agent_application = AgentHandler()


async def http_application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    path = scope["path"]
    if path.startswith(AGENT_PATHS) and not path.startswith(PAGE_PATHS):
        await agent_application(scope, receive, send)
    else:
        await page_application(scope, receive, send)


from dashboard.routing import websocket_application  # noqa: E402

application = ProtocolTypeRouter({"http": http_application, "websocket": websocket_application})
