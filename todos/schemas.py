"""Wire models for TodoWrite / TodoRead, shared by the HTTP API, the agent socket and hooks."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field

from dashboard.core.edge import column_length, text_or_integer_type, text_type
from todos.models import Todo

Status = Literal["pending", "in_progress", "completed", "cancelled"]
Priority = Literal["high", "medium", "low"]

# What an item's texts may be; the same types check the Task tools' subjects and ids.
Content = text_type(blank="must not be empty")
ActiveForm = text_type(blank="must not be empty when given")
# An empty id would be stored as "no id" and vanish from the list read back.
TodoId = text_or_integer_type(
    max_length=column_length(Todo, "external_id"), blank="must not be empty when given"
)


class TodoItem(BaseModel):
    """One item, in the current `{content, status, activeForm}` shape or the older
    `{id, content, status, priority}` one (opencode sends `{content, status, priority}`)."""

    # Agents add fields between versions; unknown item fields are ignored, not refused.
    model_config = ConfigDict(extra="ignore")

    content: Content
    status: Status
    activeForm: ActiveForm | None = None
    id: TodoId | None = None
    priority: Priority | None = None

    def as_wire(self) -> dict[str, str]:
        """The normalized dict stored in revisions and returned to agents."""
        wire: dict[str, str] = {"content": self.content, "status": self.status}
        if self.activeForm is not None:
            wire["activeForm"] = self.activeForm
        if self.id is not None:
            wire["id"] = str(self.id)
        if self.priority is not None:
            wire["priority"] = self.priority
        return wire


# A list longer than this is refused (the board shows a bounded part of any list).
TodoList = Annotated[list[TodoItem], Field(max_length=settings.AGENTBOARD_MAX_TODOS)]


class TodoWriteIn(BaseModel):
    """TodoWrite input: the complete new list, every time."""

    model_config = ConfigDict(extra="forbid")

    todos: TodoList


class Progress(BaseModel):
    completed: int
    in_progress: int
    pending: int
    cancelled: int
    total: int


class TodoOut(BaseModel):
    content: str
    status: Status
    activeForm: str | None = None
    id: str | None = None
    priority: Priority | None = None


class TodoWriteOut(BaseModel):
    revision: int
    old_todos: list[TodoOut]
    new_todos: list[TodoOut]
    progress: Progress
    rendered: str


class TodoReadOut(BaseModel):
    revision: int
    todos: list[TodoOut]
    progress: Progress


class AgentOut(BaseModel):
    agent_id: str
    agent_type: str = Field(
        description="The subagent's type (e.g. Explore); empty for the main agent."
    )
    main: bool
    status: Literal["running", "stopped"]
    revision: int
    todos: list[TodoOut]
    progress: Progress


class SessionOut(BaseModel):
    session_id: str
    project: str
    # Where it runs, as its agent's side reported it; empty while unknown.
    repository: str = Field("", description="The normalized repository, e.g. github.com/acme/shop.")
    host: str = Field("", description="The machine's host name.")
    cwd: str
    permission_mode: str
    started_at: datetime
    last_seen_at: datetime
    ended_at: datetime | None = Field(None, description="Absent while the session runs.")
    agents: list[AgentOut]
    progress: Progress = Field(description="All agents' items together.")


class ErrorBody(BaseModel):
    code: str
    message: str
    detail: list[dict] = Field(default_factory=list)


class ErrorOut(BaseModel):
    error: ErrorBody
