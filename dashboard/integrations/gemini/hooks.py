"""`POST /hooks/gemini`: Gemini CLI's hook input, forwarded by `agentboard gemini-hook`.

Gemini's events are Claude Code's under other names, so each is read as its Claude Code twin
and goes through the same building blocks (`dashboard.integrations.claude_code.hooks`):
SessionStart and SessionEnd as they are, BeforeAgent as UserPromptSubmit, BeforeTool and
AfterTool as PreToolUse and PostToolUse (PostToolUseFailure when the tool's response has an
error), AfterAgent as Stop, Notification as it is. (PreCompress is not a compaction: Gemini
0.61.0 sends it each time it checks whether to compress, so the list is not re-injected.)
The `write_todos` checklist is the agent's todo list; every tool call is a step of its activity
and counts for the enforcer's reminders.

What Gemini CLI 0.61.0 accepts back:
- SessionStart, BeforeAgent, AfterTool: `hookSpecificOutput.additionalContext` (the
  enforcer's reminders and the re-injected list).
- AfterAgent: `{"decision": "block", "reason": ...}` rejects the turn's end and sends `reason`
  to the model as a new prompt: the continuation enforcer.
- BeforeTool: `{"decision": "deny", "reason": ...}` refuses the call (the model reads `reason`
  as the tool's error), `continue: false` ends the agent's loop. Nothing a BeforeTool says
  skips Gemini's own confirmation ("allow" is ignored), so an allow from the board answers
  `{}`: the call then goes on as Gemini's approval mode says (it runs under --yolo or
  auto_edit, the terminal still asks in the default mode).

What is said from the board (`dashboard.steering`): messages as context on the next AfterTool
or BeforeAgent, or as the prompt that continues an agent at its AfterAgent; a stop ends the
agent's loop at its next BeforeTool or AfterTool (`continue: false`, Gemini shows "Agent
execution stopped by hook: <reason>"); a paused agent's BeforeTool is held until a resume, or
refused (`decision: "deny"`) with who paused it and why.

Gemini's hook input gives a tool call no id: `call_id` numbers the calls of the same tool with
the same input in a session, so a BeforeTool and its AfterTool name the same step.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, JsonResponse

from dashboard.activity.models import Step, StepOutcome
from dashboard.core.changes import Changes, Outcome
from dashboard.core.origin import OriginNote, noted_as_held
from dashboard.core.writer import write, write_behind
from dashboard.integrations.claude_code import hooks as shared
from dashboard.integrations.claude_code.schemas import HookEvent
from dashboard.integrations.gemini.schemas import (
    TODO_TOOL,
    GeminiHookInput,
    GeminiPermissionRequestInput,
    GeminiToolInput,
    WriteTodosToolInput,
)
from dashboard.live.waiting import hold_for, stop_hook_answer
from planmode.models import RequestStatus
from planmode.permissions import permission_expire
from todos import enforcer
from todos.models import Continuation

Output = dict[str, Any]

# Gemini's events, as the Claude Code events they are.
EVENTS = {
    "SessionStart": "SessionStart",
    "SessionEnd": "SessionEnd",
    "BeforeAgent": "UserPromptSubmit",
    "AfterAgent": "Stop",
    "BeforeTool": "PreToolUse",
    "AfterTool": "PostToolUse",
    "Notification": "Notification",
}
# The tools Gemini CLI's default policy asks about before running them (MCP tools too, by
# their `mcp_` prefix): with install-gemini --approvals, their BeforeTool waits for the inbox.
ASKING_TOOLS = frozenset({"run_shell_command", "write_file", "replace", "web_fetch"})
# Added to the hook input by `agentboard gemini-hook --approvals`.
APPROVALS_FIELD = "agentboard_approvals"
CLIENT = "Gemini CLI"


@shared.agent_endpoint("Send hook input with POST.")
async def gemini_hook(request: HttpRequest, owner: AbstractBaseUser) -> JsonResponse:
    payload = shared.read_payload(request)
    note = OriginNote(owner, payload.get("session_id"), request.headers, "Gemini CLI hook")
    with noted_as_held(note):
        output = await _answer(owner, payload)
    await note()
    return JsonResponse(output)


def asks_first(tool_name: str) -> bool:
    """Whether Gemini CLI's default policy asks before running this tool."""
    return tool_name in ASKING_TOOLS or tool_name.startswith("mcp_")


