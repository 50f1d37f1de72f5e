"""A real Agentboard server in a subprocess, started with the README's `serve` command.

Each server gets its own data folder (SQLite file, secret key). When DATABASE_URL / REDIS_URL
are set, the servers share a fresh PostgreSQL database and a private Redis prefix instead, so
several of them behave like one deployment of many processes.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LiveServer:
    url: str
    port: int
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen | None = None
    username: str = ""
    password: str = ""
    token: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://")

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        """Read the server's database directly (its SQLite file or PostgreSQL); `%s`
        placeholders."""
        url = self.env.get("DATABASE_URL", "")
        if url.startswith("postgres"):
            import psycopg

            with psycopg.connect(url) as connection:
                return connection.execute(sql, params).fetchall()
        import sqlite3

        database = Path(self.env["AGENTBOARD_DATA_DIR"]) / "agentboard.sqlite3"
        with sqlite3.connect(database) as connection:
            return connection.execute(sql.replace("%s", "?"), params).fetchall()

    def log_in(self, username: str = "", password: str = "") -> dict[str, str]:
        """Log in as the first reviewer (or as `username`), as a browser does: its `cookie`
        header and its `csrf` token."""
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        page = opener.open(f"{self.url}/accounts/login/").read().decode()
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        form = urllib.parse.urlencode(
            {
                "username": username or self.username,
                "password": password or self.password,
                "csrfmiddlewaretoken": csrf,
            }
        ).encode()
        opener.open(
            urllib.request.Request(
                f"{self.url}/accounts/login/",
                data=form,
                headers={"Referer": f"{self.url}/accounts/login/"},
            )
        )
        cookies = {cookie.name: cookie.value for cookie in jar}
        return {
            "cookie": "; ".join(f"{name}={value}" for name, value in cookies.items()),
            "csrf": cookies["csrftoken"],
        }

    async def open_board(self, browser: dict[str, str], query: str = "") -> tuple[Any, str]:
        """A logged-in browser's board socket (`query` as the page has it, e.g.
        `?session=...`), and the snapshot the server sent it first."""
        import websockets

        socket = await websockets.connect(
            f"{self.ws_url}/ws/board/{query}",
            additional_headers={"Cookie": browser["cookie"], "Origin": self.url},
            max_size=None,
        )
        return socket, await asyncio.wait_for(socket.recv(), 10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self, timeout: float = 40) -> None:
        log = self.log_path.open("a")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(self.port)],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"The server exited early:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.url}/accounts/login/", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        else:
            raise RuntimeError(f"The server did not answer in {timeout} s:\n{self.log()}")
        if not self.password:
            self._read_bootstrap()

    def _read_bootstrap(self) -> None:
        text = self.log()
        password = re.search(r"password: (\S+)", text)
        token = re.search(r"^\s+(ab_\S+)$", text, re.MULTILINE)
        if password and token:
            self.username, self.password, self.token = "lead", password.group(1), token.group(1)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


def server_env(
    data_dir: Path, *, database_url: str | None = None, redis_prefix: str | None = None
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["AGENTBOARD_DATA_DIR"] = str(data_dir)
    env["PYTHONUNBUFFERED"] = "1"
    # Decisions are sent at once unless a test (through `env`) opens the undo window.
    env.setdefault("AGENTBOARD_UNDO_SECONDS", "0")
    env.pop("DJANGO_SETTINGS_MODULE", None)
    if database_url:
        env["DATABASE_URL"] = database_url
    else:
        env.pop("DATABASE_URL", None)
    if redis_prefix and os.environ.get("REDIS_URL"):
        env["AGENTBOARD_REDIS_PREFIX"] = redis_prefix
    else:
        env.pop("REDIS_URL", None)
    return env


def create_database(base_url: str, *, template: str = "") -> tuple[str, str]:
    """A fresh PostgreSQL database beside the one in base_url (a copy of `template`, when
    named); returns (url, name)."""
    import psycopg

    name = f"agentboard_live_{secrets.token_hex(4)}"
    admin_url = re.sub(r"/[^/]*$", "/postgres", base_url)
    copied = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"{copied}')
    return re.sub(r"/[^/]*$", f"/{name}", base_url), name


# What `serve` leaves in a data folder on its first start, copied into each new server's.
MIGRATED_AND_COLLECTED = """
import django
django.setup()
from django.core.management import call_command
from dashboard.management.commands.serve import _static_files_collected
call_command("migrate", interactive=False, verbosity=0)
_static_files_collected()
"""


@dataclass
class ServerTemplate:
    """A data folder (and on PostgreSQL a database) as a first start of `serve` leaves it,
    made once: a server started from a copy has nothing to migrate or collect."""

    data_dir: Path
    database_url: str = ""
    database_name: str = ""

    @classmethod
    def made(cls, data_dir: Path) -> ServerTemplate:
        base_url = os.environ.get("DATABASE_URL", "")
        template = cls(data_dir)
        if base_url.startswith("postgres"):
            template.database_url, template.database_name = create_database(base_url)
        env = server_env(data_dir, database_url=template.database_url or None)
        env["DJANGO_SETTINGS_MODULE"] = "dashboard.settings"
        done = subprocess.run(
            [sys.executable, "-c", MIGRATED_AND_COLLECTED],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            template.drop()
            raise RuntimeError(f"The servers' template could not be made:\n{done.stderr}")
        return template

    def copy_to(self, data_dir: Path) -> None:
        """A new server's data folder: the SQLite file and the collected static files (linked:
        a server only reads them); its own secret key is made when it starts."""
        data_dir.mkdir()
        for name in ("agentboard.sqlite3", "static-sources"):
            if (self.data_dir / name).exists():
                shutil.copy(self.data_dir / name, data_dir / name)
        shutil.copytree(self.data_dir / "static", data_dir / "static", copy_function=os.link)

    def drop(self) -> None:
        if self.database_name:
            drop_database(os.environ["DATABASE_URL"], self.database_name)


def drop_database(base_url: str, name: str) -> None:
    import psycopg

    admin_url = re.sub(r"/[^/]*$", "/postgres", base_url)
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
