from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    """A refusal a client can act on: a stable code, one clear sentence, an HTTP status."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int = 422,
        detail: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.detail = detail or []

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "detail": self.detail}


def unauthenticated() -> ServiceError:
    """The refusal for a missing, unknown or revoked agent token (HTTP API and hooks)."""
    return ServiceError(
        "unauthenticated",
        "A valid agent token is required: send 'Authorization: Bearer <token>' "
        "(create one with 'python manage.py create_token <username>').",
        status=401,
    )


def internal_error() -> ServiceError:
    """The answer to a request that failed on the server's side (the error is logged)."""
    return ServiceError(
        "internal_error",
        "The server failed to handle this request and logged why; send it again later.",
        status=500,
    )


def pydantic_detail(errors: list[Any]) -> list[dict[str, Any]]:
    """Pydantic errors reduced to the documented `{"loc", "msg"}` pairs."""
    return [
        {"loc": list(error["loc"]), "msg": error["msg"].removeprefix("Value error, ")}
        for error in errors
    ]


def first_error_sentence(detail: list[dict[str, Any]]) -> str:
    if not detail:
        return "The request is not valid."
    first = detail[0]
    where = ".".join(str(part) for part in first["loc"]) or "body"
    more = f" ({len(detail) - 1} more problem(s) listed in detail)" if len(detail) > 1 else ""
    return f"{where}: {first['msg']}{more}."
