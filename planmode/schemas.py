"""Wire models for plans: what agents send and what they get back."""

from __future__ import annotations

from typing import Literal

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field

from dashboard.core.edge import SPACE_CLASS, column_length, text_type
from planmode.models import Plan

PlanStatusName = Literal[
    "pending", "approved", "rejected", "withdrawn", "expired", "answered_in_terminal"
]

# The service refuses an empty or oversized plan with codes of their own (`empty_plan`,
# `plan_too_large`); the schema publishes both limits.
PlanMarkdown = text_type()
PlanFilePath = text_type(max_length=column_length(Plan, "plan_file_path"))


class PlanSubmitIn(BaseModel):
    """ExitPlanMode: the plan as markdown, and where the agent keeps it as a file, if anywhere."""

    model_config = ConfigDict(extra="forbid")

    plan: PlanMarkdown = Field(
        description="The plan as markdown; it must hold more than whitespace.",
        # The service's limits (422 `empty_plan`, 413 `plan_too_large`), published here. Not
        # blank is said as "not only whitespace": schema-driven generators cannot satisfy the
        # not-blank pattern within a limit this long.
        json_schema_extra={
            "minLength": 1,
            "maxLength": settings.AGENTBOARD_MAX_PLAN_CHARS,
            "not": {"pattern": f"^[{SPACE_CLASS}]*$"},
        },
    )
    plan_file_path: PlanFilePath | None = None


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
