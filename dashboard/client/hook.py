"""`agentboard hook`: forward one Claude Code hook input to Agentboard and print its answer.

Claude Code runs this for every hook event it sends and (unless the hook is installed async)
waits for it, so it imports only what forwarding needs (see `transport`): a plan's wait
(asyncio and websockets, `plans`) is imported only for a plan. A plan (PermissionRequest for
ExitPlanMode) goes over the agent websocket instead of a held HTTP request, so the wait
survives a server restart. Any other tool's PermissionRequest (install-hooks --approvals) is
one held HTTP request, waited on as long as a plan. Whatever goes wrong, the hook exits 0
without output, so Claude Code carries on (and asks in its terminal); the reason goes to
stderr.
"""

from __future__ import annotations

import json
import os

from dashboard.client import transport
from dashboard.client.config import HookConfig, HookFailed, where_headers
from dashboard.client.origin import own_git_dir
from dashboard.core.headers import HOOK_TIMEOUT_HEADER
from dashboard.integrations.claude_code.decision import is_plan_permission_request

TYPE_CHECKING = False  # `typing.TYPE_CHECKING` without importing typing at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TextIO

HOOK_PATH = "/hooks/claude-code"


# Hooks the server may hold: a Stop in its continuation countdown, a permission request, a
# refusal by auto mode that a lead asked to see in the inbox.
HELD_EVENTS = frozenset({"Stop", "SubagentStop", "PermissionRequest", "PermissionDenied"})
# A paused agent's tool call is held at its PreToolUse until a resume: for as long as the agent
# lets the hook run, like the held events, but answered at once otherwise (no waiting thread).
PAUSABLE_EVENTS = frozenset({"PreToolUse"})
PERMISSION_WAIT_MARGIN = 30.0


def held_config(config: HookConfig, payload: Mapping[str, Any]) -> HookConfig:
    """The config for a hook the server may hold: wait as long as the agent lets this hook run
    (a second less, to answer before it is killed); without that, a permission request as
    long as a plan, anything else the usual timeout. The server is told the wait in a header
    and answers before it ends."""
    if config.hook_timeout is not None:
        return config.waiting(max(1.0, config.hook_timeout - 1))
    if payload.get("hook_event_name") in {"PermissionRequest", "PermissionDenied"}:
        return config.waiting(config.plan_wait + PERMISSION_WAIT_MARGIN)
    return config


def run_hook(config: HookConfig, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    """Always 0: a failing dashboard must never stop or block the agent."""
    try:
        payload = read_payload(stdin)
        if is_plan_permission_request(payload):
            from dashboard.client.plans import plan_answer  # asyncio and websockets: plans only

            output = while_parent_lives(plan_answer, config, payload, stderr)
        elif payload.get("hook_event_name") in HELD_EVENTS:
            # The server answers itself before this gives up (it is told how long that is).
            output = while_parent_lives(forward, held_config(config, payload), payload)
        elif payload.get("hook_event_name") in PAUSABLE_EVENTS:
            output = forward(held_config(config, payload), payload)
        else:
            output = forward(config, with_git_branch(payload))
    except HookFailed as failure:
        print(f"agentboard: {failure}", file=stderr)
        return 0
    print(json.dumps(output), file=stdout)
    return 0


# How often a waiting hook checks that Claude Code, its parent, is still there.
PARENT_CHECK_SECONDS = 0.5


def while_parent_lives(wait: Callable[..., dict[str, Any]], *args: object) -> dict[str, Any]:
    """`wait(*args)`'s answer, or `{}` at once when the parent process is gone: Claude Code may
    kill a hook's parent shell or exit without waiting, and an orphaned hook must not linger.
    The wait runs in a daemon thread, so the process can exit while it is still blocked; its
    closed connection then lets the server let go (a plan expires after a short grace)."""
    import threading  # only held hooks wait in a thread: an ordinary one saves its import

    parent = os.getppid()
    outcome: list[tuple[dict[str, Any] | None, BaseException | None]] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append((wait(*args), None))
        except BaseException as failure:  # handed to the waiting thread
            outcome.append((None, failure))
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    while not done.wait(PARENT_CHECK_SECONDS):
        if os.getppid() != parent:
            return {}
    answer, failure = outcome[0]
    if failure is not None:
        raise failure
    return answer or {}


def read_payload(stdin: TextIO) -> dict[str, Any]:
    try:
        payload = json.loads(stdin.read())
    except ValueError:
        raise HookFailed("The hook input on stdin is not valid JSON; nothing was sent.") from None
    if not isinstance(payload, dict):
        raise HookFailed("The hook input on stdin is not a JSON object; nothing was sent.")
    return payload


# Events that start, steer or move a session (CwdChanged: into a worktree, say): the board
# shows the branch it works on. (Reading a file per event is cheap, but every tool use does
# not need it.)
BRANCH_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "CwdChanged"})


def git_branch(cwd: str) -> str | None:
    """The branch checked out in `cwd`'s repository (a worktree's own), from its `HEAD`
    without running git; None outside a repository or on a detached HEAD."""
    found = own_git_dir(cwd)
    if found is None:
        return None
    try:
        with open(os.path.join(found, "HEAD")) as file:
            ref = file.read().strip()
    except OSError:
        return None
    return ref.removeprefix("ref: refs/heads/") if ref.startswith("ref: refs/heads/") else None


def with_git_branch(payload: dict[str, Any]) -> dict[str, Any]:
    cwd = payload.get("cwd")
    if payload.get("hook_event_name") not in BRANCH_EVENTS or not isinstance(cwd, str) or not cwd:
        return payload
    branch = git_branch(cwd)
    return {**payload, "git_branch": branch} if branch else payload


def forward(
    config: HookConfig, payload: Mapping[str, Any], path: str = HOOK_PATH
) -> dict[str, Any]:
    """POST the input to the hook endpoint, exactly as a native HTTP hook would."""
    headers = {
        "Authorization": f"Bearer {config.token}",
        "Content-Type": "application/json",
        HOOK_TIMEOUT_HEADER: f"{config.timeout:g}",
        **where_headers(config, payload),
    }
    try:
        status, body = transport.post(
            config.url, path, json.dumps(payload).encode(), headers, config.timeout
        )
    except ValueError as error:
        raise HookFailed(f"The request to Agentboard cannot be sent ({error}).") from None
    except OSError as error:
        raise HookFailed(f"Agentboard at {config.url} is unreachable ({error}).") from None
    if not 200 <= status < 300:
        raise HookFailed(_refusal(status, body))
    try:
        output = json.loads(body or b"{}")
    except ValueError:
        raise HookFailed(
            f"Agentboard at {config.url} answered something that is not JSON."
        ) from None
    return output if isinstance(output, dict) else {}


def _refusal(status: int, body: bytes) -> str:
    try:
        message = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = f"HTTP {status}."
    return f"Agentboard refused the hook input: {message}"
