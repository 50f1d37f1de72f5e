from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

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


@pytest.fixture
async def sync_thread_connections_closed():
    """Async tests reach the database from asgiref's worker thread; close what it opened, or
    PostgreSQL refuses to drop the test database at the end of the run."""
    yield
    await sync_to_async(connections.close_all)()
