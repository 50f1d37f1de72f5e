"""Gates on an agent's tool call: a capability above the hooks (the budgets of
`dashboard.costs`) says whether a session's next tool call runs. Asked by the PreToolUse hook
(and opencode's plugin) inside the writer, so a gate must be cheap (no query on its common
path) and may record what it refuses."""

from __future__ import annotations

from typing import Any, Protocol


class Gate(Protocol):
    def __call__(self, session_pk: int, *, owner: Any = None, record: bool = True) -> str | None:
        """The sentence the model reads instead of its tool's result, or None to let it run;
        with `record`, a refusal is recorded (the call is refused now)."""
        ...


TOOL_GATES: list[Gate] = []


def tool_refusal(session_pk: int, *, owner: Any = None, record: bool = True) -> str | None:
    for gate in TOOL_GATES:
        refusal = gate(session_pk, owner=owner, record=record)
        if refusal:
            return refusal
    return None


def tool_gated(session_pk: int) -> bool:
    """Whether the session's next tool call would be refused now (nothing recorded): a client
    that cannot ask before every call (opencode's plugin) asks only while this holds."""
    return tool_refusal(session_pk, record=False) is not None
