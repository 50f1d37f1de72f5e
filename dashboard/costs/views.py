"""`POST /v1/metrics` and `POST /v1/logs`: an OTLP/HTTP receiver for the agents' usage.

Authenticated by the agent token (`Authorization: Bearer <token>`, which Claude Code sends
through `OTEL_EXPORTER_OTLP_HEADERS` or its `otelHeadersHelper`). Answers as OTLP/HTTP asks:
the export response in the request's encoding (a `partial_success` naming what was refused),
or a google.rpc.Status with one sentence and the status an exporter acts on (400 and 413 are
not retried, 503 is).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from dashboard.core.errors import ServiceError, unauthenticated
from dashboard.core.services import token_owner
from dashboard.core.writer import write
from dashboard.costs import otlp
from dashboard.costs.services import usage_store
from dashboard.integrations.claude_code.hooks import bearer_token

logger = logging.getLogger(__name__)


def _answer(body: bytes, *, status: int, content_type: str) -> HttpResponse:
    return HttpResponse(body, status=status, content_type=content_type)


def _refusal(message: str, *, status: int, content_type: str) -> HttpResponse:
    return _answer(
        otlp.status_body(message, status=status, content_type=content_type),
        status=status,
        content_type=content_type,
    )


def receiver(signal: otlp.Signal) -> Callable[[HttpRequest], Awaitable[HttpResponse]]:
    @csrf_exempt
    async def view(request: HttpRequest) -> HttpResponse:
        content_type = otlp.media_type(request.content_type or "")
        # A refusal speaks the request's encoding; protobuf when it is neither.
        answer_type = otlp.JSON if content_type == otlp.JSON else otlp.PROTOBUF
        if request.method != "POST":
            return _refusal(
                f"Send OTLP {signal.name} with POST.", status=405, content_type=answer_type
            )
        owner = await token_owner(bearer_token(request))
        if owner is None:
            return _refusal(unauthenticated().message, status=401, content_type=answer_type)
        try:
            message = _read(request, signal, content_type)
            export = otlp.read_usage(signal, message)
            if export.reports:
                refused = await write(
                    usage_store, owner=owner, reports=export.reports, client=export.client
                )
                if refused.value:
                    export = otlp.Export(
                        export.reports,
                        export.rejected + refused.value,
                        export.rejection
                        or "Usage of a session another user's token reported was refused.",
                        export.client,
                    )
        except otlp.BadExport as bad:
            return _refusal(bad.message, status=bad.status, content_type=answer_type)
        except ServiceError as error:
            return _refusal(error.message, status=error.status, content_type=answer_type)
        except Exception:
            logger.exception("an OTLP %s export failed", signal.name)
            return _refusal(
                "The server failed to store this export; it was logged.",
                status=500,
                content_type=answer_type,
            )
        body = otlp.success_body(signal, export, content_type=answer_type)
        return _answer(body, status=200, content_type=answer_type)

    view.__name__ = f"otlp_{signal.name}"
    return view


def _read(request: HttpRequest, signal: otlp.Signal, content_type: str) -> object:
    if content_type not in {otlp.PROTOBUF, otlp.JSON}:
        raise otlp.BadExport(
            f"Send OTLP {signal.name} as {otlp.PROTOBUF} or {otlp.JSON}.", status=415
        )
    limit = settings.AGENTBOARD_OTLP_MAX_BYTES
    too_large = otlp.BadExport(f"The export is larger than the {limit} bytes accepted.", status=413)
    try:
        declared = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        raise otlp.BadExport("The Content-Length header is not a number.") from None
    if declared > limit:
        raise too_large
    # Read past Django's cap for form and JSON bodies: an export batch may be larger.
    body = request.read(limit + 1)
    if len(body) > limit:
        raise too_large
    data = otlp.decompress(body, encoding=request.headers.get("Content-Encoding", ""), limit=limit)
    return otlp.parse(signal, data, content_type=content_type)


otlp_metrics = receiver(otlp.METRICS)
otlp_logs = receiver(otlp.LOGS)
