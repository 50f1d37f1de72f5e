from __future__ import annotations

from typing import Annotated

from channels.db import database_sync_to_async
from django.http import HttpRequest
from django.urls import reverse
from ninja import Path, Router
from ninja.responses import Status

from dashboard.core.edge import MAX_INTEGER
from dashboard.core.origin import origin_note_from
from dashboard.core.security import public_url
from dashboard.core.writer import write
from planmode import selectors, services
from planmode.models import Plan
from planmode.schemas import PlanStateOut, PlanSubmitIn, PlanSubmitOut
from todos.api import ERRORS, AgentPathId, idempotency_key
from todos.schemas import ErrorOut

router = Router(tags=["plans"])

PLAN_ERRORS = {**ERRORS, 404: ErrorOut}


@router.post(
    "/sessions/{session_id}/agents/{agent_id}/plans",
    response={201: PlanSubmitOut, **PLAN_ERRORS},
    summary="ExitPlanMode: submit a plan for review",
)
async def plan_submit(
    request: HttpRequest, session_id: AgentPathId, agent_id: AgentPathId, payload: PlanSubmitIn
) -> Status:
    """Puts the session in plan mode until a reviewer decides. Each submission of an agent is
    its next revision; an older revision still waiting is withdrawn. Wait for the decision on
    the agent socket (`watch_plan`) or poll `GET /plans/{id}`."""
    submitted = await write(
        services.plan_submit,
        owner=request.auth,
        session_id=session_id,
        agent_id=agent_id,
        plan=payload.plan,
        plan_file_path=payload.plan_file_path,
        source=Plan.Source.API,
        idempotency_key=idempotency_key(request),
    )
    await origin_note_from(request, owner=request.auth, session_id=session_id)
    plan = submitted.plan
    review_url = public_url(
        reverse("plan-review", args=[plan.pk]), host=request.get_host(), secure=request.is_secure()
    )
    body = {
        "id": plan.pk,
        "revision": plan.revision,
        "status": plan.status,
        "review_url": review_url,
    }
    return Status(201, body)


@router.get(
    "/plans/{plan_id}",
    response={200: PlanStateOut, **PLAN_ERRORS},
    summary="A plan's state and the message for the model",
)
async def plan_get(
    request: HttpRequest, plan_id: Annotated[int, Path(ge=1, le=MAX_INTEGER)]
) -> dict:
    """`message` is the text to hand the model as the ExitPlanMode tool result."""
    return await database_sync_to_async(_plan_state_for)(plan_id=plan_id, owner=request.auth)


def _plan_state_for(*, plan_id: int, owner: object) -> dict:
    return services.plan_state(selectors.plan_for_owner(plan_id=plan_id, owner=owner))
