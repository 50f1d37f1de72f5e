"""Agent socket frames (`/ws/agent/`), validated with pydantic like HTTP bodies."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, TypeAdapter

from todos.schemas import TodoItem

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
    agent_type: Annotated[StrictStr, Field(max_length=100)] = ""
    cwd: Annotated[StrictStr, Field(max_length=1000)] = ""
    todos: list[TodoItem]


class ExitPlanModeFrame(Frame):
    type: Literal["exit_plan_mode"]
    session_id: StrictStr
    agent_id: StrictStr
    plan: StrictStr
    plan_file_path: StrictStr | None = None
    agent_type: Annotated[StrictStr, Field(max_length=100)] = ""


class WatchPlanFrame(Frame):
    type: Literal["watch_plan"]
    plan_id: StrictInt


class ExpirePlanFrame(Frame):
    """The agent stops waiting for a decision (e.g. its hook timed out): the plan expires."""

    type: Literal["expire_plan"]
    plan_id: StrictInt


class StepFrame(Frame):
    """The agent took a step (a model turn or tool use); a due reminder follows as `reminder`."""

    type: Literal["step"]
    session_id: StrictStr
    agent_id: StrictStr
    key: Annotated[StrictStr, Field(max_length=200)] | None = None


AnyFrame = Annotated[
    PingFrame | TodoWriteFrame | ExitPlanModeFrame | WatchPlanFrame | ExpirePlanFrame | StepFrame,
    Field(discriminator="type"),
]
FRAME_ADAPTER: TypeAdapter[AnyFrame] = TypeAdapter(AnyFrame)
FRAME_TYPES = ("ping", "todo_write", "exit_plan_mode", "watch_plan", "expire_plan", "step")
