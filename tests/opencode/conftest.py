from __future__ import annotations

import pytest

OPENCODE_URL = "/hooks/opencode"
SESSION = "ses_main0001"
SUBAGENT = "ses_child0001"


def session_event(kind: str, session_id: str = SESSION, **info) -> dict:
    """A session.created / updated / deleted event as opencode emits it (trimmed)."""
    return {
        "type": f"session.{kind}",
        "properties": {
            "sessionID": session_id,
            "info": {"id": session_id, "directory": "/work/shop", "title": "", **info},
        },
    }


def todo_event(items: list[dict], session_id: str = SESSION) -> dict:
    return {"type": "todo.updated", "properties": {"sessionID": session_id, "todos": items}}


def asked(**properties: object) -> dict:
    """A `permission.asked` event as opencode sends it for a bash command, with some
    properties changed."""
    return {
        "type": "permission.asked",
        "properties": {
            "id": "per_0001",
            "sessionID": SESSION,
            "permission": "bash",
            "patterns": ["rm -rf build"],
            "always": ["rm *"],
            "metadata": {"command": "rm -rf build", "description": "Clean the build"},
            "tool": {"messageID": "msg_1", "callID": "call_1"},
            **properties,
        },
    }


def item(content: str, status: str = "pending", priority: str = "medium") -> dict:
    return {"content": content, "status": status, "priority": priority}


@pytest.fixture
def opencode(agent_api):
    """POST an event to the opencode endpoint as the plugin does."""

    def post(payload, headers: dict | None = None):
        return agent_api.post(OPENCODE_URL, payload, headers=headers)

    return post
