"""Codex CLI hook inputs, validated leniently like Claude Code's (`claude_code.schemas`):
Codex adds fields between versions (`turn_id`, `model`, `transcript_path`), so unknown fields
pass and only what Agentboard uses is required and checked.

Codex 0.169.0 sends the same field names as Claude Code for the events Agentboard hooks:
`session_id`, `hook_event_name`, `cwd`, `permission_mode`, `tool_name`, `tool_input`,
`tool_use_id`, `prompt`, `stop_hook_active`. Its checklist is the `update_plan` tool, whose
input is `{"plan": [{"step", "status"}], "explanation"?}`.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, StrictInt

from dashboard.integrations.claude_code.schemas import (
    HookInput,
    Lenient,
    PermissionRequestInput,
    ToolHookInput,
)
from dashboard.models import Client
from todos.schemas import Content

PLAN_TOOL = "update_plan"


class CodexHookInput(HookInput):
    client: ClassVar[str] = Client.CODEX

    # Not sent by Codex itself: `agentboard codex-hook` adds a command's exit code to its
    # PostToolUse, read from Codex's transcript (the hook input has only the output).
    exit_code: StrictInt | None = None


class CodexToolInput(ToolHookInput):
    client: ClassVar[str] = Client.CODEX


class CodexPermissionRequestInput(PermissionRequestInput):
    """Codex asks before running a command outside its sandbox: `tool_name` "Bash",
    `tool_input` `{"command", "description"?}` (the model's justification)."""

    client: ClassVar[str] = Client.CODEX


# Codex's tool takes `in_progress`; its app-server events spell the same status `inProgress`.
PlanStatus = Literal["pending", "in_progress", "inProgress", "completed"]


class PlanStep(Lenient):
    step: Content
    status: PlanStatus

    def as_todo(self) -> dict[str, str]:
        status = "in_progress" if self.status == "inProgress" else self.status
        return {"content": self.step, "status": status}


class UpdatePlanToolInput(Lenient):
    # The length of the list is checked as any todo list's, once converted.
    plan: list[PlanStep] = Field(default_factory=list)
