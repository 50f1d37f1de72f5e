from __future__ import annotations

from typing import Annotated

from channels.db import database_sync_to_async
from django.http import HttpRequest
from ninja import Path, Query, Router
from pydantic import WithJsonSchema

from dashboard.core.edge import AgentType, Cwd, text_problem
from dashboard.core.errors import ServiceError
from dashboard.core.origin import origin_note_from
from dashboard.core.services import ID_LENGTH, ID_PATTERN
from dashboard.core.writer import write
from dashboard.models import IDEMPOTENCY_KEY_LENGTH
from todos import services
from todos.models import TodoRevision
from todos.schemas import ErrorOut, SessionOut, TodoReadOut, TodoWriteIn, TodoWriteOut

router = Router(tags=["todos"])

ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 409: ErrorOut, 413: ErrorOut, 422: ErrorOut}

# Checked by the services (`invalid_id`); published here so clients know the rule.
AgentPathId = Annotated[
    str,
    Path(),
    WithJsonSchema({"type": "string", "pattern": ID_PATTERN.pattern, "maxLength": ID_LENGTH}),
]


def idempotency_key(request: HttpRequest) -> str | None:
    key = request.headers.get("Idempotency-Key")
    if key is not None and (
        not 1 <= len(key) <= IDEMPOTENCY_KEY_LENGTH or text_problem(key) is not None
    ):
        raise ServiceError(
            "invalid_idempotency_key",
            f"The Idempotency-Key header must be 1 to {IDEMPOTENCY_KEY_LENGTH} characters "
            "of text without NUL characters.",
        )
    return key


@router.put(
    "/sessions/{session_id}/agents/{agent_id}/todos",
    response={200: TodoWriteOut, **ERRORS},
    summary="TodoWrite: replace the agent's list",
    exclude_none=True,
)
async def todo_write(
    request: HttpRequest,
    session_id: AgentPathId,
    agent_id: AgentPathId,
    payload: TodoWriteIn,
    agent_type: Annotated[
        AgentType, Query("", description="Subagent type shown on its card.")
    ] = "",
    cwd: Annotated[Cwd, Query("", description="Working directory; names the project.")] = "",
) -> dict:
    """Send the complete new list every time. When every item is completed the stored list
    empties (the write stays in the history). `agent_id == session_id` is the main agent;
    any other id is a subagent, labelled on the board by `agent_type` (e.g. `Explore`)."""
    result = await write(
        services.todo_list_replace,
        owner=request.auth,
        session_id=session_id,
        agent_id=agent_id,
        todos=payload.todos,
        source=TodoRevision.Source.API,
        idempotency_key=idempotency_key(request),
        agent_type=agent_type,
        cwd=cwd,
    )
    await origin_note_from(request, owner=request.auth, session_id=session_id)
    return result.as_wire()


@router.get(
    "/sessions/{session_id}/agents/{agent_id}/todos",
    response={200: TodoReadOut, **ERRORS},
    summary="TodoRead: the agent's current list",
    exclude_none=True,
)
async def todo_read(request: HttpRequest, session_id: AgentPathId, agent_id: AgentPathId) -> dict:
    return await database_sync_to_async(services.todo_list_read)(
        owner=request.auth, session_id=session_id, agent_id=agent_id
    )


@router.get(
    "/sessions/{session_id}",
    response={200: SessionOut, 401: ErrorOut, 404: ErrorOut},
    summary="A session with every agent's list and progress",
    exclude_none=True,
)
async def session_read(request: HttpRequest, session_id: str) -> dict:
    """Only sessions reported with your token; any other id is 404."""
    return await database_sync_to_async(services.session_read)(
        owner=request.auth, session_id=session_id
    )
