from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.models import AgentToken
from tests.liveserver import LiveServer, create_database, drop_database, free_port, server_env

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture
def user(db) -> User:
    return User.objects.create_user("dana", password="a-long-password-1")


@pytest.fixture
def other_user(db) -> User:
    return User.objects.create_user("ana", password="a-long-password-2")


@pytest.fixture
def reviewer(db) -> User:
    return User.objects.create_superuser("lead", password="a-long-password-3")


@pytest.fixture
def token(user) -> str:
    return AgentToken.issue(owner=user, label="test")[1]


class AgentApi:
    """The agent HTTP API as an agent calls it: JSON bodies and a bearer token."""

    def __init__(self, client: Client, token: str | None) -> None:
        self.client = client
        self.token = token

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = dict(extra or {})
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def put_todos(self, session_id: str, agent_id: str, body, headers: dict | None = None):
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        return self.client.put(
            f"/api/v1/sessions/{session_id}/agents/{agent_id}/todos",
            data=data, content_type="application/json", headers=self.headers(headers),
        )

    def get_todos(self, session_id: str, agent_id: str):
        return self.client.get(
            f"/api/v1/sessions/{session_id}/agents/{agent_id}/todos", headers=self.headers()
        )

    def post(self, path: str, body, headers: dict | None = None):
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        return self.client.post(path, data=data, content_type="application/json",
                                headers=self.headers(headers))

    def get(self, path: str):
        return self.client.get(path, headers=self.headers())


@pytest.fixture
def agent_api(client, token) -> AgentApi:
    return AgentApi(client, token)


def todo(content: str, status: str = "pending", active_form: str | None = None) -> dict:
    item = {"content": content, "status": status}
    item["activeForm"] = active_form or f"{content}ing"
    return item


# --- real servers and a real browser -------------------------------------------------------

def services_available() -> bool:
    return bool(os.environ.get("DATABASE_URL", "").startswith("postgres") and os.environ.get("REDIS_URL"))


@pytest.fixture
def server_factory(tmp_path) -> Iterator:
    """Start real `manage.py serve` processes; with DATABASE_URL/REDIS_URL they share both."""
    servers: list[LiveServer] = []
    database: dict[str, str] = {}
    prefix = f"agentboard-test-{secrets.token_hex(4)}"

    def start(*, shared_with: LiveServer | None = None) -> LiveServer:
        data_dir = tmp_path / f"server{len(servers)}"
        data_dir.mkdir()
        database_url = None
        if os.environ.get("DATABASE_URL", "").startswith("postgres"):
            if not database:
                database["url"], database["name"] = create_database(os.environ["DATABASE_URL"])
            database_url = database["url"]
        if shared_with is not None:
            # Same SQLite file and secret key when there is no PostgreSQL.
            shutil.copy(Path(shared_with.env["AGENTBOARD_DATA_DIR"]) / "secret_key", data_dir)
            if database_url is None:
                data_dir.rmdir()
                data_dir = Path(shared_with.env["AGENTBOARD_DATA_DIR"])
        port = free_port()
        server = LiveServer(
            url=f"http://127.0.0.1:{port}", port=port,
            env=server_env(data_dir, database_url=database_url, redis_prefix=prefix),
            log_path=tmp_path / f"server{len(servers)}.log",
        )
        if shared_with is not None:
            server.username, server.password, server.token = (
                shared_with.username, shared_with.password, shared_with.token)
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.stop()
    if database:
        drop_database(os.environ["DATABASE_URL"], database["name"])


@pytest.fixture
def agentboard_server(server_factory) -> LiveServer:
    return server_factory()


@pytest.fixture(scope="session")
def chromium():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Browser tests skipped: {CHROMIUM} is not installed (apt-get install chromium).")
    playwright_sync = pytest.importorskip(
        "playwright.sync_api", reason="Browser tests skipped: the playwright package is missing."
    )
    with playwright_sync.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    yield page
    context.close()


def login(page, server: LiveServer, *, username: str | None = None, password: str | None = None) -> None:
    page.goto(f"{server.url}/accounts/login/")
    page.get_by_label("Username").fill(username or server.username)
    page.get_by_label("Password").fill(password or server.password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{server.url}/")


SCREENSHOTS = Path(__file__).resolve().parent / "e2e" / "screenshots"


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
