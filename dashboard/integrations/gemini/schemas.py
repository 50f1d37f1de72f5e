"""Gemini CLI hook inputs, validated leniently like Claude Code's (`claude_code.schemas`).

Gemini CLI 0.61.0 sends `session_id`, `transcript_path`, `cwd`, `hook_event_name` and
`timestamp` with every event, and per event: `source` (SessionStart), `reason` (SessionEnd),
`prompt` (BeforeAgent), `prompt`, `prompt_response` and `stop_hook_active` (AfterAgent),
`tool_name`, `tool_input` and (AfterTool) `tool_response` `{llmContent, returnDisplay, error?}`,
`notification_type`, `message` and `details` (Notification), `trigger` (PreCompress).

Its tool calls carry no id in the hook input: `hooks.call_id` numbers them. Its checklist is the
`write_todos` tool, whose input is `{"todos": [{"description", "status"}]}`.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from dashboard.integrations.claude_code.schemas import (
    HookInput,
    Lenient,
    PermissionRequestInput,
    ToolHookInput,
)
from dashboard.models import Client
from todos.schemas import Content

TODO_TOOL = "write_todos"


class GeminiHookInput(HookInput):
    client: ClassVar[str] = Client.GEMINI


class GeminiToolInput(ToolHookInput):
    client: ClassVar[str] = Client.GEMINI


class GeminiPermissionRequestInput(PermissionRequestInput):
    """A BeforeTool of a tool Gemini CLI asks about (a shell command, a file write or edit, a
    web fetch, an MCP tool), held for the inbox when install-gemini --approvals installed it."""

    client: ClassVar[str] = Client.GEMINI


# Gemini's statuses; "blocked" (the agent cannot go on with it) stays open on the board.
TodoStatus = Literal["pending", "in_progress", "completed", "cancelled", "blocked"]


class GeminiTodo(Lenient):
    description: Content
    status: TodoStatus

    def as_todo(self) -> dict[str, str]:
        status = "pending" if self.status == "blocked" else self.status
        return {"content": self.description, "status": status}


class WriteTodosToolInput(Lenient):
    # The length of the list is checked as any todo list's, once converted.
    todos: list[GeminiTodo] = Field(default_factory=list)
