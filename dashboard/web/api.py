"""The agent HTTP API (`/api/v1/`): bearer-token auth, one error shape, OpenAPI at
/openapi.json (read as a page at /docs, `dashboard.web.api_docs`)."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.utils.datastructures import MultiValueDict
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.security import HttpBearer
from pydantic import BaseModel

from dashboard.core.edge import load_json
from dashboard.core.errors import (
    ServiceError,
    first_error_sentence,
    internal_error,
    pydantic_detail,
    unauthenticated,
)
from dashboard.core.services import token_owner
from dashboard.core.waits import HELD_STOP_EVENTS, ServerWaits
from todos.schemas import ErrorOut

logger = logging.getLogger(__name__)


class BearerToken(HttpBearer):
    # Every operation is async: the token check awaits the cache, with no thread hop when warm.
    is_async = True

    async def authenticate(self, request: HttpRequest, token: str) -> object | None:
        return await token_owner(token.strip())


class EdgeParser(Parser):
    """Request bodies cross the same edge as hook input and socket frames."""

    def parse_body(self, request: HttpRequest) -> Any:
        return load_json(request.body, what="request body")

    def parse_querydict(
        self, data: MultiValueDict, list_fields: list[str], request: HttpRequest
    ) -> dict[str, Any]:
        """A query parameter that takes one value, given twice (`?until=a&until=b`), is
        refused rather than read as its last value."""
        repeated = [key for key in data if key not in list_fields and len(data.getlist(key)) > 1]
        if repeated:
            raise ValidationError(
                [
                    {"loc": ["query", key], "msg": "Give this parameter once, not several times"}
                    for key in repeated
                ]
            )
        return super().parse_querydict(data, list_fields, request)


api = NinjaAPI(
    title="Agentboard agent API",
    version="1",
    description=(
        "Agents report their todo lists and submit plans here. Authenticate with "
        "`Authorization: Bearer <token>` (create one with `python manage.py create_token`). "
        'Errors are `{"error": {"code", "message", "detail"}}`.'
    ),
    auth=BearerToken(),
    urls_namespace="api",
    # The reference page is the dashboard's own (dashboard.web.api_docs), in its layout.
    docs_url=None,
    parser=EdgeParser(),
)

STATUS_CODES = {
    400: "malformed_json",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
}


def error_response(request: HttpRequest, error: ServiceError) -> HttpResponse:
    return api.create_response(request, {"error": error.as_dict()}, status=error.status)


@api.exception_handler(ServiceError)
def on_service_error(request: HttpRequest, exc: ServiceError) -> HttpResponse:
    return error_response(request, exc)


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    detail = []
    for item in pydantic_detail(exc.errors):
        loc = item["loc"]
        # Drop ninja's parameter name: ["body", "payload", "todos", 0] -> ["body", "todos", 0].
        if len(loc) > 1 and loc[0] == "body" and loc[1] == "payload":
            loc = [loc[0], *loc[2:]]
        detail.append({"loc": loc, "msg": item["msg"]})
    return error_response(
        request, ServiceError("validation_error", first_error_sentence(detail), detail=detail)
    )


@api.exception_handler(AuthenticationError)
def on_authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error_response(
        request,
        unauthenticated(),
    )


@api.exception_handler(RequestDataTooBig)
def on_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:

    limit = settings.AGENTBOARD_MAX_BODY_BYTES
    return error_response(
        request,
        ServiceError(
            "payload_too_large",
            f"The request body is larger than the {limit} bytes this server accepts.",
            status=413,
        ),
    )


@api.exception_handler(Exception)
def on_unexpected_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    # An agent reads JSON, never Django's error page; the traceback goes to the log.
    logger.error("an API request failed: %s", request.path, exc_info=exc)
    return error_response(request, internal_error())


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, ServiceError):  # the body parser's refusal, wrapped by ninja
        return error_response(request, exc.__cause__)
    code = STATUS_CODES.get(exc.status_code, "error")
    message = (
        "The request body is not valid JSON."
        if exc.status_code == 400
        else f"{exc.message.rstrip('.')}."
    )
    return error_response(request, ServiceError(code, message, status=exc.status_code))


class HookTimeoutsOut(BaseModel):
    Stop: int
    SubagentStop: int
    PermissionRequest: int
    other: int


class WaitsOut(BaseModel):
    continuation_countdown_seconds: float
    plan_wait_seconds: float
    permission_wait_seconds: float
    hook_timeouts: HookTimeoutsOut


def configured_waits() -> ServerWaits:
    return ServerWaits(
        countdown=settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS,
        plan=settings.AGENTBOARD_PLAN_HOOK_WAIT_SECONDS,
        permission=settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS,
    )


@api.get("/waits", response={200: WaitsOut, 401: ErrorOut}, tags=["agents"])
async def waits(request: HttpRequest) -> dict[str, Any]:
    """How long this server holds a hook (a continuation countdown, a plan's or a tool's
    permission request), and the hook timeouts to install for them (in seconds): the
    installers read it. A hook that says its own timeout (`X-Agentboard-Hook-Timeout`) is
    never held longer than that, less a few seconds."""
    current = configured_waits()
    events = [*HELD_STOP_EVENTS, "PermissionRequest", "other"]
    return {
        "continuation_countdown_seconds": current.countdown,
        "plan_wait_seconds": current.plan,
        "permission_wait_seconds": current.permission,
        "hook_timeouts": {event: current.timeout_for(event) for event in events},
    }


def _register_routers() -> None:
    from dashboard.activity.api import router as activity_router
    from dashboard.steering.api import router as steering_router
    from planmode.api import router as plans_router
    from todos.api import router as todos_router

    api.add_router("", todos_router)
    api.add_router("", plans_router)
    api.add_router("", activity_router)
    api.add_router("", steering_router)


_register_routers()