async def _answer(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    picked = shared.validate(HookEvent, payload)
    gemini_event = picked.hook_event_name or ""
    event = EVENTS.get(gemini_event)
    if event is None:
        return {}  # the model's events, PreCompress: nothing for the board
    translated = {**payload, "hook_event_name": event}
    tool = picked.tool_name or ""
    if event in {"PreToolUse", "PostToolUse"}:
        translated = await _as_tool_call(owner, translated)
    if event == "PreToolUse":
        if payload.get(APPROVALS_FIELD) is True and asks_first(tool):
            return await _permission_request(owner, translated)
        return _as_before_tool(await _tool_started(owner, translated))
    if event == "Stop":
        return await _stop(owner, translated)
    if event == "UserPromptSubmit" and (await write(continued, owner=owner, hook=payload)).value:
        # Gemini sends the continuation it was given through BeforeAgent as if a person had
        # typed it; Claude Code and Codex send no prompt event for theirs. Counted as a new
        # prompt it would reset the enforcer's count of continuations in a row.
        return {}
    if translated["hook_event_name"] == "PostToolUse" and tool == TODO_TOOL:
        return await _todos_written(owner, translated)
    return _renamed(await _lifecycle(owner, translated), gemini_event)


def _renamed(output: Output, gemini_event: str) -> Output:
    """Claude Code's hook output under the name of Gemini's event."""
    specific = output.get("hookSpecificOutput")
    if isinstance(specific, dict):
        return {**output, "hookSpecificOutput": {**specific, "hookEventName": gemini_event}}
    return output


# --- tool calls ----------------------------------------------------------------------------------


def call_key(session_id: str, tool_name: object, tool_input: object) -> str:
    """The same tool with the same input in a session keys the same (the order of keys aside)."""
    try:
        canonical = json.dumps(tool_input, sort_keys=True, ensure_ascii=False, default=str)
    except (RecursionError, TypeError, ValueError):
        canonical = repr(type(tool_input))
    digest = hashlib.blake2b(digest_size=8)
    for part in (session_id, str(tool_name), canonical):
        digest.update(part.encode("utf-8", "replace"))
        digest.update(b"\0")
    return digest.hexdigest()


def call_id(*, owner: AbstractBaseUser, session_id: str, key: str, starting: bool) -> Outcome[str]:
    """The id of a tool call: `gemini:<key>:<n>`, the n-th call with this key in the session.
    A BeforeTool starts the next one; an AfterTool ends the latest if it is still running,
    else (its BeforeTool was not seen) it is a call of its own."""
    prefix = f"gemini:{key}:"
    latest = (
        Step.objects.filter(
            session__session_id=session_id, session__owner=owner, tool_use_id__startswith=prefix
        )
        .order_by("-pk")
        .values_list("tool_use_id", "outcome")
        .first()
    )
    if latest is None:
        return Outcome(f"{prefix}1", Changes())
    number = int(latest[0].removeprefix(prefix) or 0)
    if not starting and latest[1] == StepOutcome.RUNNING:
        return Outcome(latest[0], Changes())
    return Outcome(f"{prefix}{number + 1}", Changes())


# The line Gemini's shell tool ends its answer to the model with when a command exits non-zero
# (its hook input has no exit code of its own); the last such line is the tool's, after the
# command's output.
EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)\s*$", re.MULTILINE)


def _error_of(tool_name: object, response: object) -> str:
    """The error an AfterTool's `tool_response` reports, or "" when the tool worked: the
    tool's `error`, or a shell command's non-zero exit code."""
    if not isinstance(response, dict):
        return ""
    error = response.get("error")
    if isinstance(error, dict):
        error = error.get("message") or error.get("type") or "The tool failed."
    if error:
        return str(error)
    content = response.get("llmContent")
    if tool_name == "run_shell_command" and isinstance(content, str):
        codes = EXIT_CODE.findall(content)
        if codes and int(codes[-1]) != 0:
            return f"Exit code {int(codes[-1])}"
    return ""


async def _as_tool_call(owner: AbstractBaseUser, payload: dict[str, Any]) -> dict[str, Any]:
    """The tool event with its call's id, and an AfterTool whose response is an error as a
    failure (the same failing call again and again is a loop)."""
    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        return payload  # refused by validation later, as any hook input without a session
    key = call_key(session_id, payload.get("tool_name"), payload.get("tool_input"))
    starting = payload["hook_event_name"] == "PreToolUse"
    found = await write(call_id, owner=owner, session_id=session_id, key=key, starting=starting)
    payload = {**payload, "tool_use_id": found.value}
    error = "" if starting else _error_of(payload.get("tool_name"), payload.get("tool_response"))
    if error:
        payload |= {"hook_event_name": "PostToolUseFailure", "error": error}
    return payload


