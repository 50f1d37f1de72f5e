"""Agents and browsers take two stacks of one Django project (`dashboard.asgi`): the agent
endpoints skip the browser's middleware and Django's thread per request, pages keep both."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest
from channels.testing import HttpCommunicator

from dashboard.asgi import application
from tests.conftest import todo

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = "sess-agent-stack"


async def call(
    method: str, path: str, body: object = None, token: str = "", host: str = "testserver"
):
    headers = [(b"host", host.encode()), (b"content-type", b"application/json")]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    data = b"" if body is None else json.dumps(body).encode()
    response = await HttpCommunicator(
        application, method, path, body=data, headers=headers
    ).get_response(timeout=10)
    response["headers"] = {
        name.decode().lower(): value.decode() for name, value in response["headers"]
    }
    return response


def step(n: int) -> dict:
    return {
        "session_id": SESSION,
        "hook_event_name": "PostToolUse",
        "cwd": "/src/shop",
        "tool_name": "Read",
        "tool_input": {"file_path": "/src/shop/a.py"},
        "tool_use_id": f"toolu_{n}",
    }


async def test_an_agent_call_is_answered_without_the_browser_middleware(token):
    body = {"todos": [todo("Ship it", "in_progress")]}
    path = f"/api/v1/sessions/{SESSION}/agents/{SESSION}/todos"

    response = await call("PUT", path, body, token=token)

    assert response["status"] == 200, response["body"]
    headers = response["headers"]
    # The security headers every answer gets are there...
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["cache-control"] == "private, no-store"
    # ...and nothing of a browser's: no CSRF or session cookie, no Vary on cookies.
    assert "set-cookie" not in headers
    assert "cookie" not in headers.get("vary", "").lower()


async def test_an_agent_call_starts_no_thread_of_its_own(token):
    for n in range(3):  # warm: the writer and render threads run, the token is cached
        assert (await call("POST", "/hooks/claude-code", step(n), token=token))["status"] == 200
    started = []
    original = threading.Thread.start

    def counting_start(thread: threading.Thread) -> None:
        started.append(thread.name)
        original(thread)

    threading.Thread.start = counting_start
    try:
        for n in range(3, 13):
            assert (await call("POST", "/hooks/claude-code", step(n), token=token))["status"] == 200
    finally:
        threading.Thread.start = original

    assert started == []


async def test_pages_still_get_sessions_and_csrf(token):
    response = await call("GET", "/accounts/login/")

    assert response["status"] == 200
    assert "csrftoken=" in response["headers"]["set-cookie"]
    assert "Content-Security-Policy".lower() in response["headers"]


async def test_pages_carry_the_security_headers_and_slash_redirects_of_djangos_middleware():
    page = await call("GET", "/accounts/login/")

    assert page["headers"]["x-frame-options"] == "DENY"
    assert page["headers"]["x-content-type-options"] == "nosniff"
    assert page["headers"]["referrer-policy"] == "same-origin"
    moved = await call("GET", "/settings")
    assert moved["status"] == 301
    assert moved["headers"]["location"] == "/settings/"
    assert (await call("GET", "/healthz", host="evil.example"))["status"] == 400


async def test_the_api_reference_page_is_a_page(token):
    response = await call("GET", "/api/v1/docs")

    assert response["status"] == 200
    assert b"<html" in response["body"].lower()


async def test_an_agent_call_with_a_foreign_host_is_refused(token):
    response = await call("GET", "/api/v1/healthz", host="evil.example")

    assert response["status"] == 400


async def test_both_stacks_answer_liveness(token):
    for path in ("/healthz", "/api/v1/healthz"):
        response = await call("GET", path)
        assert response["status"] == 200
        assert json.loads(response["body"]) == {"status": "ok"}


def test_the_server_starts_requests_without_a_thread_hop():
    """Importing the ASGI application leaves `request_started` without receivers (see
    `dashboard.asgi.skip_the_request_started_hop`); checked in a process of its own, since
    Django's test client connects them again."""
    code = (
        "import dashboard.asgi; from django.core import signals; "
        "print(len(signals.request_started._live_receivers(None)[0]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "0"
