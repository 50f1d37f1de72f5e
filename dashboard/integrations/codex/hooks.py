"""`POST /hooks/codex`: Codex CLI's hook input, forwarded by `agentboard codex-hook`.

The same board as Claude Code's hooks, through the same building blocks
(`dashboard.integrations.claude_code.hooks`):
sessions and their lifecycle, the `update_plan` checklist as the agent's todo list, the
enforcer's reminders and its continuation on Stop, and permission requests held for the inbox.

What Codex accepts back differs, and Codex refuses (fails closed on) anything else:
- PermissionRequest: `decision` with `behavior` allow or deny and, for a deny, `message`. No
  rules to remember (`updatedPermissions`), no `updatedInput`, no `interrupt`.
- PreToolUse: `hookSpecificOutput.permissionDecision` "deny" with a non-empty
  `permissionDecisionReason` refuses the call (a spent budget's refusal, as Claude Code's);
  the model reads "Command blocked by PreToolUse hook: <reason>. Command: <command>" (for
  another tool: "Tool call blocked by PreToolUse hook: <reason>. Tool: <name>"). "allow" counts
  only with `updatedInput`, "ask" never: Codex takes either as a failed hook and runs the call.
- Stop: `{"decision": "block", "reason": ...}` continues the agent with `reason` as its prompt.
- SessionStart, UserPromptSubmit, PostToolUse: `hookSpecificOutput.additionalContext`.
- PostToolUse: `{"continue": false, "stopReason": ..., "reason": ...}` puts `reason` before the
  model instead of the tool's output, and Codex shows `stopReason`; the turn goes on. PreToolUse
  takes neither `continue` nor `stopReason` (a failed hook: the call would run). No hook ends
  a turn.

What is said from the board (`dashboard.steering`): messages as context on the next
PostToolUse, UserPromptSubmit or SessionStart, or as the prompt that continues a stopping
agent; a stop is told to the model on the next PostToolUse and refuses every call after it
(no hook ends a turn), left queued for the turn's end (Stop) to claim; a paused
agent's PreToolUse is held until a resume, or refused with who paused it and why.
"""

from __future__ import annotations

import functools
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.utils import timezone

from dashboard.activity.summaries import StepDraft
from dashboard.core.changes import Changes, Outcome
from dashboard.core.origin import OriginNote, noted_as_held
from dashboard.core.writer import write, write_behind
from dashboard.integrations.claude_code import hooks as shared
from dashboard.integrations.claude_code.schemas import HookEvent
from dashboard.integrations.codex.schemas import (
    PLAN_TOOL,
    CodexHookInput,
    CodexPermissionRequestInput,
    CodexToolInput,
    UpdatePlanToolInput,
)
from dashboard.live.waiting import hold_for, stop_hook_answer
from dashboard.models import Agent
from planmode.models import PermissionRequest, RequestStatus
from planmode.permissions import model_message, permission_expire
from todos import enforcer
from todos.models import EnforcerEvent
from todos.selectors import current_todos

Output = dict[str, Any]

# Events that tell the board about the session and may carry the enforcer's context back.
LIFECYCLE_EVENTS = frozenset(
    {"SessionStart", "SessionEnd", "UserPromptSubmit", "SubagentStart", "PreCompact", "PostCompact"}
)
STOP_EVENTS = frozenset({"Stop", "SubagentStop"})
OPEN = frozenset({"pending", "in_progress"})
CLIENT = "Codex"


@shared.agent_endpoint("Send hook input with POST.")
async def codex_hook(request: HttpRequest, owner: AbstractBaseUser) -> JsonResponse:
    payload = shared.read_payload(request)
    note = OriginNote(owner, payload.get("session_id"), request.headers, "Codex hook")
    with noted_as_held(note):
        output = await _answer(owner, payload)
    await note()
    return JsonResponse(output)


async def _answer(owner: AbstractBaseUser, payload: dict[str, Any]) -> dict[str, Any]:
    picked = shared.validate(HookEvent, payload)
    event, tool = picked.hook_event_name, picked.tool_name
    if event in LIFECYCLE_EVENTS or (event == "PostToolUse" and tool != PLAN_TOOL):
        return await _lifecycle(owner, payload)
    if event == "PreToolUse":
        return _reason_unstopped(
            await shared.tool_step(
                owner, payload, client=CLIENT, stop_ends_turn=False, schema=CodexHookInput
            )
        )
    if event in STOP_EVENTS:
        return await _stop(owner, payload)
    if event == "PostToolUse":
        return await _plan_updated(owner, payload)
    if event == "PermissionRequest":
        return await _permission_request(owner, payload)
    return {}


def _reason_unstopped(output: Output) -> Output:
    """A refusal's reason without its last full stop: Codex puts its own after it ("...: <reason>.
    Command: ..."), and the model would read two."""
    specific = output.get("hookSpecificOutput")
    if isinstance(specific, dict) and isinstance(specific.get("permissionDecisionReason"), str):
        reason = specific["permissionDecisionReason"]
        output["hookSpecificOutput"] = {
            **specific,
            "permissionDecisionReason": reason.removesuffix("."),
        }
    return output