async def _tool_started(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """The call's step on the board; the answer Claude Code's PreToolUse would get (a gate's
    refusal, a stop, a paused call held), to be put as Gemini takes it (`_as_before_tool`)."""
    return await shared.tool_step(owner, payload, client=CLIENT, schema=GeminiHookInput)


def _as_before_tool(output: Output) -> Output:
    """Claude Code's PreToolUse answer as a BeforeTool's: a refusal is `decision: "deny"`
    with the reason the model reads; `continue: false` ends the loop as it is; an allow means
    nothing to Gemini (its own approval mode decides)."""
    if output.get("continue") is False:
        # A stop: Gemini ends its loop before the call runs (the deny beside it is for
        # Claude Code, which would run the call otherwise).
        return {"continue": False, "stopReason": output.get("stopReason", "")}
    specific = output.get("hookSpecificOutput")
    if not isinstance(specific, dict):
        return output
    if specific.get("permissionDecision") == "deny":
        return {"decision": "deny", "reason": specific["permissionDecisionReason"]}
    return {}


async def _todos_written(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """`write_todos` ran: its items are the agent's whole list, as a TodoWrite's would be."""
    hook = shared.validate(GeminiToolInput, payload)
    todos = shared.validate(WriteTodosToolInput, hook.tool_input, loc=("tool_input",)).todos
    return await shared.whole_list_written(owner, hook, [todo.as_todo() for todo in todos], payload)


# --- lifecycle and the enforcer ------------------------------------------------------------------


async def _lifecycle(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """Record the event on the board; a reminder or the re-injected list goes back as context.
    A tool's input and result are not looked into (any shape passes): a use is one step."""
    hook = shared.validate(GeminiHookInput, payload)
    injection = await write(
        shared.record_and_enforce,
        owner=owner,
        hook=hook,
        payload=payload,
        step=shared.hook_step(payload),
        client=CLIENT,
    )
    answer = enforcer.additional_context(hook.hook_event_name, injection.text)
    if injection.stop is not None:
        answer |= shared.stop_answer(injection.stop)
    return answer


async def _stop(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """AfterAgent, held for the continuation countdown: `{"decision": "block", "reason":
    prompt}` when it runs out (Gemini then sends the prompt to the model as the next turn),
    `{}` to let the agent stop."""
    hook = shared.validate(GeminiHookInput, payload)
    observed = await write(shared.record_event, owner=owner, hook=hook)
    if observed.value is None:
        return {}
    steered = await shared.stopping_steered(observed.value, client=CLIENT)
    if steered is not None:
        return steered
    return await stop_hook_answer(
        agent_pk=observed.value, stop_hook_active=payload.get("stop_hook_active") is True
    )


def continued(*, owner: AbstractBaseUser, hook: dict[str, Any]) -> Outcome[bool]:
    """Whether a BeforeAgent's prompt is the continuation the enforcer just sent its agent."""
    prompt = hook.get("prompt")
    session_id = hook.get("session_id")
    if not isinstance(prompt, str) or not isinstance(session_id, str) or not prompt:
        return Outcome(False, Changes())
    latest = (
        Continuation.objects.filter(
            agent__session__session_id=session_id,
            agent__session__owner=owner,
            agent__agent_id=session_id,
        )
        .order_by("-pk")
        .values_list("status", "prompt")
        .first()
    )
    return Outcome(latest == (Continuation.Status.SENT, prompt), Changes())


# --- permission requests -------------------------------------------------------------------------


async def _permission_request(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """A BeforeTool of a tool Gemini asks about, held like Claude Code's PermissionRequest
    until someone decides on the inbox (or a team rule does). A deny refuses the call with the
    reviewer's words for the model ("deny and stop" also ends the agent's loop); an allow, or
    nobody deciding in time, answers `{}` and Gemini's own approval mode decides."""
    hook = shared.validate(GeminiPermissionRequestInput, payload)
    started = _as_before_tool(await _tool_started(owner, payload))
    if started:
        return started  # refused or stopped before anyone is asked
    wait = hold_for(settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS)
    state = await shared.held(
        write_behind(shared.permission_open, owner=owner, hook=hook, held_for=wait),
        hold=functools.partial(shared.hold_permission, wait=wait),
        expire=lambda request_id: write(permission_expire, request_id=request_id),
    )
    if state["status"] != RequestStatus.DENIED:
        return {}
    output: Output = {"decision": "deny", "reason": state["message"]}
    if state.get("interrupt"):
        output["continue"] = False
    return output
