"""A plan's wait over the agent socket, for `agentboard hook` (PermissionRequest for
ExitPlanMode).

The plan goes over the agent websocket instead of a held HTTP request, so the wait survives a
server restart: the client reconnects with backoff and asks for the plan again. Imported only
for plans: asyncio and websockets cost a hook command more than all the rest it does.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any, TextIO

from dashboard.client.config import HookConfig, HookFailed, where_headers
from dashboard.integrations.claude_code.decision import permission_decision

SOCKET_PATH = "/ws/agent/"
# Close codes the agent socket uses for refusals that retrying cannot fix.
CLOSE_UNAUTHENTICATED = 4401


class PlanRefused(Exception):
    """The server answered a plan frame with an error (its message is the reason)."""


def plan_answer(config: HookConfig, payload: Mapping[str, Any], stderr: TextIO) -> dict[str, Any]:
    """The PermissionRequest answer for a plan, once a reviewer decided or the wait ran out."""
    return asyncio.run(wait_for_plan_decision(config, payload, stderr))


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
