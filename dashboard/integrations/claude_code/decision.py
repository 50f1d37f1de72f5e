"""The hook output Claude Code expects for a reviewer's decision, shared by the HTTP hook
endpoint and the `agentboard hook` command so both answer exactly alike."""

from __future__ import annotations

# Only for the annotations: `agentboard hook` imports this on every call, and importing `typing`
# costs a hook command a few milliseconds (`typing.TYPE_CHECKING` is False at run time too).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def rejection_text(feedback: str) -> str:
    """What the model reads when the server sent no text of its own (an older server)."""
    said = f" Their feedback:\n{feedback}\n\n" if feedback else " "
    return f"The reviewer rejected this plan.{said}Revise the plan and present it again."


def permission_decision(plan: Mapping[str, Any], tool_input: Mapping[str, Any]) -> dict[str, Any]:
    """PermissionRequest output for a plan state; `{}` (ask in the terminal) when undecided.

    An allow must echo the tool input as received: current Claude Code drops a bare allow.
    """
    status = plan.get("status")
    if status == "approved":
        decision: dict[str, Any] = {"behavior": "allow", "updatedInput": dict(tool_input)}
        if plan.get("mode_after") == "acceptEdits":
            decision["updatedPermissions"] = [
                {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
            ]
    elif status == "rejected":
        # The server's message says the plan was rejected, gives the feedback and what to do
        # next: the feedback alone would reach the model as a bare sentence.
        message = plan.get("message") or rejection_text(str(plan.get("feedback") or ""))
        decision = {"behavior": "deny", "message": message}
    else:
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def tool_permission_decision(
    request: Mapping[str, Any], tool_input: Mapping[str, Any]
) -> dict[str, Any]:
    """PermissionRequest output for any other tool's request state; `{}` (ask in the terminal)
    when nobody decided. An allow echoes the input as received and carries the rules to
    remember; a deny carries the text for the model and, to stop the agent, `interrupt`."""
    status = request.get("status")
    if status == "allowed":
        decision: dict[str, Any] = {"behavior": "allow", "updatedInput": dict(tool_input)}
        if request.get("updated_permissions"):
            decision["updatedPermissions"] = list(request["updated_permissions"])
    elif status == "denied":
        decision = {"behavior": "deny", "message": str(request.get("message") or "")}
        if request.get("interrupt"):
            decision["interrupt"] = True
    else:
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def refusal_decision(request: Mapping[str, Any]) -> dict[str, Any]:
    """PermissionDenied output for a refusal someone answered: allowed once, the model is told
    it may try the call again (its next PreToolUse is allowed); otherwise `{}`, it stays
    refused."""
    if request.get("status") != "allowed":
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": True}}


def is_plan_permission_request(payload: Mapping[str, Any]) -> bool:
    return (
        payload.get("hook_event_name") == "PermissionRequest"
        and payload.get("tool_name") == "ExitPlanMode"
    )
