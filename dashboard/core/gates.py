"""Gates on an agent's tool call: a capability above the hooks (the budgets of
`dashboard.costs`) says whether a session's next tool call runs. Asked by the PreToolUse hook
inside the writer, so a gate must be cheap (no query on its common path) and may record what
it refuses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# (session pk, owner) -> the sentence the model reads instead of its tool's result, or None.
Gate = Callable[..., "str | None"]

TOOL_GATES: list[Gate] = []


def tool_refusal(session_pk: int, *, owner: Any = None) -> str | None:
    for gate in TOOL_GATES:
        refusal = gate(session_pk, owner=owner)
        if refusal:
            return refusal
    return None
