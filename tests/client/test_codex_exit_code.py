"""`agentboard codex-hook` adds a command's exit code to its PostToolUse, read from Codex's
transcript: Codex's hook input has only the output, so `false` would pass for a success."""

from __future__ import annotations

import json

from dashboard.client.codex import TRANSCRIPT_TAIL_BYTES, with_exit_code

CALL = "call_Lm3pRt4"


def completed(call_id: str, exit_code: int) -> dict:
    """A command's end as Codex 0.169.0 writes it in its rollout file (fields trimmed)."""
    return {
        "timestamp": "2026-11-26T07:48:54.310Z",
        "type": "event_msg",
        "payload": {
            "type": "item_completed",
            "item": {
                "type": "CommandExecution",
                "id": call_id,
                "command": ["/bin/bash", "-lc", "ls /no/such/dir"],
                "status": "failed" if exit_code else "completed",
                "aggregated_output": "ls: cannot access '/no/such/dir': No such file\n",
                "exit_code": exit_code,
            },
        },
    }


def post_tool_use(transcript, call_id: str = CALL) -> dict:
    return {
        "session_id": "019ab3c2-5d1e-7a40-9c2b-3f6e8d1a2b4c",
        "hook_event_name": "PostToolUse",
        "transcript_path": str(transcript),
        "tool_name": "Bash",
        "tool_input": {"command": "ls /no/such/dir"},
        "tool_response": "ls: cannot access '/no/such/dir': No such file or directory\n",
        "tool_use_id": call_id,
    }


def write_transcript(path, *entries: dict | str) -> None:
    lines = [entry if isinstance(entry, str) else json.dumps(entry) for entry in entries]
    path.write_text("\n".join(lines) + "\n")


def test_a_command_that_failed_carries_its_exit_code(tmp_path):
    transcript = tmp_path / "rollout.jsonl"
    call = {"type": "response_item", "payload": {"type": "function_call", "call_id": CALL}}
    write_transcript(transcript, call, completed("call_other", 0), completed(CALL, 2))

    assert with_exit_code(post_tool_use(transcript))["exit_code"] == 2


def test_a_command_that_succeeded_carries_zero(tmp_path):
    transcript = tmp_path / "rollout.jsonl"
    write_transcript(transcript, completed(CALL, 0), completed("call_other", 1))

    assert with_exit_code(post_tool_use(transcript))["exit_code"] == 0


def test_without_a_readable_record_of_the_call_the_input_goes_as_it_came(tmp_path):
    transcript = tmp_path / "rollout.jsonl"
    missing = post_tool_use(tmp_path / "gone.jsonl")
    assert with_exit_code(missing) == missing

    write_transcript(transcript, "not json " + CALL, completed("call_other", 1))
    unrecorded = post_tool_use(transcript)
    assert with_exit_code(unrecorded) == unrecorded

    # Only the end of a long transcript is read.
    write_transcript(transcript, completed(CALL, 1), "x" * TRANSCRIPT_TAIL_BYTES)
    assert "exit_code" not in with_exit_code(post_tool_use(transcript))


def test_only_a_tool_use_ending_is_looked_up(tmp_path):
    transcript = tmp_path / "rollout.jsonl"
    write_transcript(transcript, completed(CALL, 1))
    starting = post_tool_use(transcript) | {"hook_event_name": "PreToolUse"}

    assert with_exit_code(starting) == starting
