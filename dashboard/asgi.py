"""ASGI entry point: HTTP through Django, websockets through the channels router."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from channels.routing import ProtocolTypeRouter
from django.core.asgi import get_asgi_application

django_application = get_asgi_application()

from dashboard.routing import websocket_application  # noqa: E402

application = ProtocolTypeRouter({"http": django_application, "websocket": websocket_application})
