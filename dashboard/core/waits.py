"""How long the server holds an agent's hook, and how long the hook must be let wait for it.

A held hook (a Stop hook in its continuation countdown, a plan's or a tool's permission
request) is answered by the server when its wait ends; the agent's side gives up at its own
timeout, which the installers write. The two must agree, or the agent gives up first and the
continuation or decision never arrives. So the installers ask the server for its waits and
derive the timeouts from them, and every hook says how long its client waits (its header,
`dashboard.core.headers.HOOK_TIMEOUT_HEADER`): the server never holds one longer than that,
less a margin.

Plain Python, no Django: the agent-side `agentboard` commands use it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The server answers a held hook this long before its client would give up on it.
ANSWER_MARGIN = 5.0
# What installers write for hooks the server never holds.
ORDINARY_HOOK_TIMEOUT = 30
# Room beyond the server's wait in the timeouts installers write for held hooks.
STOP_EXTRA = 15
PERMISSION_EXTRA = 60


@dataclass(frozen=True)
class ServerWaits:
    """The server's waits, in seconds (its settings' defaults here)."""

    countdown: float = 2.0
    plan: float = 540.0
    permission: float = 540.0

    def stop_timeout(self) -> int:
        """The timeout to install for Stop and SubagentStop hooks."""
        return max(ORDINARY_HOOK_TIMEOUT, math.ceil(self.countdown + ANSWER_MARGIN) + STOP_EXTRA)

    def permission_timeout(self) -> int:
        """The timeout to install for PermissionRequest hooks (plans and other tools)."""
        return math.ceil(max(self.plan, self.permission)) + PERMISSION_EXTRA

    def timeout_for(self, event: str) -> int:
        """The seconds an agent should let a hook of `event` run: longer than it is held."""
        if event in HELD_STOP_EVENTS:
            return self.stop_timeout()
        if event in {"PermissionRequest", "PermissionDenied"}:
            # PermissionDenied: a refusal by auto mode waits in the inbox when someone asks.
            return self.permission_timeout()
        return ORDINARY_HOOK_TIMEOUT


HELD_STOP_EVENTS = ("Stop", "SubagentStop")


def bounded_hold(wait: float, client_waits: float | None) -> float:
    """How long to hold a hook for `wait` seconds when its client waits `client_waits` (None
    when it did not say)."""
    if client_waits is None:
        return wait
    return max(0.0, min(wait, client_waits - ANSWER_MARGIN))


def client_waits_from(header: str | None) -> float | None:
    """The header's seconds, or None when it is absent or not a positive number."""
    try:
        seconds = float(header) if header else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 < seconds < 1e9 else None
