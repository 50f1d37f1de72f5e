from __future__ import annotations

from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from django.urls import path

from dashboard.core.security import BrowserOriginValidator
from dashboard.live.consumers import AgentConsumer, BoardConsumer

websocket_application = URLRouter(
    [
        # Agents authenticate with a bearer token, send no cookies, and may connect from
        # anywhere (most send no Origin at all).
        path("ws/agent/", AgentConsumer.as_asgi()),
        # Browsers use the login cookie, so the page must be one of ours: same scheme, host
        # and port, or a CSRF trusted origin.
        path(
            "ws/board/",
            BrowserOriginValidator(AuthMiddlewareStack(BoardConsumer.as_asgi())),
        ),
    ]
)
