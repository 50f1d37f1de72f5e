"""Claude Code hook payloads, validated leniently: real payloads carry more fields than these
and change between versions, so unknown fields pass and only what Agentboard uses is required.
What it uses is checked as strictly as any API body: types, and text that can be stored."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator

from dashboard.core.edge import (
    AgentType,
    Cwd,
    ToolUseId,
    column_length,
    storable_tree,
    text_type,
)
from dashboard.models import Agent, Client, Session
from planmode.models import PermissionRequest
from planmode.schemas import PlanFilePath
from todos.schemas import ActiveForm, Content, TodoId, TodoList

# Claude Code may report a task without a subject; the handler then adds no item.
TaskSubject = text_type()
PlanText = text_type(blank="must not be empty")
# Only its first line is kept, shortened, as the session's title.
Prompt = text_type()
GitBranch = text_type(max_length=column_length(Session, "branch"))


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class HookEvent(Lenient):
    """What picks the handler of any hook input, whichever event it is."""

    hook_event_name: StrictStr | None = None
    tool_name: StrictStr | None = None


class HookInput(Lenient):
    """The fields every hook event carries; `agent_id` only inside a subagent."""

    # Which agent sends these hooks (not a field of the payload): Codex's inputs subclass these.
    client: ClassVar[str] = Client.CLAUDE_CODE

    session_id: StrictStr
    hook_event_name: StrictStr
    cwd: Cwd = ""
    permission_mode: StrictStr | None = None
    agent_id: StrictStr | None = None
    agent_type: AgentType | None = None
    # Any tool use (PostToolUse of every tool counts as a step).
    tool_use_id: ToolUseId | None = None
    # UserPromptSubmit: the developer's prompt (the first one titles the session).
    prompt: Prompt | None = None
    # Not sent by Claude Code itself: `agentboard hook` adds the branch checked out in `cwd`.
    git_branch: GitBranch | None = None

    @property
    def acting_agent_id(self) -> str:
        """The main agent's id is the session id, as in Claude Code."""
        return self.agent_id or self.session_id


class ToolHookInput(HookInput):
    """PreToolUse, PostToolUse and PermissionRequest of the tools Agentboard handles, whose
    input it stores or echoes: every text in `tool_input` must be storable."""

    tool_name: StrictStr
    tool_input: dict[str, Any] = Field(default_factory=dict)
    tool_response: Any = None

    @field_validator("tool_input")
    @classmethod
    def storable_texts(cls, value: dict[str, Any]) -> dict[str, Any]:
        return storable_tree(value)


class TaskEventInput(HookInput):
    """TaskCreated and TaskCompleted."""

    task_id: TodoId
    task_subject: TaskSubject | None = None


class TodoWriteToolInput(Lenient):
    todos: TodoList


class TaskCreateToolInput(Lenient):
    subject: Content
    activeForm: ActiveForm | None = None


class CreatedTask(Lenient):
    id: TodoId


class TaskCreateToolResponse(Lenient):
    task: CreatedTask


class TaskUpdateToolInput(Lenient):
    taskId: TodoId
    status: Literal["pending", "in_progress", "completed", "deleted"] | None = None
    subject: Content | None = None
    activeForm: ActiveForm | None = None


class ExitPlanModeToolInput(Lenient):
    plan: PlanText
    planFilePath: PlanFilePath | None = None


ToolName = text_type(max_length=column_length(PermissionRequest, "tool_name"), blank="is empty")


class PermissionRequestInput(ToolHookInput):
    """PermissionRequest for any tool: `permission_suggestions` are the "always allow" updates
    Claude Code would offer in its own prompt (kept as sent, to hand back if chosen)."""

    tool_name: ToolName
    permission_suggestions: list[Any] = Field(default_factory=list)

    @field_validator("permission_suggestions")
    @classmethod
    def storable_suggestions(cls, value: list[Any]) -> list[Any]:
        storable_tree({"permission_suggestions": value})
        return value

    @property
    def suggestions(self) -> list[dict[str, Any]]:
        return [item for item in self.permission_suggestions if isinstance(item, dict)]


class CwdChangedInput(HookInput):
    """CwdChanged: the agent's working directory moved (a `cd` that stays, a worktree entered
    or left); `cwd` is already the new one."""

    old_cwd: Cwd = ""
    new_cwd: Cwd = ""


TeammateName = text_type(max_length=column_length(Agent, "agent_type"))


class TeammateIdleInput(HookInput):
    """TeammateIdle: a teammate of an agent team finished its turn and waits for work."""

    teammate_name: TeammateName | None = None
    team_name: TeammateName | None = None
