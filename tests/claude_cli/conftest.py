"""The real Claude Code CLI against a real Agentboard server and a scripted model.

Each test gets a pinned Claude Code version (both supported ones, by parametrisation), a
scripted model server, and `connect(board)`: a temporary project whose hooks
`agentboard install-hooks` pointed at the board, with its own HOME so nothing of the machine's
own Claude Code setup takes part.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.claude_cli.install import CLI, NEWEST, VERSIONS
from tests.claude_cli.model_server import ModelServer, ToolResult, Turn
from tests.conftest import Element, parse_html
from tests.liveserver import ROOT, LiveServer

# Any key will do for the scripted model; the CLI only asks that one is set (and approved).
API_KEY = "sk-ant-api03-agentboard-scripted-model-key"
RUN_TIMEOUT = 90
WAIT = 30

T = TypeVar("T")


def poll(check: Callable[[], T], timeout: float) -> T | None:
    """Call `check` until it returns something truthy (returned) or `timeout` passes (None)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            return None
        time.sleep(0.1)


def wait_until(check: Callable[[], T], what: str, timeout: float = WAIT) -> T:
    value = poll(check, timeout)
    if not value:
        raise AssertionError(f"Gave up after {timeout} s waiting for {what}.")
    return value


# --- Claude Code itself ---------------------------------------------------------------------


@dataclass(frozen=True)
class ClaudeCode:
    version: str
    path: Path

    @property
    def with_command_hooks(self) -> bool:
        """For a test that must see both kinds of hooks, not each on both versions (every run
        of a real CLI costs CI a minute): the oldest version gets HTTP hooks, the newest
        `agentboard hook` commands."""
        return self.version == NEWEST


@pytest.fixture(params=VERSIONS, ids=[f"claude-{v}" for v in VERSIONS])
def claude_code(request) -> ClaudeCode:
    version = request.param
    found = CLI.path_or_skip(version)
    return ClaudeCode(version=version, path=found)


@pytest.fixture
def model() -> Iterator[ModelServer]:
    server = ModelServer().start()
    yield server
    server.stop()


# --- the project, its hooks and one run of the CLI ------------------------------------------


def _agentboard_command(bin_dir: Path) -> None:
    """`agentboard` as the README installs it, but running this checkout's code."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "agentboard"
    script.write_text(
        "#!/bin/sh\n"
        f"PYTHONPATH={shlex.quote(str(ROOT))} exec {shlex.quote(sys.executable)} "
        '-m dashboard.client "$@"\n'
    )
    script.chmod(0o755)


def _record_hook_inputs(settings_path: Path, events: Sequence[str], log: Path) -> None:
    """Add a command hook for `events` that appends each input, one JSON line, to `log`
    and answers nothing (no decision, no context), beside Agentboard's own hooks."""
    recorder = (
        "import sys; data = sys.stdin.read().strip(); "
        f"open({str(log)!r}, 'a').write(data.replace(chr(10), ' ') + chr(10))"
    )
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(recorder)}"
    settings = json.loads(settings_path.read_text())
    for event in events:
        settings.setdefault("hooks", {}).setdefault(event, []).append(
            {"hooks": [{"type": "command", "command": command, "timeout": 10}]}
        )
    settings_path.write_text(json.dumps(settings, indent=2))


