"""Steering in the agent API: a reviewer's token messages, pauses, resumes and stops agents as
the board's buttons do; an agent of your own reads the messages queued for it."""

from __future__ import annotations

from typing import Annotated

from channels.db import database_sync_to_async
from django.http import HttpRequest
from ninja import Path, Query, Router
from ninja.responses import Status
from pydantic import BaseModel, ConfigDict, Field

from dashboard.core.audit import Via
from dashboard.core.edge import MAX_INTEGER, SPACE_CLASS
from dashboard.core.writer import write
from dashboard.models import Agent
from dashboard.steering import services
from dashboard.steering.models import CLAIM_KEY_PATTERN, MAX_TEXT_CHARS, Directive
from todos.api import ERRORS, AgentPathId
from todos.schemas import ErrorOut

router = Router(tags=["steering"])

STEER_ERRORS = {**ERRORS, 404: ErrorOut}
ProjectId = Annotated[int, Path(ge=1, le=MAX_INTEGER)]

# What `services.checked_text` accepts, published: once stripped, no control character but a
# line break or a tab (a message must also hold something else than whitespace).
_CONTROL = r"\u0000-\u0008\u000b-\u001f"
_STRIPPED_TEXT = rf"[^{_CONTROL}]*[^{_CONTROL}{SPACE_CLASS}]"
MESSAGE_PATTERN = rf"^[{SPACE_CLASS}]*{_STRIPPED_TEXT}[{SPACE_CLASS}]*$"
REASON_PATTERN = rf"^[{SPACE_CLASS}]*(?:{_STRIPPED_TEXT})?[{SPACE_CLASS}]*$"


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=MAX_TEXT_CHARS, json_schema_extra={"pattern": MESSAGE_PATTERN})


class ReasonIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(
        default="", max_length=MAX_TEXT_CHARS, json_schema_extra={"pattern": REASON_PATTERN}
    )


class SteeredOut(BaseModel):
    agents: int = Field(description="How many running agents it reached.")
    unchanged: int = Field(description="How many were already as asked (paused, not paused).")


class QueuedMessageOut(BaseModel):
    id: int
    text: str
    sent_by: str
    sent_at: str


class QueuedMessagesOut(BaseModel):
    messages: list[QueuedMessageOut]


def _via(request: HttpRequest) -> Via:
    return Via(surface="API", address=request.META.get("REMOTE_ADDR"))


def _out(steered: services.Steered) -> dict[str, int]:
    return {"agents": steered.agents, "unchanged": steered.unchanged}


async def _message(request: HttpRequest, target: services.Target, text: str) -> Status:
    steered = await write(
        services.message_send, user=request.auth, target=target, text=text, via=_via(request)
    )
    return Status(201, _out(steered))


async def _stop(request: HttpRequest, target: services.Target, reason: str) -> dict:
    steered = await write(
        services.stop_send, user=request.auth, target=target, reason=reason, via=_via(request)
    )
    return _out(steered)


async def _pause(request: HttpRequest, target: services.Target, reason: str) -> dict:
    steered = await write(
        services.pause, user=request.auth, target=target, reason=reason, via=_via(request)
    )
    return _out(steered)


async def _resume(request: HttpRequest, target: services.Target) -> dict:
    steered = await write(services.resume, user=request.auth, target=target, via=_via(request))
    return _out(steered)


# --- one agent -------------------------------------------------------------------------------

AGENT = "/sessions/{session_id}/agents/{agent_id}"


@router.post(
    f"{AGENT}/messages", response={201: SteeredOut, **STEER_ERRORS}, summary="Message an agent"
)
async def agent_message(
    request: HttpRequest, session_id: AgentPathId, agent_id: AgentPathId, payload: MessageIn
) -> Status:
    """Queued for the agent; its model reads it at its next hook, once."""
    return await _message(request, services.Target(session_id, agent_id), payload.text)


@router.get(
    f"{AGENT}/messages",
    response={200: QueuedMessagesOut, **STEER_ERRORS},
    summary="The messages queued for an agent",
)
async def agent_messages(
    request: HttpRequest,
    session_id: AgentPathId,
    agent_id: AgentPathId,
    claim: Annotated[
        str,
        Query(
            "",
            pattern=CLAIM_KEY_PATTERN,
            description=(
                "A name for this read (letters, digits, `-`, `_`; at most 64), kept until an "
                "answer arrives: a retry with the same name is answered with what the lost "
                "answer carried, then with anything queued since."
            ),
        ),
    ] = "",
) -> dict:
    """For an agent of your own: the session's owner reads what is queued for it, and each
    message read is then delivered (it is handed out once). Anyone else who may steer the
    agent sees what still waits, without taking it."""
    return await _messages_read(request.auth, session_id, agent_id, claim)


