"""`agentboard hook`: forward one Claude Code hook input to Agentboard and print its answer.

A plan (PermissionRequest for ExitPlanMode) goes over the agent websocket instead of a held HTTP
request, so the wait survives a server restart: the client reconnects with backoff and asks for
the plan again. Any other tool's PermissionRequest (install-hooks --approvals) is one held HTTP
request, waited on as long as a plan. Whatever goes wrong, the hook exits 0 without output, so
Claude Code carries on (and asks in its terminal); the reason goes to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, replace
from typing import Any, TextIO, TypeVar

from dashboard.client.origin import origin_headers, own_git_dir
from dashboard.core.waits import HOOK_TIMEOUT_HEADER
from dashboard.integrations.claude_code.decision import (
    is_plan_permission_request,
    permission_decision,
)

T = TypeVar("T")
HOOK_PATH = "/hooks/claude-code"
SOCKET_PATH = "/ws/agent/"
# Close codes the agent socket uses for refusals that retrying cannot fix.
CLOSE_UNAUTHENTICATED = 4401


class HookFailed(Exception):
    """The hook cannot do its job; the message is one sentence for stderr."""


class PlanRefused(Exception):
    """The server answered a plan frame with an error (its message is the reason)."""


@dataclass(frozen=True)
class HookConfig:
    url: str
    token: str
    timeout: float = 10.0
    plan_wait: float = 540.0
    max_backoff: float = 5.0
    # How long the agent lets this hook run (its installed timeout), when the install said.
    hook_timeout: float | None = None
    # Whether requests say which repository and machine the session runs on (see `origin`).
    report_origin: bool = True


def where_headers(config: HookConfig, payload: Mapping[str, Any]) -> dict[str, str]:
    """The repository and host headers for this hook input, unless the user opted out."""
    return origin_headers(payload.get("cwd")) if config.report_origin else {}


# Hooks the server may hold: a Stop in its continuation countdown, a permission request.
HELD_EVENTS = frozenset({"Stop", "SubagentStop", "PermissionRequest"})


def held_config(config: HookConfig, payload: Mapping[str, Any]) -> HookConfig:
    """The config for a hook the server may hold: wait as long as the agent lets this hook run
    (a second less, to answer before it is killed); without that, a permission request as
    long as a plan, anything else the usual timeout. The server is told the wait in a header
    and answers before it ends."""
    if config.hook_timeout is not None:
        return replace(config, timeout=max(1.0, config.hook_timeout - 1))
    if payload.get("hook_event_name") == "PermissionRequest":
        return replace(config, timeout=config.plan_wait + PERMISSION_WAIT_MARGIN)
    return config


def run_hook(config: HookConfig, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    """Always 0: a failing dashboard must never stop or block the agent."""
    try:
        payload = _read_payload(stdin)
        if is_plan_permission_request(payload):
            output = asyncio.run(
                _while_parent_lives(wait_for_plan_decision(config, payload, stderr))
            )
        elif payload.get("hook_event_name") in HELD_EVENTS:
            # The server answers itself before this gives up (it is told how long that is).
            held = held_config(config, payload)
            output = asyncio.run(_while_parent_lives(_in_thread(forward, held, payload)))
        else:
            output = forward(config, with_git_branch(payload))
    except HookFailed as failure:
        print(f"agentboard: {failure}", file=stderr)
        return 0
    print(json.dumps(output), file=stdout)
    return 0


# How often a waiting hook checks that Claude Code, its parent, is still there.
PARENT_CHECK_SECONDS = 0.5
PERMISSION_WAIT_MARGIN = 30.0


async def _in_thread(func: Callable[..., T], *args: Any) -> T:
    """`func(*args)` in a daemon thread, so that a hook whose parent went away can exit
    without waiting for a blocked request to finish."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if done.done():
            return
        if error is None:
            done.set_result(result)
        else:
            done.set_exception(error)

    def run() -> None:
        try:
            result, error = func(*args), None
        except BaseException as failure:  # handed to the waiting coroutine
            result, error = None, failure
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, daemon=True).start()
    return await done