@dataclass
class Project:
    """A project directory with Agentboard's hooks, and how to run Claude Code in it."""

    claude: ClaudeCode
    board: LiveServer
    model: ModelServer
    directory: Path
    home: Path
    env: dict[str, str]
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    outputs: list[str] = field(default_factory=list)
    window: Terminal | None = None
    hook_log: Path | None = None

    def command(self, *args: str, resume: bool = False) -> list[str]:
        """The CLI in this session: a new one, or (`resume`) going on with it."""
        session = "--resume" if resume else "--session-id"
        return [str(self.claude.path), session, self.session_id, *args]

    def run(
        self,
        prompt: str,
        *args: str,
        env: dict[str, str] | None = None,
        allowed_tools: Sequence[str] = ("Bash",),
        resume: bool = False,
    ) -> str:
        """`claude -p` (print mode) to the end; returns what it printed."""
        started = self.start(prompt, *args, env=env, allowed_tools=allowed_tools, resume=resume)
        try:
            stdout, stderr = started.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            started.kill()
            stdout, stderr = started.communicate()
            self.outputs.append(stdout + stderr)
            raise AssertionError(f"claude -p ran over {RUN_TIMEOUT} s.\n{self.report()}") from None
        self.outputs.append(stdout + stderr)
        assert started.returncode == 0, f"claude -p exited {started.returncode}.\n{self.report()}"
        return stdout

    def start(
        self,
        prompt: str,
        *args: str,
        env: dict[str, str] | None = None,
        allowed_tools: Sequence[str] = ("Bash",),
        resume: bool = False,
    ) -> subprocess.Popen[str]:
        """`claude -p` in the background. Bash is allowed (for `true`) unless `allowed_tools`
        says otherwise: print mode has nobody to ask."""
        allowed = ["--allowedTools", *allowed_tools] if allowed_tools else []
        return subprocess.Popen(
            self.command("-p", prompt, *allowed, *args, resume=resume),
            cwd=self.directory,
            env=self.env | (env or {}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def terminal(
        self, prompt: str | None, *args: str, env: dict[str, str] | None = None
    ) -> Terminal:
        """The interactive CLI in a tmux window, started with `prompt` as its first message."""
        if shutil.which("tmux") is None:
            pytest.skip("The interactive Claude Code tests need tmux (apt-get install tmux).")
        self.window = Terminal(
            self.command(*args, *([prompt] if prompt else [])),
            env=self.env | (env or {}),
            cwd=self.directory,
            work_dir=self.home.parent,
        )
        return self.window

    def result_of(self, turn: Turn, timeout: float = WAIT) -> ToolResult:
        """What the CLI sent the model back for the turn's tool call, once it has."""
        try:
            return self.model.wait_for(lambda m: m.tool_result(turn), timeout, "the tool result")
        except AssertionError as error:
            raise AssertionError(f"{error}\n{self.report()}") from None

    def hook_inputs(self, event: str | None = None) -> list[dict[str, Any]]:
        """What Claude Code sent the recorded hook events (see `connect(record=...)`), in
        order; only `event`'s when given."""
        if self.hook_log is None or not self.hook_log.exists():
            return []
        inputs = [json.loads(line) for line in self.hook_log.read_text().splitlines() if line]
        return [i for i in inputs if event is None or i.get("hook_event_name") == event]

    def recorded(self, event: str, count: int = 1) -> list[dict[str, Any]]:
        """The recorded inputs of `event` once there are `count` (the recording hook runs
        beside Agentboard's, so it may finish a moment later)."""
        try:
            return wait_until(
                lambda: (found := self.hook_inputs(event)) and len(found) >= count and found,
                f"{count} recorded {event} hook input(s)",
            )
        except AssertionError as error:
            raise AssertionError(f"{error}\n{self.report()}") from None

    def report(self) -> str:
        """What happened, for a failing assertion: CLI output, the model's requests, the
        board's log."""
        screen = self.window.screen() if self.window is not None and self.window.alive else ""
        recorded = "\n".join(
            f"{i.get('hook_event_name')} {i.get('tool_name', '')} "
            f"{json.dumps(i.get('tool_input'))[:120]}"
            for i in self.hook_inputs()
        )
        return (
            f"--- Claude Code {self.claude.version} output\n{''.join(self.outputs)[-3000:]}\n"
            f"--- terminal\n{screen}\n"
            f"--- model requests\n{self.model.log()}\n"
            f"--- recorded hook inputs\n{recorded[-3000:]}\n"
            f"--- Agentboard log (tail)\n{self.board.log()[-3000:]}"
        )


@pytest.fixture
def connect(claude_code, model, tmp_path) -> Iterator[Callable[..., Project]]:
    """`connect(board)`: a project whose hooks report to `board`, ready to run Claude Code."""
    projects: list[Project] = []

    def connect_(
        board: LiveServer,
        *,
        approvals: bool = False,
        record: Sequence[str] = (),
        command: bool = False,
    ) -> Project:
        """`approvals`: install the hooks with `--approvals` (every tool's permission request
        goes to the inbox). `command`: install `agentboard hook` commands, not HTTP hooks.
        `record`: hook events also written, as Claude Code sent them, to a file beside the
        project (`Project.hook_inputs`), by a command hook of their own."""
        directory = tmp_path / "project"
        home = tmp_path / "home"
        bin_dir = tmp_path / "bin"
        directory.mkdir()
        home.mkdir()
        _agentboard_command(bin_dir)
        # `claude` on PATH, as where people install it: install-hooks asks it its version.
        path = [str(bin_dir), str(claude_code.path.parent), os.environ.get("PATH", "")]
        env = {
            "PATH": os.pathsep.join(path),
            "HOME": str(home),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "ANTHROPIC_BASE_URL": model.url,
            "ANTHROPIC_API_KEY": API_KEY,
            "AGENTBOARD_TOKEN": board.token,
            # Nothing leaves the machine but the calls to the scripted model.
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        subprocess.run(
            [
                "agentboard",
                "install-hooks",
                "--project",
                str(directory),
                "--url",
                board.url,
                *(["--approvals"] if approvals else []),
                *(["--command"] if command else []),
            ],
            env=env,
            check=True,
            capture_output=True,
            timeout=60,
        )
        hook_log = tmp_path / "hook-inputs.jsonl"
        if record:
            _record_hook_inputs(directory / ".claude" / "settings.json", record, hook_log)
        # A first start of the interactive CLI asks for a theme, whether to trust the folder
        # and whether to use the key from the environment: all answered already.
        (home / ".claude.json").write_text(
            json.dumps(
                {
                    "hasCompletedOnboarding": True,
                    "theme": "dark",
                    "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
                    "projects": {
                        str(directory): {
                            "hasTrustDialogAccepted": True,
                            "hasCompletedProjectOnboarding": True,
                            "allowedTools": [],
                        }
                    },
                }
            )
        )
        project = Project(
            claude=claude_code,
            board=board,
            model=model,
            directory=directory,
            home=home,
            env=env,
            hook_log=hook_log,
        )
        projects.append(project)
        return project

    yield connect_
    for project in projects:
        if project.window is not None:
            project.window.close()


# --- the interactive CLI in tmux ------------------------------------------------------------


class Terminal:
    """A tmux server of its own (its socket in the test's folder, so nothing else on the
    machine is touched) with one window."""

    def __init__(self, command: list[str], *, env: dict[str, str], cwd: Path, work_dir: Path):
        self.socket = work_dir / "tmux.socket"
        script = work_dir / "terminal.sh"
        # The window stays after the CLI exits, so a failure still shows its last screen.
        script.write_text(
            "#!/bin/sh\n"
            + "".join(f"export {name}={shlex.quote(value)}\n" for name, value in env.items())
            + f"cd {shlex.quote(str(cwd))}\n"
            + f"{shlex.join(command)}\n"
            + 'echo "[claude exited with $?]"\nexec sleep 600\n'
        )
        script.chmod(0o755)
        self.alive = True
        self._tmux("new-session", "-d", "-x", "160", "-y", "50", str(script))

    def _tmux(self, *args: str) -> str:
        result = subprocess.run(
            ["tmux", "-S", str(self.socket), "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=20,
        )
        return result.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p")

    def wait_for(self, *texts: str, timeout: float = WAIT) -> str:
        """The screen once it shows any of `texts`."""

        def showing() -> str:
            screen = self.screen()
            return screen if any(text in screen for text in texts) else ""

        return wait_until(showing, f"the terminal to show one of {texts}", timeout)

    def press(self, *keys: str) -> None:
        self._tmux("send-keys", *keys)

    def type(self, text: str) -> None:
        """Type `text` at the prompt and send it once the prompt shows it."""
        self.press("-l", text)
        self.wait_for(text)
        self.press("Enter")

    def answer(self, key: str, done: Callable[[], object], what: str) -> None:
        """Press `key` in a dialog until `done()`: newer versions ignore keys for a moment
        after a dialog opens, so a single early press can be lost."""

        def pressed() -> object:
            self.press(key)
            return poll(done, timeout=1.0)

        wait_until(pressed, what)

    def close(self) -> None:
        if self.alive:
            self._tmux("kill-server")
            self.alive = False


# --- the board as an agent and as the lead see it -------------------------------------------


def board_get(board: LiveServer, path: str) -> Any:
    """GET an agent API path with the token."""
    request = urllib.request.Request(
        board.url + path, headers={"Authorization": f"Bearer {board.token}"}
    )
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        return json.load(response)


@dataclass(frozen=True)
class Concern:
    """An episode of an agent needing a look, as the board stored it."""

    kind: str
    detail: str
    ended: bool
    end_reason: str


def concerns(board: LiveServer, session_id: str) -> list[Concern]:
    """The session's concerns, oldest first, read from the board's database."""
    rows = board.query(
        "SELECT c.kind, c.detail, c.ended_at, c.end_reason FROM activity_concern c "
        "JOIN dashboard_session s ON s.id = c.session_id WHERE s.session_id = %s ORDER BY c.id",
        (session_id,),
    )
    return [Concern(kind, detail, ended is not None, why) for kind, detail, ended, why in rows]


@dataclass(frozen=True)
class Looks:
    """Where a session needs a look, as the lead reads it on the pages the board serves."""

    count: int  # the header's one count of what waits on a person
    row: str  # the session's overview row
    banner: str  # its board's banner, the items that ask for a look
    card: str  # its agents' cards, the lines that ask for a look
    inbox: str  # the inbox, the items that ask for a look


def add_reviewer(board: LiveServer, username: str, password: str) -> None:
    """Another reviewer on the board's server (an admin, as its first one is)."""
    script = (
        "from django.contrib.auth.models import User; "
        f"User.objects.create_superuser({username!r}, password={password!r})"
    )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT, env=board.env, check=True, capture_output=True, timeout=60,
    )  # fmt: skip


class Lead:
    """The team lead, logged in to the board in a browser-like session (cookies, CSRF)."""

    def __init__(self, board: LiveServer, username: str = "", password: str = "") -> None:
        self.board = board
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))
        self.get("/accounts/login/")
        status, _ = self.post(
            "/accounts/login/",
            {"username": username or board.username, "password": password or board.password},
        )
        assert status == 200, f"The lead could not log in (HTTP {status})."

    def _open(self, request: urllib.request.Request) -> tuple[int, str]:
        try:
            with self.opener.open(request, timeout=WAIT) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def get(self, path: str) -> str:
        status, body = self._open(urllib.request.Request(self.board.url + path))
        assert status == 200, f"GET {path} answered {status}."
        return body

    def post(self, path: str, fields: dict[str, str]) -> tuple[int, str]:
        csrf = next(c.value for c in self.cookies if c.name == "csrftoken")
        data = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": csrf}).encode()
        return self._open(urllib.request.Request(self.board.url + path, data=data, method="POST"))

    def looks(self, session_id: str) -> Looks:
        """What the overview, the session's board and the inbox say needs a look."""
        overview = parse_html(self.get("/"))
        board = parse_html(self.get(f"/sessions/{session_id}/"))
        inbox = parse_html(self.get("/inbox/"))
        link = f"/sessions/{session_id}/"
        rows = [
            row
            for row in overview.find_all("li", cls="session-row")
            if row.find_all("a", href=link)
        ]
        assert len(rows) == 1, f"The overview has {len(rows)} rows for session {session_id}."

        def read(elements: list[Element]) -> str:
            return " | ".join(element.text() for element in elements)

        return Looks(
            count=int(overview.find(id="plans-waiting").attrs["data-count"] or 0),
            row=rows[0].text(),
            banner=read(board.find(id="session-attention").find_all(data_wait="look")),
            card=read(board.find_all("p", cls="card-waiting", data_wait="look")),
            inbox=read(inbox.find_all("li", data_kind="look")),
        )

    def pending_plan_ids(self) -> list[int]:
        """The plans waiting in the review queue."""
        return [int(pk) for pk in re.findall(r'data-pending-plan="(\d+)"', self.get("/plans/"))]

    def decide(self, plan_id: int, action: str, text: str = "") -> int:
        """Approve or reject on the review page; the HTTP status of the answer."""
        status, _ = self.post(f"/plans/{plan_id}/decide/", {"action": action, "text": text})
        return status

    def countdown_ids(self, session_id: str) -> list[int]:
        """The continuation countdowns showing a Cancel button on the session's board."""
        status, page = self._open(
            urllib.request.Request(f"{self.board.url}/sessions/{session_id}/")
        )
        if status == 404:  # the session's first hook has not arrived yet
            return []
        assert status == 200, f"The session's board answered {status}."
        return [int(pk) for pk in re.findall(r"/continuations/(\d+)/cancel/", page)]

    def pending_request_ids(self) -> list[int]:
        """The permission requests waiting in the inbox, oldest first."""
        found = re.findall(r"/inbox/requests/(\d+)/decide/", self.get("/inbox/"))
        return [int(pk) for pk in dict.fromkeys(found)]

    def request_ids(self) -> list[int]:
        """Every permission request the inbox shows: waiting and recently decided."""
        page = self.get("/inbox/")
        waiting = re.findall(r"/inbox/requests/(\d+)/decide/", page)
        decided = re.findall(r'id="decided-(\d+)"', page)
        return sorted({int(pk) for pk in waiting + decided})

    def decide_request(self, request_id: int, action: str, **fields: str) -> int:
        """Answer a permission request as the inbox's form does (`action`: allow, remember,
        deny or stop); the HTTP status of the answer: 200 (the inbox, after the redirect) when
        it was taken, 409 when the request was already answered."""
        status, _ = self.post(f"/inbox/requests/{request_id}/decide/", {"action": action, **fields})
        return status

    def request_status(self, request_id: int) -> str:
        """The request's state as its own page shows it (pending, allowed, denied, ...)."""
        page = self.get(f"/inbox/requests/{request_id}/")
        decided = re.search(r'<h2 class="status-(\w+)"', page)
        return decided.group(1) if decided else "pending"