async def _messages_read(user: object, session_id: str, agent_id: str, claim: str) -> dict:
    agent = (
        await database_sync_to_async(services.targets_resolve)(
            user=user, target=services.Target(session_id, agent_id)
        )
    )[0]
    if agent.session.owner_id == getattr(user, "pk", None):
        claimed = await write(
            services.messages_take, agent_pk=agent.pk, via="GET /messages (API)", key=claim
        )
        directives = claimed.value
    else:
        directives = await database_sync_to_async(_queued)(agent)
    return {
        "messages": [
            {
                "id": directive.pk,
                "text": directive.text,
                "sent_by": directive.created_by_name,
                "sent_at": directive.created_at.isoformat(),
            }
            for directive in directives
        ]
    }


def _queued(agent: Agent) -> list[Directive]:
    return list(
        Directive.objects.filter(
            agent=agent, kind=Directive.Kind.MESSAGE, state=Directive.State.QUEUED
        ).order_by("created_at", "pk")
    )


@router.post(f"{AGENT}/stop", response={200: SteeredOut, **STEER_ERRORS}, summary="Stop an agent")
async def agent_stop(
    request: HttpRequest, session_id: AgentPathId, agent_id: AgentPathId, payload: ReasonIn
) -> dict:
    """Its turn ends at its next hook; its developer's next prompt runs normally."""
    return await _stop(request, services.Target(session_id, agent_id), payload.reason)


@router.post(f"{AGENT}/pause", response={200: SteeredOut, **STEER_ERRORS}, summary="Pause an agent")
async def agent_pause(
    request: HttpRequest, session_id: AgentPathId, agent_id: AgentPathId, payload: ReasonIn
) -> dict:
    """Its tool calls are held until a resume (or refused with the reason once its hook can
    wait no longer)."""
    return await _pause(request, services.Target(session_id, agent_id), payload.reason)


@router.post(
    f"{AGENT}/resume", response={200: SteeredOut, **STEER_ERRORS}, summary="Resume an agent"
)
async def agent_resume(
    request: HttpRequest, session_id: AgentPathId, agent_id: AgentPathId
) -> dict:
    return await _resume(request, services.Target(session_id, agent_id))


# --- every running agent of a session --------------------------------------------------------

SESSION = "/sessions/{session_id}"


@router.post(
    f"{SESSION}/messages",
    response={201: SteeredOut, **STEER_ERRORS},
    summary="Message every running agent of a session",
)
async def session_message(
    request: HttpRequest, session_id: AgentPathId, payload: MessageIn
) -> Status:
    return await _message(request, services.Target(session_id), payload.text)


@router.post(
    f"{SESSION}/stop",
    response={200: SteeredOut, **STEER_ERRORS},
    summary="Stop every running agent of a session",
)
async def session_stop(request: HttpRequest, session_id: AgentPathId, payload: ReasonIn) -> dict:
    return await _stop(request, services.Target(session_id), payload.reason)


@router.post(
    f"{SESSION}/pause",
    response={200: SteeredOut, **STEER_ERRORS},
    summary="Pause every running agent of a session",
)
async def session_pause(request: HttpRequest, session_id: AgentPathId, payload: ReasonIn) -> dict:
    return await _pause(request, services.Target(session_id), payload.reason)


@router.post(
    f"{SESSION}/resume",
    response={200: SteeredOut, **STEER_ERRORS},
    summary="Resume every paused agent of a session",
)
async def session_resume(request: HttpRequest, session_id: AgentPathId) -> dict:
    return await _resume(request, services.Target(session_id))


# --- every running agent of a project --------------------------------------------------------


@router.post(
    "/projects/{project_id}/pause",
    response={200: SteeredOut, **STEER_ERRORS},
    summary="Pause every running agent of a project",
)
async def project_pause(request: HttpRequest, project_id: ProjectId, payload: ReasonIn) -> dict:
    """A freeze during an incident or a deploy: every agent you may steer in the project."""
    return await _pause(request, services.Target(project_pk=project_id), payload.reason)


@router.post(
    "/projects/{project_id}/resume",
    response={200: SteeredOut, **STEER_ERRORS},
    summary="Resume every paused agent of a project",
)
async def project_resume(request: HttpRequest, project_id: ProjectId) -> dict:
    return await _resume(request, services.Target(project_pk=project_id))
