"""Claude Code hook payloads, validated leniently: real payloads carry more fields than these
and change between versions, so unknown fields pass and only what Agentboard uses is required."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from todos.schemas import TodoItem


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class HookInput(Lenient):
    """The fields every hook event carries; `agent_id` only inside a subagent."""

    session_id: StrictStr
    hook_event_name: StrictStr
    cwd: StrictStr = ""
    permission_mode: StrictStr | None = None
    agent_id: StrictStr | None = None
    agent_type: StrictStr | None = None

    @property
    def acting_agent_id(self) -> str:
        """The main agent's id is the session id, as in Claude Code."""
        return self.agent_id or self.session_id


class ToolHookInput(HookInput):
    """PreToolUse, PostToolUse and PermissionRequest."""

    tool_name: StrictStr
    tool_input: dict[str, Any] = Field(default_factory=dict)
    tool_use_id: StrictStr | None = None
    tool_response: Any = None


class TaskEventInput(HookInput):
    """TaskCreated and TaskCompleted."""

    task_id: StrictStr | StrictInt
    task_subject: StrictStr | None = None


class TodoWriteToolInput(Lenient):
    todos: list[TodoItem]


class TaskCreateToolInput(Lenient):
    subject: StrictStr = Field(min_length=1)
    activeForm: StrictStr | None = None


class CreatedTask(Lenient):
    id: StrictStr | StrictInt


class TaskCreateToolResponse(Lenient):
    task: CreatedTask


class TaskUpdateToolInput(Lenient):
    taskId: StrictStr | StrictInt
    status: Literal["pending", "in_progress", "completed", "deleted"] | None = None
    subject: StrictStr | None = None
    activeForm: StrictStr | None = None


class ExitPlanModeToolInput(Lenient):
    plan: StrictStr = Field(min_length=1)
    planFilePath: StrictStr | None = None
