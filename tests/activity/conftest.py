from __future__ import annotations

from tests.hooks.conftest import (
    SESSION_ID,
    hook,  # noqa: F401 - the hook fixture, for these tests too
    load_fixture,
)


def tool_event(event: str, tool_use_id: str, tool_name: str = "Bash", **changes) -> dict:
    """A tool hook of Claude Code (PreToolUse, PostToolUse, …) for one call, from the sample
    PermissionRequest's shape."""
    payload = load_fixture(
        "permission_request_bash.json",
        hook_event_name=event,
        tool_use_id=tool_use_id,
        tool_name=tool_name,
    )
    payload.pop("permission_suggestions", None)
    payload.update(changes)
    return payload


__all__ = ["SESSION_ID", "load_fixture", "tool_event"]
