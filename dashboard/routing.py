from __future__ import annotations

from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path

from dashboard.consumers import AgentConsumer, BoardConsumer

websocket_application = URLRouter(
    [
        # Agents authenticate with a bearer token and may connect from anywhere.
        path("ws/agent/", AgentConsumer.as_asgi()),
        # Browsers use the login session, so the origin must be one of ours.
        path(
            "ws/board/",
            AllowedHostsOriginValidator(AuthMiddlewareStack(BoardConsumer.as_asgi())),
        ),
    ]
)
