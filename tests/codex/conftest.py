from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.hooks.conftest import HookClient

# Payloads as Codex CLI 0.169.0 sends them (recorded from the real CLI, ids and paths replaced).
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
HOOK_URL = "/hooks/codex"
SESSION_ID = "019ab3c2-5d1e-7a40-9c2b-3f6e8d1a2b4c"


def load_fixture(name: str, **changes) -> dict:
    """A sample payload (a fresh copy), with top-level fields replaced by `changes`."""
    payload = copy.deepcopy(json.loads((FIXTURES / name).read_text()))
    payload.update(changes)
    return payload


def plan_update(*steps: tuple[str, str], call_id: str = "call_plan_1") -> dict:
    payload = load_fixture("post_tool_use_update_plan.json", tool_use_id=call_id)
    payload["tool_input"] = {"plan": [{"step": step, "status": status} for step, status in steps]}
    return payload


@pytest.fixture
def hook(agent_api):
    """POST a payload as `agentboard codex-hook` does."""

    def post(payload, headers: dict | None = None):
        return agent_api.post(HOOK_URL, payload, headers=headers)

    return post


class CodexHooks(HookClient):
    """Codex's hooks against the in-process server, held ones included."""

    async def hook(self, payload: dict):
        return await self.agent.post(
            HOOK_URL,
            payload,
            content_type="application/json",
            headers={"Authorization": f"Bearer {self.token}"},
        )


@pytest.fixture
def codex(token) -> CodexHooks:
    return CodexHooks(token)
