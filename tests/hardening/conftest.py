from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from channels.db import database_sync_to_async

from dashboard.models import Agent, Session
from planmode.models import Plan
from tests.hooks.conftest import hook  # noqa: F401 (the hook-posting fixture, shared)
from todos.models import AgentTracking, Todo, TodoRevision

T = TypeVar("T")


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on a loop of its own in another thread: this one may already run a loop
    (Playwright's, once a browser test has run)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def stored_state() -> tuple:
    """Everything an agent's input can change: a refusal must leave all of it as it was."""
    return (
        list(Session.objects.order_by("pk").values_list("session_id", "cwd", "permission_mode")),
        list(Agent.objects.order_by("pk").values_list("agent_id", "agent_type", "todo_revision")),
        list(Todo.objects.order_by("pk").values_list("agent_id", "content", "external_id")),
        list(TodoRevision.objects.order_by("pk").values_list("agent_id", "number", "new_todos")),
        list(Plan.objects.order_by("pk").values_list("agent_id", "markdown", "plan_file_path")),
        list(AgentTracking.objects.order_by("pk").values_list("agent_id", "seen_step_keys")),
    )


async def stored_state_async() -> tuple:
    return await database_sync_to_async(stored_state)()


@pytest.fixture
def server_errors(caplog) -> Iterable[logging.LogRecord]:
    """The records logged while the test runs, read when asked (pytest gives each phase of a
    test a list of its own, so the setup's list would stay empty)."""
    caplog.set_level(logging.WARNING)
    return LoggedNow(caplog)


class LoggedNow:
    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self.caplog = caplog

    def __iter__(self) -> Iterator[logging.LogRecord]:
        return iter(list(self.caplog.records))


def errors_in(records: Iterable[logging.LogRecord]) -> list[str]:
    return [record.getMessage() for record in records if record.levelno >= logging.ERROR]


@pytest.fixture
async def agent_socket(open_socket, token):
    socket, accepted = await open_socket("/ws/agent/", {"Authorization": f"Bearer {token}"})
    assert accepted
    return socket


async def send_frame(socket, text: str) -> dict:
    """Send raw frame text; return the reply, after checking the socket still answers."""
    await socket.send_to(text_data=text)
    reply = await socket.receive_json_from(timeout=5)
    await socket.send_json_to({"type": "ping", "id": "still-open"})
    assert await socket.receive_json_from(timeout=5) == {"type": "pong", "id": "still-open"}
    return reply
