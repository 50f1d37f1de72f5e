"""Wire models for plans: what agents send and what they get back."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, StrictStr

PlanStatusName = Literal[
    "pending", "approved", "rejected", "withdrawn", "expired", "answered_in_terminal"
]


class PlanSubmitIn(BaseModel):
    """ExitPlanMode: the plan as markdown, and where the agent keeps it as a file, if anywhere."""

    model_config = ConfigDict(extra="forbid")

    plan: StrictStr
    plan_file_path: StrictStr | None = None


class PlanSubmitOut(BaseModel):
    id: int
    revision: int
    status: PlanStatusName
    review_url: str


class PlanStateOut(BaseModel):
    id: int
    session_id: str
    agent_id: str
    revision: int
    status: PlanStatusName
    mode_after: Literal["default", "acceptEdits"] | None
    feedback: str
    decided_by: str | None
    decided_at: str | None
    message: str
