"""What the Agentboard plugin for opencode sends to `POST /hooks/opencode`.

The plugin forwards opencode's own bus events as they are (`{"type", "properties"}`), plus four
of its own, `agentboard.activity`, `agentboard.other_enforcer`, `agentboard.tool` and
`agentboard.gate`. Validated
leniently like Claude Code's hooks: opencode adds fields between versions, so unknown fields pass
and only what Agentboard uses is required and checked as strictly as any API body.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, field_validator

from dashboard.core.edge import Cwd, column_length, storable_tree, text_type
from dashboard.models import Session
from todos.schemas import TodoList

SessionId = text_type(max_length=column_length(Session, "session_id"), blank="must not be empty")
Title = text_type()
Name = text_type(max_length=column_length(Session, "other_enforcer"), blank="must not be empty")
# opencode's permission request ids ("per_…"): only echoed back to the plugin.
RequestId = text_type(max_length=200, blank="must not be empty")
Text = text_type(max_length=10_000)


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class EventType(Lenient):
    """What picks the handler of any event."""

    type: StrictStr


class SessionRef(Lenient):
    sessionID: SessionId


class SessionInfo(Lenient):
    id: SessionId
    directory: Cwd = ""
    title: Title = ""
    # Set on a subagent's session (opencode's task tool): the session that started it.
    parentID: SessionId | None = None


class SessionInfoProperties(Lenient):
    info: SessionInfo


class SessionEvent(Lenient):
    type: Literal["session.created", "session.updated", "session.deleted"]
    properties: SessionInfoProperties


class TodoProperties(SessionRef):
    # opencode's items are {content, status, priority} (status adds "cancelled"; some
    # versions add an id): the shapes a TodoWrite accepts.
    todos: TodoList


class TodoEvent(Lenient):
    type: Literal["todo.updated"]
    properties: TodoProperties


class IdleEvent(Lenient):
    type: Literal["session.idle"]
    properties: SessionRef


class ErrorProperties(Lenient):
    # opencode reports some errors outside any session.
    sessionID: SessionId | None = None


class ErrorEvent(Lenient):
    type: Literal["session.error"]
    properties: ErrorProperties


class ActivityProperties(SessionRef):
    # "prompt": someone sent the session a message (not the continuation prompt itself);
    # "step": the agent streamed or used a tool while a countdown ran.
    kind: Literal["prompt", "step"]


class ActivityEvent(Lenient):
    type: Literal["agentboard.activity"]
    properties: ActivityProperties


class OtherEnforcerProperties(SessionRef):
    name: Name


class OtherEnforcerEvent(Lenient):
    type: Literal["agentboard.other_enforcer"]
    properties: OtherEnforcerProperties


class ToolProperties(SessionRef):
    # opencode's id of the call, and its tool ("bash", "edit", an MCP server's "github_…").
    callID: RequestId
    tool: Annotated[str, Field(min_length=1, max_length=200)]
    # "running" when it starts, "completed" or "error" when it ends.
    status: Literal["running", "completed", "error"]
    # Its arguments: only summarised and hashed, never stored as they are.
    input: Any = None
    error: Any = None
    # A command's exit code (bash's), when it has one: "completed" says only that it ran.
    exit: StrictInt | None = None


class ToolEvent(Lenient):
    """A tool call starting or ending, from opencode's tool parts (the plugin's own event)."""

    type: Literal["agentboard.tool"]
    properties: ToolProperties


class GateProperties(SessionRef):
    callID: RequestId
    tool: Annotated[str, Field(min_length=1, max_length=200)]


class GateEvent(Lenient):
    """A tool call about to run in a session the board said is gated (its budget is spent):
    held until the board answers whether it may run (the plugin's own event)."""

    type: Literal["agentboard.gate"]
    properties: GateProperties


class PermissionProperties(SessionRef):
    id: RequestId
    # What opencode asks to do: "bash", "edit", "webfetch", ...
    permission: Annotated[str, Field(min_length=1, max_length=100)]
    patterns: list[Text] = Field(default_factory=list, max_length=100)
    # The patterns an "always" answer allows from now on.
    always: list[Text] = Field(default_factory=list, max_length=100)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("metadata")
    @classmethod
    def storable_texts(cls, value: dict[str, Any]) -> dict[str, Any]:
        return storable_tree(value)


class PermissionEvent(Lenient):
    type: Literal["permission.asked"]
    properties: PermissionProperties


Event = Annotated[
    SessionEvent
    | TodoEvent
    | IdleEvent
    | ErrorEvent
    | ActivityEvent
    | OtherEnforcerEvent
    | ToolEvent
    | GateEvent
    | PermissionEvent,
    Field(discriminator="type"),
]
HANDLED = frozenset(
    {
        "session.created",
        "session.updated",
        "session.deleted",
        "todo.updated",
        "session.idle",
        "session.error",
        "agentboard.activity",
        "agentboard.other_enforcer",
        "agentboard.tool",
        "agentboard.gate",
        "permission.asked",
    }
)


class Envelope(BaseModel):
    event: Event
