"""The real Gemini CLI against a real Agentboard server and a scripted model.

Each test gets the pinned Gemini CLI, a scripted Gemini API server, and `connect(board)`: a
temporary project whose `.gemini/settings.json` `agentboard install-gemini` merged the hooks
into, and a home of its own, so nothing of the machine's own Gemini setup takes part. Gemini
reaches the scripted model through `GOOGLE_GEMINI_BASE_URL` with an API key from the
environment. Gemini runs a project's hooks only in a trusted folder:
`GEMINI_CLI_TRUST_WORKSPACE=true` trusts the project, as a developer does once when asked.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.claude_cli.conftest import _agentboard_command
from tests.gemini_cli.install import CLI, VERSION
from tests.gemini_cli.model_server import ModelServer
from tests.liveserver import LiveServer

RUN_TIMEOUT = 120
# A Gemini 2 model: Gemini CLI offers its `write_todos` tool only to those.
MODEL = "gemini-2.5-flash"


@pytest.fixture
def gemini_cli() -> Path:
    return CLI.path_or_skip(VERSION)


@pytest.fixture
def model() -> Iterator[ModelServer]:
    server = ModelServer().start()
    yield server
    server.stop()


@dataclass
class Project:
    """A project folder with Agentboard's hooks in its Gemini settings, and how to run Gemini."""

    gemini: Path
    board: LiveServer
    model: ModelServer
    directory: Path
    home: Path
    env: dict[str, str]

    def command(self, prompt: str, *, approval_mode: str = "yolo") -> list[str]:
        """`gemini -p`: one prompt without a terminal, to its end."""
        return [
            str(self.gemini),
            "--model",
            MODEL,
            "--approval-mode",
            approval_mode,
            "--output-format",
            "json",
            "--prompt",
            prompt,
        ]

    def run(
        self, prompt: str, *, approval_mode: str = "yolo", timeout: float = RUN_TIMEOUT
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.command(prompt, approval_mode=approval_mode),
            cwd=self.directory,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def start(self, prompt: str, *, approval_mode: str = "yolo") -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(prompt, approval_mode=approval_mode),
            cwd=self.directory,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )

    def session_id(self, result: subprocess.CompletedProcess) -> str:
        """The id Gemini gave the session, as its JSON output says."""
        return json.loads(result.stdout)["session_id"]

    def report(self, result: subprocess.CompletedProcess | None = None) -> str:
        """What to read when a test fails: Gemini's output, the model's requests, the board."""
        parts = []
        if result is not None:
            parts += [f"exit {result.returncode}", result.stdout[-3000:], result.stderr[-3000:]]
        parts += [self.model.log(), self.board.log()[-3000:]]
        return "\n".join(parts)


@pytest.fixture
def connect(gemini_cli, model, tmp_path) -> Iterator[Callable[..., Project]]:
    """`connect(board)`: a project whose Gemini hooks report to `board`."""

    def connect_(board: LiveServer, *, approvals: bool = False) -> Project:
        directory = tmp_path / "project"
        home = tmp_path / "home"
        bin_dir = tmp_path / "bin"
        directory.mkdir()
        (home / ".gemini").mkdir(parents=True)
        _agentboard_command(bin_dir)
        # The user's own settings, as a developer who tried Gemini CLI has them.
        (home / ".gemini" / "settings.json").write_text(
            json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
        )
        env = {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(home),
            "TERM": "dumb",
            "LANG": "C.UTF-8",
            "GEMINI_API_KEY": "scripted-model-key",
            "GOOGLE_GEMINI_BASE_URL": model.url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            # No usage statistics, no update check, no IDE: only the scripted model is asked.
            "GEMINI_CLI_DISABLE_AUTOUPDATER": "true",
            "NO_BROWSER": "true",
            "AGENTBOARD_TOKEN": board.token,
        }
        subprocess.run(
            [
                "agentboard",
                "install-gemini",
                "--url",
                board.url,
                "--project",
                str(directory),
                *(["--approvals"] if approvals else []),
            ],
            env=env,
            check=True,
            capture_output=True,
            timeout=60,
        )
        return Project(
            gemini=gemini_cli,
            board=board,
            model=model,
            directory=directory,
            home=home,
            env=env,
        )

    return connect_
