from __future__ import annotations

import http.cookiejar
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.liveserver import ROOT, LiveServer

WAIT = 30  # seconds: a bound for things that normally take well under one


@pytest.fixture(autouse=True)
def home(tmp_path_factory, monkeypatch) -> Path:
    """A home of its own: the installers write the user's settings (~/.claude/settings.json)."""
    folder = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(folder))
    return folder


class HookProcess:
    """`agentboard hook` running as Claude Code runs it: payload on stdin, answer on stdout."""

    def __init__(
        self,
        payload: dict | str,
        *,
        url: str,
        token: str,
        extra_env: dict | None = None,
        args: tuple[str, ...] = (),
    ) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO"))}
        env.update({"AGENTBOARD_URL": url, "AGENTBOARD_TOKEN": token, **(extra_env or {})})
        self.process = subprocess.Popen(
            [sys.executable, "-m", "dashboard.client", "hook", *args],
            cwd=ROOT,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.stderr_lines: queue.Queue[str] = queue.Queue()
        self.stderr_seen: list[str] = []
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        assert self.process.stdin is not None
        self.process.stdin.write(payload if isinstance(payload, str) else json.dumps(payload))
        self.process.stdin.close()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr_lines.put(line.rstrip("\n"))

    def wait_for_stderr(self, text: str, timeout: float = WAIT) -> str:
        """The first stderr line containing `text` (bounded wait, no sleeping)."""
        while True:
            try:
                line = self.stderr_lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(
                    f"no stderr line with {text!r}; saw {self.stderr_seen}"
                ) from None
            self.stderr_seen.append(line)
            if text in line:
                return line

    def finish(self, timeout: float = WAIT) -> tuple[int, str, str]:
        """(exit code, stdout, all of stderr)."""
        assert self.process.stdout is not None
        stdout = self.process.stdout.read()
        code = self.process.wait(timeout)
        self._reader.join(timeout)
        while not self.stderr_lines.empty():
            self.stderr_seen.append(self.stderr_lines.get_nowait())
        return code, stdout, "\n".join(self.stderr_seen)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)


@pytest.fixture(autouse=True)
def no_claude_on_path(monkeypatch) -> None:
    """What install-hooks writes depends on the Claude Code on PATH (`claude --version`): here
    there is none, unless a test puts one there or says which with --claude-version."""
    folders = os.environ.get("PATH", "").split(os.pathsep)
    kept = [folder for folder in folders if not (Path(folder) / "claude").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(kept))


@pytest.fixture
def run_hook() -> Iterator:
    started: list[HookProcess] = []

    def start(payload: dict | str, **options) -> HookProcess:
        process = HookProcess(payload, **options)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


class Reviewer:
    """A reviewer's browser session on a live server, through its login and review forms."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))

    def _csrf(self) -> str:
        return next(c.value for c in self.cookies if c.name == "csrftoken")

    def _post(self, path: str, fields: dict[str, str]) -> str:
        data = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": self._csrf()}).encode()
        request = urllib.request.Request(self.server.url + path, data=data, method="POST")
        with self.opener.open(request, timeout=WAIT) as response:
            return response.read().decode()

    def log_in(self) -> None:
        self.opener.open(f"{self.server.url}/accounts/login/", timeout=WAIT).read()
        self._post(
            "/accounts/login/", {"username": self.server.username, "password": self.server.password}
        )

    def decide(self, plan_id: int, action: str, text: str = "") -> str:
        self.log_in()
        return self._post(f"/plans/{plan_id}/decide/", {"action": action, "text": text})

    def waiting_request(self, timeout: float = WAIT) -> int:
        """The id of the first permission request the inbox lists, once there is one."""
        self.log_in()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.opener.open(f"{self.server.url}/inbox/", timeout=WAIT) as response:
                found = re.search(r'id="inbox-permission-(\d+)"', response.read().decode())
            if found:
                return int(found.group(1))
            time.sleep(0.1)
        raise AssertionError("no permission request reached the inbox")

    def answer(self, request_id: int, action: str, **fields: str) -> str:
        return self._post(f"/inbox/requests/{request_id}/decide/", {"action": action, **fields})


@pytest.fixture
def reviewer_browser() -> type[Reviewer]:
    return Reviewer


def api_get(server: LiveServer, path: str) -> dict:
    request = urllib.request.Request(
        server.url + path, headers={"Authorization": f"Bearer {server.token}"}
    )
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        return json.load(response)


def git(*args: str, cwd: Path) -> None:
    """The real git binary, quietly; new repositories start on `main` whatever the machine says."""
    subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args], cwd=cwd, check=True, capture_output=True
    )


def make_repository(folder: Path, origin: str | None = None) -> Path:
    """A git repository made by `git init`, with `origin` as its remote when given."""
    folder.mkdir(parents=True, exist_ok=True)
    git("init", "-q", cwd=folder)
    if origin is not None:
        git("remote", "add", "origin", origin, cwd=folder)
    return folder


def add_worktree(repository: Path, folder: Path) -> Path:
    """`git worktree add` of a new branch at `folder` (after a first commit, which it needs)."""
    someone = ("-c", "user.name=Dev", "-c", "user.email=dev@example.com")
    git(*someone, "commit", "-q", "--allow-empty", "-m", "Start", cwd=repository)
    git("worktree", "add", "-q", "-b", folder.name, str(folder), cwd=repository)
    return folder