async def _lifecycle(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """Record the event on the board; a reminder or the re-injected list goes back as context.
    A tool's input and result are not looked into (any shape passes): a use is one step."""
    hook = shared.validate(CodexHookInput, payload)
    injection = await write(
        _record_and_enforce, owner=owner, hook=hook, payload=payload, step=_step(hook, payload)
    )
    answer = enforcer.additional_context(hook.hook_event_name, injection.text)
    if injection.stop is not None:
        # The model reads `reason` instead of the tool's output; the turn goes on (Codex ends
        # no turn for a hook), so each next call is refused until it ends (`shared.step_record`).
        answer |= shared.stop_answer(injection.stop) | {"reason": _end_the_turn(injection.stop)}
    return answer


def _end_the_turn(stop: str) -> str:
    return f"{stop.removesuffix('.')}. End your turn now and wait for the user."


def _step(hook: CodexHookInput, payload: dict[str, Any]) -> StepDraft | None:
    """The step a tool event reports: a command that exited non-zero failed, as Claude Code's
    PostToolUseFailure says (so the same failing command again and again is a loop)."""
    if hook.hook_event_name == "PostToolUse" and hook.exit_code:
        failed = {"hook_event_name": "PostToolUseFailure", "error": f"Exit code {hook.exit_code}"}
        return shared.hook_step(payload | failed)
    return shared.hook_step(payload)


def _record_and_enforce(
    *,
    owner: AbstractBaseUser,
    hook: CodexHookInput,
    payload: dict[str, Any],
    step: StepDraft | None,
) -> enforcer.Injection:
    if hook.hook_event_name == "UserPromptSubmit":
        # A new prompt: the reviewer's "deny and stop" messages of the turn before reached the
        # model with the denial already (see `_denial_told`); they are told, not repeated.
        PermissionRequest.objects.filter(
            session__session_id=hook.session_id,
            session__owner=owner,
            status=RequestStatus.DENIED,
            interrupt=True,
            message_told_at__isnull=True,
        ).update(message_told_at=timezone.now())
    return shared.record_and_enforce(
        owner=owner, hook=hook, payload=payload, step=step, client=CLIENT, stop_ends_turn=False
    )


async def _stop(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """Held for the continuation countdown: `{"decision": "block", "reason": prompt}` when it
    runs out (Codex then continues the agent with the prompt), `{}` to let it stop."""
    hook = shared.validate(CodexHookInput, payload)
    observed = await write(shared.record_event, owner=owner, hook=hook)
    if observed.value is None:
        return {}
    steered = await shared.stopping_steered(observed.value, client=CLIENT)
    if steered is not None:
        return steered
    if (await write(_stopped_by_a_reviewer, agent_pk=observed.value)).value:
        return {}  # the reviewer asked it to stop: the enforcer must not continue it
    return await stop_hook_answer(
        agent_pk=observed.value, stop_hook_active=payload.get("stop_hook_active") is True
    )


async def _plan_updated(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """`update_plan` ran: its steps are the agent's whole list, as a TodoWrite's would be."""
    hook = shared.validate(CodexToolInput, payload)
    steps = shared.validate(UpdatePlanToolInput, hook.tool_input, loc=("tool_input",)).plan
    return await shared.whole_list_written(owner, hook, [step.as_todo() for step in steps], payload)


async def _permission_request(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """Held like Claude Code's until someone decides on the inbox (or a team rule does);
    nobody deciding in time answers `{}` and Codex asks in its terminal."""
    hook = shared.validate(CodexPermissionRequestInput, payload)
    wait = hold_for(settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS)
    state = await shared.held(
        write_behind(shared.permission_open, owner=owner, hook=hook, held_for=wait),
        hold=functools.partial(shared.hold_permission, wait=wait),
        expire=lambda request_id: write(permission_expire, request_id=request_id),
    )
    if state["status"] == RequestStatus.ALLOWED:
        # An "always" chosen on the board is an allow for this call: Codex keeps no rules.
        decision: dict[str, Any] = {"behavior": "allow"}
    elif state["status"] == RequestStatus.DENIED:
        told = await write(_denial_told, request_id=state["id"])
        decision = {"behavior": "deny", "message": told.value}
    else:
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def _stopped_by_a_reviewer(*, agent_pk: int) -> Outcome[bool]:
    """Whether a reviewer denied one of this agent's commands with "deny and stop" since its
    last prompt (those are marked told when the next prompt comes). With unfinished steps, its
    history says why the enforcer let it stop."""
    with transaction.atomic(savepoint=False):
        stopped = PermissionRequest.objects.filter(
            agent_id=agent_pk,
            status=RequestStatus.DENIED,
            interrupt=True,
            message_told_at__isnull=True,
        ).exists()
        if not stopped:
            return Outcome(False, Changes())
        agent = Agent.objects.select_related("session").get(pk=agent_pk)
        unfinished = [i for i in current_todos(agent) if i["status"] in OPEN]
        if not unfinished:
            return Outcome(True, Changes())
        event = EnforcerEvent.objects.create(
            agent=agent,
            kind=EnforcerEvent.Kind.CONTINUATION,
            text="Let it stop: a reviewer denied its command and asked it to stop.",
        )
        changes = Changes().agent(agent.pk, agent.session_id)
        changes.enforcer_events.append(event.pk)
        return Outcome(True, changes)


def _denial_told(*, request_id: int) -> Outcome[str]:
    """The text Codex hands the model with a denial. Codex cannot be stopped by a hook, so a
    "deny and stop" asks the model to stop, with the reviewer's message now; the turn's Stop
    then lets it stop, and the next prompt does not repeat the message."""
    with transaction.atomic(savepoint=False):
        request = PermissionRequest.objects.select_related("rule").get(pk=request_id)
        if request.rule is not None or not request.interrupt:
            return Outcome(model_message(request), Changes())
        said = f" Their message:\n{request.message}" if request.message else ""
        return Outcome(
            f"The reviewer denied this {request.tool_name} call on Agentboard, so it did not "
            f"run, and asked you to stop: end your turn now and wait for the user.{said}",
            Changes(),
        )