async def _while_parent_lives(waiting: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    """The wait's answer, or `{}` at once when the parent process is gone: Claude Code may kill
    a hook's parent shell or exit without waiting, and an orphaned hook must not linger. Its
    closed socket then lets the server expire the plan after a short grace."""
    parent = os.getppid()
    task = asyncio.ensure_future(waiting)
    while not task.done():
        await asyncio.wait({task}, timeout=PARENT_CHECK_SECONDS)
        if not task.done() and os.getppid() != parent:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return {}
    return task.result()


def _read_payload(stdin: TextIO) -> dict[str, Any]:
    try:
        payload = json.loads(stdin.read())
    except ValueError:
        raise HookFailed("The hook input on stdin is not valid JSON; nothing was sent.") from None
    if not isinstance(payload, dict):
        raise HookFailed("The hook input on stdin is not a JSON object; nothing was sent.")
    return payload


# Events that start or steer a session: the board shows the branch it works on. (Reading a
# file per event is cheap, but every tool use does not need it.)
BRANCH_EVENTS = frozenset({"SessionStart", "UserPromptSubmit"})


def git_branch(cwd: str) -> str | None:
    """The branch checked out in `cwd`'s repository (a worktree's own), from its `HEAD`
    without running git; None outside a repository or on a detached HEAD."""
    found = own_git_dir(cwd)
    if found is None:
        return None
    try:
        ref = (found / "HEAD").read_text().strip()
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
    request = urllib.request.Request(
        config.url + path,
        data=json.dumps(payload).encode(),
        method="POST",
        headers={
            "Authorization": f"Bearer {config.token}",
            "Content-Type": "application/json",
            HOOK_TIMEOUT_HEADER: f"{config.timeout:g}",
            **where_headers(config, payload),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=config.timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as error:
        raise HookFailed(_refusal(error)) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise HookFailed(f"Agentboard at {config.url} is unreachable ({reason}).") from None
    try:
        output = json.loads(body or b"{}")
    except ValueError:
        raise HookFailed(
            f"Agentboard at {config.url} answered something that is not JSON."
        ) from None
    return output if isinstance(output, dict) else {}


def _refusal(error: urllib.error.HTTPError) -> str:
    try:
        message = json.loads(error.read())["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = f"HTTP {error.code}."
    return f"Agentboard refused the hook input: {message}"


# --- plans over the agent socket ---------------------------------------------------------------


async def wait_for_plan_decision(
    config: HookConfig, payload: Mapping[str, Any], stderr: TextIO
) -> dict[str, Any]:
    """Submit the plan, wait for the reviewer and answer as the PermissionRequest hook.

    Any dropped connection is retried with backoff until `plan_wait` runs out; on reconnect the
    client asks for the plan's state first (`watch_plan`), so a decision taken while it was
    away is not lost. No decision in time gives `{}`: Claude Code asks in its terminal.
    """
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict) or not isinstance(tool_input.get("plan"), str):
        raise HookFailed("The ExitPlanMode input has no plan text; nothing was sent.")
    session_id = payload.get("session_id")
    submit = {
        "type": "exit_plan_mode",
        "id": "submit",
        "session_id": session_id,
        "agent_id": payload.get("agent_id") or session_id,
        "agent_type": str(payload.get("agent_type") or "")[:100],
        "plan": tool_input["plan"],
        "plan_file_path": tool_input.get("planFilePath"),
    }
    socket_url = config.url.replace("http://", "ws://", 1).replace("https://", "wss://", 1)
    socket_url += SOCKET_PATH
    headers = {"Authorization": f"Bearer {config.token}", **where_headers(config, payload)}
    deadline = time.monotonic() + config.plan_wait
    plan_id: int | None = None
    connected_once = False
    backoff = 0.25

    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            print(
                "agentboard: no reviewer decided in time; Claude Code will ask in the terminal.",
                file=stderr,
            )
            return {}
        try:
            async with connect(
                socket_url, additional_headers=headers, open_timeout=min(config.timeout, remaining)
            ) as socket:
                backoff = 0.25
                if plan_id is None:
                    await socket.send(json.dumps(submit))
                else:
                    await socket.send(
                        json.dumps({"type": "watch_plan", "id": "watch", "plan_id": plan_id})
                    )
                    print(f"agentboard: reconnected; watching plan {plan_id} again.", file=stderr)
                connected_once = True
                while True:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        await _give_up(socket, plan_id)
                        break
                    try:
                        text = await asyncio.wait_for(socket.recv(), timeout=remaining)
                    except TimeoutError:
                        await _give_up(socket, plan_id)
                        break
                    plan = _plan_of(text)
                    if plan is None or (plan_id is not None and plan.get("id") != plan_id):
                        continue
                    if plan.get("status") != "pending":
                        return permission_decision(plan, tool_input)
                    if plan_id is None:
                        plan_id = int(plan["id"])
                        where = f": {plan['review_url']}" if plan.get("review_url") else "."
                        print(
                            f"agentboard: plan {plan_id} is waiting for a reviewer{where}",
                            file=stderr,
                        )
        except ConnectionClosed as closed:
            if closed.rcvd is not None and closed.rcvd.code == CLOSE_UNAUTHENTICATED:
                raise HookFailed("Agentboard refused the token in AGENTBOARD_TOKEN.") from None
        except InvalidStatus as refused:
            if refused.response.status_code in {401, 403, 404} or not connected_once:
                raise HookFailed(
                    f"Agentboard at {config.url} refused the agent socket "
                    f"(HTTP {refused.response.status_code})."
                ) from None
        except (OSError, InvalidHandshake, TimeoutError) as error:
            if not connected_once:
                raise HookFailed(f"Agentboard at {config.url} is unreachable ({error}).") from None
        except PlanRefused as refused:
            raise HookFailed(f"Agentboard refused the plan: {refused}") from None
        await asyncio.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
        backoff = min(backoff * 2, config.max_backoff)


async def _give_up(socket: Any, plan_id: int | None) -> None:
    """Tell the server nobody waits for this plan any more, so the board shows it expired.

    Best effort: the answer to Claude Code is `{}` whether or not this reaches the server."""
    if plan_id is None:
        return
    try:
        await socket.send(json.dumps({"type": "expire_plan", "id": "expire", "plan_id": plan_id}))
        await asyncio.wait_for(socket.recv(), timeout=2)
    except Exception:  # noqa: S110 - the hook is giving up anyway
        pass


def _plan_of(text: str | bytes) -> dict[str, Any] | None:
    """The plan state carried by an ack or a plan_decided frame; raises on an error frame."""
    try:
        frame = json.loads(text)
    except ValueError:
        return None
    if not isinstance(frame, dict):
        return None
    if frame.get("type") == "error":
        error = frame.get("error") or {}
        raise PlanRefused(error.get("message") or "the server answered with an error.")
    if frame.get("type") == "ack" and isinstance(frame.get("result"), dict):
        return frame["result"]
    if frame.get("type") == "plan_decided" and isinstance(frame.get("plan"), dict):
        return frame["plan"]
    return None
