"""`agentboard gemini-hook`: forward one Gemini CLI hook input to `POST /hooks/gemini` and print
the server's answer. Gemini CLI runs it for every hook event, a fresh process each time, so it
imports only what forwarding needs (see `transport`); `install-gemini` is in `gemini`."""

from __future__ import annotations

import json

from dashboard.client.config import HookConfig, HookFailed
from dashboard.client.hook import forward, read_payload, while_parent_lives, with_git_branch

TYPE_CHECKING = False  # `typing.TYPE_CHECKING` without importing typing at run time
if TYPE_CHECKING:
    from typing import Any, TextIO

GEMINI_HOOK_PATH = "/hooks/gemini"
# Events whose hook the server may hold: the hook waits as long as it is let run.
HELD_EVENTS = frozenset({"AfterAgent", "BeforeTool"})
# Added to the hook input when the command says --approvals (`hooks.APPROVALS_FIELD`).
APPROVALS_FIELD = "agentboard_approvals"

# Gemini names its prompt event BeforeAgent; the board shows the branch from it and SessionStart.
BRANCH_EVENTS = {"BeforeAgent": "UserPromptSubmit"}


def with_branch(payload: dict[str, Any]) -> dict[str, Any]:
    """The input with the branch checked out in its `cwd`, on the events that say it."""
    event = payload.get("hook_event_name")
    alias = BRANCH_EVENTS.get(str(event))
    if alias is None:
        return with_git_branch(payload)
    found = with_git_branch({**payload, "hook_event_name": alias})
    return {**found, "hook_event_name": event}


def held_config(config: HookConfig) -> HookConfig:
    """A held hook waits as long as Gemini lets it run (a second less, to answer before it is
    killed); the server is told the wait in a header and answers before it ends."""
    if config.hook_timeout is not None:
        return config.waiting(max(1.0, config.hook_timeout - 1))
    return config.waiting(config.plan_wait)


def run_gemini_hook(
    config: HookConfig, stdin: TextIO, stdout: TextIO, stderr: TextIO, *, approvals: bool
) -> int:
    """Always 0, and no output when anything fails: Gemini must never be broken by the board."""
    try:
        payload = read_payload(stdin)
        if approvals:
            payload[APPROVALS_FIELD] = True
        if payload.get("hook_event_name") in HELD_EVENTS:
            output = while_parent_lives(forward, held_config(config), payload, GEMINI_HOOK_PATH)
        else:
            output = forward(config, with_branch(payload), GEMINI_HOOK_PATH)
    except HookFailed as failure:
        print(f"agentboard: {failure}", file=stderr)
        return 0
    if output:
        print(json.dumps(output), file=stdout)
    return 0
