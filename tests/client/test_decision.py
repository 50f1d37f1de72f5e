from __future__ import annotations

from dashboard.client.decision import permission_decision


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
