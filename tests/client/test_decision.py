from __future__ import annotations

from dashboard.integrations.claude_code.decision import (
    permission_decision,
    tool_permission_decision,
)


def test_a_rejection_from_a_server_without_its_own_text_still_says_what_happened():
    output = permission_decision({"status": "rejected", "feedback": "Use cursors."}, {})

    decision = output["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"
    assert decision["message"] == (
        "The reviewer rejected this plan. Their feedback:\nUse cursors.\n\n"
        "Revise the plan and present it again."
    )


def test_an_undecided_plan_lets_claude_code_ask_in_the_terminal():
    assert permission_decision({"status": "expired"}, {"plan": "x"}) == {}


# --- any other tool's permission request ------------------------------------------------------

TOOL_INPUT = {"command": "npm test", "description": "Run the tests"}


def test_an_allowed_request_echoes_its_input_and_nothing_else():
    assert tool_permission_decision({"status": "allowed"}, TOOL_INPUT) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow", "updatedInput": TOOL_INPUT},
        }
    }


def test_an_allowed_and_remembered_request_carries_its_rules():
    rules = [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "npm test"}],
            "behavior": "allow",
            "destination": "session",
        }
    ]
    output = tool_permission_decision(
        {"status": "allowed", "updated_permissions": rules}, TOOL_INPUT
    )
    assert output["hookSpecificOutput"]["decision"]["updatedPermissions"] == rules


def test_a_denied_request_carries_the_message_and_interrupt_only_when_stopping():
    denied = tool_permission_decision({"status": "denied", "message": "No."}, TOOL_INPUT)
    assert denied["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "No."}
    stopped = tool_permission_decision(
        {"status": "denied", "message": "Stop.", "interrupt": True}, TOOL_INPUT
    )
    assert stopped["hookSpecificOutput"]["decision"]["interrupt"] is True


def test_an_undecided_request_lets_the_terminal_ask():
    for status in ("pending", "expired", "answered_in_terminal"):
        assert tool_permission_decision({"status": status}, TOOL_INPUT) == {}
