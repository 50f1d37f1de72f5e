"""Steering a real client's agent on a real board, as the API's caller does (the tests of the
real CLIs)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.claude_cli.conftest import wait_until


def steer(board, session_id: str, action: str, **fields: str) -> dict[str, Any]:
    """POST a steering action for the session's main agent with the board's token."""
    request = urllib.request.Request(
        f"{board.url}/api/v1/sessions/{session_id}/agents/{session_id}/{action}",
        data=json.dumps(fields).encode(),
        headers={"Authorization": f"Bearer {board.token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def step_started(board, summary: str) -> bool:
    """Whether the board stored the step of a tool call (its PreToolUse hook came)."""
    rows = board.query("SELECT COUNT(*) FROM activity_step WHERE summary = %s", (summary,))
    return rows[0][0] == 1


def only_session(board) -> str:
    """The id of the one session the board knows, once it knows it."""

    def found() -> str | None:
        rows = board.query("SELECT session_id FROM dashboard_session")
        return rows[0][0] if len(rows) == 1 else None

    return wait_until(found, "the session on the board")


def directive(board) -> tuple[str, str]:
    """The state of the one message or stop sent, and the hook that delivered it."""
    ((state, via),) = board.query("SELECT state, delivered_via FROM steering_directive")
    return state, via
