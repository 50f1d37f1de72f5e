"""The real Codex CLI against a real Agentboard server and a scripted model.

Each test gets the pinned Codex version, a scripted Responses API server, and
`connect(board)`: a temporary project and a `CODEX_HOME` of its own whose hooks
`agentboard install-codex` pointed at the board, so nothing of the machine's own Codex setup
takes part. Codex reaches the scripted model as a custom provider (`model_providers.scripted`,
`wire_api = "responses"`, its key from an environment variable).

Hooks Codex has not been told to trust do not run; a developer trusts them once when Codex
asks. The tests pass `--dangerously-bypass-hook-trust` instead of answering that question,
except the test of that question itself (`Project.terminal(..., trusted=False)`).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.claude_cli.conftest import Terminal, _agentboard_command, wait_until
from tests.codex_cli.install import CLI, VERSION
from tests.codex_cli.model_server import ModelServer
from tests.liveserver import LiveServer

RUN_TIMEOUT = 90
# A model Codex does not know: it offers it the default tools. (With one of its own models the
# interactive CLI first offers an upgrade to a newer one.)
MODEL = "scripted-model"
KEY_VARIABLE = "SCRIPTED_MODEL_KEY"


@pytest.fixture
def codex_cli() -> Path:
    return CLI.path_or_skip(VERSION)


@pytest.fixture
def model() -> Iterator[ModelServer]:
    server = ModelServer().start()
    yield server
    server.stop()


def codex_config(model: ModelServer, project: Path) -> str:
    """config.toml as a developer would write it to use their own model server."""
    return (
        f'model = "{MODEL}"\n'
        'model_provider = "scripted"\n'
        "\n"
        "[model_providers.scripted]\n"
        'name = "Scripted model"\n'
        f'base_url = "{model.url}"\n'
        'wire_api = "responses"\n'
        f'env_key = "{KEY_VARIABLE}"\n'
        "\n"
        f"[projects.{json.dumps(str(project))}]\n"
        'trust_level = "trusted"\n'
    )


@dataclass
class Project:
    """A project folder with Agentboard's hooks in its Codex home, and how to run Codex."""

    codex: Path
    board: LiveServer
    model: ModelServer
    directory: Path
    codex_home: Path
    env: dict[str, str]
    window: Terminal | None = None

    def exec_command(self, prompt: str) -> list[str]:
        """`codex exec`: one turn without a terminal (it never asks for approval)."""
        return [
            str(self.codex),
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            prompt,
        ]

    def run(self, prompt: str, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess:
        """`codex exec` to its end."""
        return subprocess.run(
            self.exec_command(prompt),
            cwd=self.directory,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def start(self, prompt: str) -> subprocess.Popen[str]:
        """`codex exec` in the background."""
        return subprocess.Popen(
            self.exec_command(prompt),
            cwd=self.directory,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )

    def finish(self, running: subprocess.Popen[str]) -> subprocess.CompletedProcess:
        """`codex exec` started in the background, run to its end (killed if it does not end
        in time, failing the test)."""
        try:
            stdout, stderr = running.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            running.kill()
            stdout, stderr = running.communicate()
            raise AssertionError(f"codex exec did not finish.\n{stderr}\n{self.report()}") from None
        return subprocess.CompletedProcess(running.args, running.returncode, stdout, stderr)

    def terminal(self, prompt: str, *, trusted: bool = True) -> Terminal:
        """The interactive CLI in tmux, asking before commands that leave the sandbox;
        `trusted=False` leaves the hooks to be trusted as a developer does, when Codex asks."""
        command = [
            str(self.codex),
            "--no-alt-screen",
            # Without it the interactive CLI may leave a background app-server running after it
            # exits (seen on the first start of a fresh CODEX_HOME).
            "--no-daemon",
            *(["--dangerously-bypass-hook-trust"] if trusted else []),
            "--ask-for-approval",
            "on-request",
            "--sandbox",
            "read-only",
            prompt,
        ]
        work_dir = self.directory.parent
        self.window = Terminal(command, env=self.env, cwd=self.directory, work_dir=work_dir)
        return self.window

    def session_id(self) -> str:
        """The id Codex gave the session: its rollout file is named after it, and is the
        first one (a subagent's thread gets a rollout of its own, named later)."""

        def found() -> str | None:
            files = sorted(self.codex_home.glob("sessions/**/rollout-*.jsonl"))
            return files[0].stem[-36:] if files else None

        return wait_until(found, "Codex to start a session")

    def report(self, result: subprocess.CompletedProcess | None = None) -> str:
        """What to read when a test fails: Codex's output, the model's requests, the board."""
        parts = []
        if result is not None:
            parts += [f"exit {result.returncode}", result.stdout[-3000:], result.stderr[-3000:]]
        if self.window is not None:
            parts.append(self.window.screen())
        parts += [self.model.log(), self.board.log()[-3000:]]
        return "\n".join(parts)


@pytest.fixture
def connect(codex_cli, model, tmp_path) -> Iterator[Callable[..., Project]]:
    """`connect(board)`: a project whose Codex hooks report to `board`."""
    projects: list[Project] = []

    def connect_(board: LiveServer, *, approvals: bool = False) -> Project:
        directory = tmp_path / "project"
        home = tmp_path / "home"
        codex_home = home / ".codex"
        bin_dir = tmp_path / "bin"
        directory.mkdir()
        codex_home.mkdir(parents=True)
        _agentboard_command(bin_dir)
        env = {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(home),
            "CODEX_HOME": str(codex_home),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            KEY_VARIABLE: "scripted-model-key",
            "AGENTBOARD_TOKEN": board.token,
        }
        (codex_home / "config.toml").write_text(codex_config(model, directory))
        subprocess.run(
            [
                "agentboard",
                "install-codex",
                "--url",
                board.url,
                *(["--approvals"] if approvals else []),
            ],
            env=env,
            check=True,
            capture_output=True,
            timeout=60,
        )
        project = Project(
            codex=codex_cli,
            board=board,
            model=model,
            directory=directory,
            codex_home=codex_home,
            env=env,
        )
        projects.append(project)
        return project

    yield connect_
    for project in projects:
        if project.window is not None:
            project.window.close()
