from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path

import pytest
from django.test import AsyncClient

# Sample payloads as Claude Code sends them, kept with the tests.
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude-code"
HOOK_URL = "/hooks/claude-code"
SESSION_ID = "5b3f0c1e-7a7d-4f63-9c8e-2f1d9a0b6c11"
SUBAGENT_ID = "a4d2c8f1e0b3a297"


def fixture_names() -> list[str]:
    return sorted(path.name for path in FIXTURES.glob("*.json"))


def load_fixture(name: str, **changes) -> dict:
    """A sample payload (a fresh copy), with top-level fields replaced by `changes`."""
    payload = copy.deepcopy(json.loads((FIXTURES / name).read_text()))
    payload.update(changes)
    return payload


@pytest.fixture
def hook(agent_api):
    """POST a payload to the hook endpoint as Claude Code's HTTP hook does."""

    def post(payload, headers: dict | None = None):
        return agent_api.post(HOOK_URL, payload, headers=headers)

    return post


WAIT = 10  # seconds a test waits for something that should take milliseconds


class HookClient:
    """Claude Code's HTTP hooks against the in-process server: send one, or hold one (a task
    that waits for its answer) until something pending of `model` shows up."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.agent = AsyncClient()

    async def hook(self, payload: dict):
        return await self.agent.post(
            HOOK_URL,
            payload,
            content_type="application/json",
            headers={"Authorization": f"Bearer {self.token}"},
        )

    def hold(self, payload: dict) -> asyncio.Task:
        return asyncio.create_task(self.hook(payload))

    async def pending(self, model, task: asyncio.Task, count: int, what: str, wait: float = WAIT):
        """The newest row of `model`, once `count` of them are pending (the answer, checked
        later, shows that the request was held until then)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while await model.objects.filter(status="pending").acount() < count:
            assert not task.done(), task.result().content
            assert loop.time() < deadline, f"the {what} never showed up"
            await asyncio.sleep(0.01)
        return await model.objects.select_related("session", "agent").alatest("pk")


async def answer(task: asyncio.Task) -> dict:
    response = await asyncio.wait_for(task, WAIT)
    assert response.status_code == 200, response.content
    return response.json()
