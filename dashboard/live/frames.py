"""Agent socket frames (`/ws/agent/`), validated with pydantic like HTTP bodies."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, TypeAdapter

from dashboard.core.edge import AgentType, Cwd, Pk, ToolUseId
from planmode.schemas import PlanFilePath, PlanMarkdown
from todos.schemas import TodoList

# Echoed in the reply, never stored.
FrameId = StrictStr | StrictInt | None


class Frame(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: FrameId = None


class PingFrame(Frame):
    type: Literal["ping"]


class TodoWriteFrame(Frame):
    type: Literal["todo_write"]
    session_id: StrictStr
    agent_id: StrictStr
    agent_type: AgentType = ""
    cwd: Cwd = ""
    todos: TodoList


class ExitPlanModeFrame(Frame):
    type: Literal["exit_plan_mode"]
    session_id: StrictStr
    agent_id: StrictStr
    plan: PlanMarkdown
    plan_file_path: PlanFilePath | None = None
    agent_type: AgentType = ""


class WatchPlanFrame(Frame):
    type: Literal["watch_plan"]
    plan_id: Pk


class ExpirePlanFrame(Frame):
    """The agent stops waiting for a decision (e.g. its hook timed out): the plan expires."""

    type: Literal["expire_plan"]
    plan_id: Pk


class StepFrame(Frame):
    """The agent took a step (a model turn or tool use); a due reminder follows as `reminder`."""

    type: Literal["step"]
    session_id: StrictStr
    agent_id: StrictStr
    # A step's key is its tool use's id: a step delivered twice counts once.
    key: ToolUseId | None = None


class WatchAgentFrame(Frame):
    """The socket speaks for this agent: what the board says to it is pushed as `message`."""

    type: Literal["watch_agent"]
    session_id: StrictStr
    agent_id: StrictStr
    agent_type: AgentType = ""
    cwd: Cwd = ""


AnyFrame = Annotated[
    PingFrame
    | TodoWriteFrame
    | ExitPlanModeFrame
    | WatchPlanFrame
    | ExpirePlanFrame
    | StepFrame
    | WatchAgentFrame,
    Field(discriminator="type"),
]
FRAME_ADAPTER: TypeAdapter[AnyFrame] = TypeAdapter(AnyFrame)
FRAME_TYPES = (
    "ping",
    "todo_write",
    "exit_plan_mode",
    "watch_plan",
    "expire_plan",
    "step",
    "watch_agent",
)
