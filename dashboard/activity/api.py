"""`/api/v1/`: an API agent reports its steps; anyone exports a session's activity."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from channels.db import database_sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest
from django.utils import timezone
from ninja import Query, Router
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from dashboard.activity.models import Step, StepOutcome
from dashboard.activity.selectors import (
    CURSOR_MAX_LENGTH,
    CURSOR_PATTERN,
    MAX_PAGE_SIZE,
    PAGE_SIZE,
    session_steps,
)
from dashboard.activity.services import step_record_for
from dashboard.activity.summaries import step_draft
from dashboard.core.edge import SPACE_CLASS
from dashboard.core.errors import ServiceError
from dashboard.core.origin import origin_note_from
from dashboard.core.services import session_of_owner
from dashboard.core.writer import write
from todos.api import ERRORS, AgentPathId
from todos.schemas import ErrorOut

router = Router(tags=["activity"])

# A call's id and its tool's name must hold a printable character: they name it on the board.
PRINTABLE_PATTERN = rf"^[^\u0000]*[^\u0000-\u001f\u007f-\u009f\ufeff{SPACE_CLASS}][^\u0000]*$"
CallName = Annotated[
    str,
    Field(min_length=1, max_length=200, pattern=PRINTABLE_PATTERN),
]


# Checked by `decode_cursor` (a 400 `invalid_cursor`), which takes every text this matches.
Cursor = Annotated[
    str,
    WithJsonSchema(
        {
            "type": "string",
            "pattern": f"^(?:{CURSOR_PATTERN.removeprefix('^').removesuffix('$')})?$",
            "maxLength": CURSOR_MAX_LENGTH,
        }
    ),
]


class StepIn(BaseModel):
    """One tool call starting (`"status": "running"`) or ending; send both with the same
    `tool_use_id`, or only the end (its start is then its end)."""

    model_config = ConfigDict(extra="forbid")

    tool_use_id: CallName
    tool_name: CallName
    # Only summarised (the command, the file, the URL…) and hashed, never stored as it is.
    tool_input: dict[str, Any] = Field(default_factory=dict)
    status: Literal["running", "ok", "failed", "denied", "interrupted"]
    # For a failed call: its error (the first line is kept).
    error: Annotated[str, Field(max_length=10_000)] = ""


class StepOut(BaseModel):
    id: int
    agent_id: str
    tool_use_id: str
    tool_name: str
    summary: str
    detail: str
    input_hash: str
    started_at: datetime
    ended_at: datetime | None
    duration_seconds: float | None
    outcome: Literal["running", "ok", "failed", "denied", "interrupted"]
    error: str
    waited_on: str


class StepRecordedOut(BaseModel):
    tool_use_id: str
    status: str


class ActivityOut(BaseModel):
    steps: list[StepOut]
    # Pass as `after` for the next page; null on the last one.
    next_cursor: str | None


@router.post(
    "/sessions/{session_id}/agents/{agent_id}/steps",
    response={200: StepRecordedOut, **ERRORS},
    summary="Report a tool call starting or ending",
)
async def step_report(
    request: HttpRequest, session_id: AgentPathId, agent_id: AgentPathId, payload: StepIn
) -> dict:
    """What the agent is doing shows on its card and its session's overview row, and the call
    joins the session's activity (`GET /sessions/{session_id}/activity`)."""
    draft = step_draft(
        tool_use_id=payload.tool_use_id,
        tool_name=payload.tool_name,
        tool_input=payload.tool_input,
        at=timezone.now(),
        outcome=payload.status,
        error=payload.error,
    )
    if draft is None:
        raise ServiceError(
            "validation_error", "Send a tool_use_id and a tool_name of plain text.", status=422
        )
    await write(
        step_record_for, owner=request.auth, session_id=session_id, agent_id=agent_id, step=draft
    )
    await origin_note_from(request, owner=request.auth, session_id=session_id)
    return {"tool_use_id": draft.tool_use_id, "status": draft.outcome}


@router.get(
    "/sessions/{session_id}/activity",
    response={200: ActivityOut, 400: ErrorOut, 401: ErrorOut, 404: ErrorOut, 422: ErrorOut},
    summary="A session's steps, oldest first, a page at a time",
)
async def activity_export(
    request: HttpRequest,
    session_id: str,
    after: Annotated[
        Cursor | None,
        Query(None, description="The `next_cursor` of the page before; empty for the first."),
    ] = None,
    agent_id: Annotated[str | None, Query(None, description="Only this agent's steps.")] = None,
    tool: Annotated[str | None, Query(None, description="Only this tool's, e.g. `Bash`.")] = None,
    failures: Annotated[bool, Query(False, description="Only failed steps.")] = False,
    limit: Annotated[int, Query(PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)] = PAGE_SIZE,
) -> dict:
    """Every tool call of every agent of the session (kept AGENTBOARD_ACTIVITY_DAYS days).
    Only sessions reported with your token; any other id is 404."""
    return await database_sync_to_async(_activity)(
        owner=request.auth,
        session_id=session_id,
        after=after,
        agent_id=agent_id,
        tool=tool,
        failures_only=failures,
        limit=limit,
    )


def _activity(
    *, owner: AbstractBaseUser, session_id: str, after: str | None, **filters: Any
) -> dict:
    session = session_of_owner(owner=owner, session_id=session_id)
    try:
        page = session_steps(session=session, after=after, **filters)
    except ValueError:
        raise ServiceError(
            "invalid_cursor",
            "The cursor is not one this list handed out; start again without `after`.",
            status=400,
        ) from None
    return {"steps": [_step_out(step) for step in page.steps], "next_cursor": page.next_cursor}


def _step_out(step: Step) -> dict[str, Any]:
    return {
        "id": step.pk,
        "agent_id": step.agent.agent_id,
        "tool_use_id": step.tool_use_id,
        "tool_name": step.tool_name,
        "summary": step.summary,
        "detail": step.detail,
        "input_hash": step.input_hash,
        "started_at": step.started_at,
        "ended_at": step.ended_at,
        "duration_seconds": step.duration_seconds,
        "outcome": StepOutcome(step.outcome).value,
        "error": step.error,
        "waited_on": step.waited_on,
    }
