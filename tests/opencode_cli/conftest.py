"""The real opencode CLI, with the plugin `agentboard install-opencode` put in its project, on a
real Agentboard server, with a scripted model behind an OpenAI-compatible provider.

`connect(board)` gives a temporary project with its own HOME (nothing of the machine's own
opencode setup takes part): `run(prompt)` is `opencode run` to its end; `serve()` starts
`opencode serve` there, which the test drives over its HTTP API the way the TUI does (a
continuation or a permission answer needs an opencode that stays up after the turn).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.claude_cli.conftest import _agentboard_command, wait_until
from tests.liveserver import ROOT, LiveServer, free_port
from tests.opencode_cli.install import CLI, VERSION
from tests.opencode_cli.model_server import ModelServer

RUN_TIMEOUT = 120
SESSION_ID_KEY = "sessionID"


@pytest.fixture
def opencode() -> Path:
    return CLI.path_or_skip(VERSION)


@pytest.fixture
def model() -> Iterator[ModelServer]:
    server = ModelServer().start()
    yield server
    server.stop()


PRICE_IN, PRICE_OUT = 3.0, 15.0


def _config(model: ModelServer) -> dict[str, Any]:
    """opencode's config: the scripted model as the only provider, nothing shared or updated."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": model.url, "apiKey": "scripted"},
                # Its price (USD per million tokens): opencode costs each message with it.
                "models": {
                    "scripted": {
                        "name": "Scripted",
                        "cost": {"input": PRICE_IN, "output": PRICE_OUT},
                    }
                },
            }
        },
        "model": "scripted/scripted",
        "small_model": "scripted/scripted",
        "autoupdate": False,
        "share": "disabled",
    }


@dataclass
class Project:
    opencode: Path
    board: LiveServer
    model: ModelServer
    directory: Path
    env: dict[str, str]
    outputs: list[str] = field(default_factory=list)
    server: subprocess.Popen[str] | None = None
    server_url: str = ""

    def run(self, prompt: str) -> str:
        """`opencode run` to its end; returns the session's id."""
        result = subprocess.run(
            [str(self.opencode), "run", "--format", "json", prompt],
            cwd=self.directory,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        self.outputs.append(result.stdout[-3000:] + result.stderr[-3000:])
        assert result.returncode == 0, f"opencode run exited {result.returncode}.\n{self.report()}"
        for line in result.stdout.splitlines():
            if line.startswith("{") and SESSION_ID_KEY in line:
                return json.loads(line)[SESSION_ID_KEY]
        raise AssertionError(f"opencode run named no session.\n{self.report()}")

    # --- `opencode serve`, driven as its TUI would -----------------------------------------

    def serve(self) -> None:
        port = free_port()
        log = (self.directory.parent / "opencode-serve.log").open("a")
        self.server = subprocess.Popen(
            [str(self.opencode), "serve", "--hostname", "127.0.0.1", "--port", str(port)],
            cwd=self.directory,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.server_url = f"http://127.0.0.1:{port}"
        wait_until(lambda: self._answers(), "opencode serve to answer", timeout=60)

    def _answers(self) -> bool:
        # A short wait per try: a request that reaches the server while it starts may never
        # be answered, and must not hold the test for the whole of a normal call's timeout.
        try:
            self.call("GET", "/session", timeout=2)
        except OSError:
            return False
        return True

    def call(self, method: str, path: str, body: Any = None, timeout: float = 30) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.server_url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
        return json.loads(raw) if raw.strip() else None

    def new_session(self) -> str:
        return self.call("POST", "/session", {})["id"]

    def prompt(self, session_id: str, text: str) -> None:
        self.call(
            "POST",
            f"/session/{session_id}/prompt_async",
            {"parts": [{"type": "text", "text": text}]},
        )

    def stop(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(10)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait(5)

    def report(self) -> str:
        served = self.directory.parent / "opencode-serve.log"
        return (
            f"--- opencode output\n{''.join(self.outputs)[-3000:]}\n"
            f"--- opencode serve log\n{served.read_text()[-3000:] if served.exists() else ''}\n"
            f"--- model requests\n{self.model.log()[-3000:]}\n"
            f"--- Agentboard log (tail)\n{self.board.log()[-3000:]}"
        )


# What opencode installs into a project's .opencode/ for its plugins (`@opencode-ai/plugin`
# from npm, about 5 s of each test): kept after the first test, and copied into the next
# projects, where opencode finds it installed.
PLUGIN_DEPENDENCIES = ROOT / "var" / "opencode" / f"plugin-dependencies-{VERSION}"
DEPENDENCY_FILES = ("package.json", "package-lock.json", "bun.lock", ".gitignore", "node_modules")


def _plugin_dependencies_given(directory: Path) -> None:
    if PLUGIN_DEPENDENCIES.is_dir():
        shutil.copytree(PLUGIN_DEPENDENCIES, directory / ".opencode", dirs_exist_ok=True)


def _plugin_dependencies_kept(directory: Path) -> None:
    installed = directory / ".opencode"
    if PLUGIN_DEPENDENCIES.exists() or not (installed / "node_modules").is_dir():
        return
    kept = Path(tempfile.mkdtemp(dir=PLUGIN_DEPENDENCIES.parent, prefix=".plugin-dependencies-"))
    for name in DEPENDENCY_FILES:
        source = installed / name
        if source.is_dir():
            shutil.copytree(source, kept / name, symlinks=True)
        elif source.is_file():
            shutil.copy2(source, kept / name)
    try:
        kept.rename(PLUGIN_DEPENDENCIES)
    except OSError:  # another run kept them first
        shutil.rmtree(kept, ignore_errors=True)


@pytest.fixture
def connect(opencode, model, tmp_path) -> Iterator:
    """`connect(board)`: a project with the Agentboard plugin installed, ready to run opencode."""
    projects: list[Project] = []

    def connect_(board: LiveServer) -> Project:
        directory, home, bin_dir = tmp_path / "project", tmp_path / "home", tmp_path / "bin"
        directory.mkdir()
        home.mkdir()
        _agentboard_command(bin_dir)
        env = {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            # Shared between tests: the provider package opencode fetches from npm once.
            "XDG_CACHE_HOME": str(ROOT / "var" / "opencode" / "cache"),
            "LANG": "C.UTF-8",
            "AGENTBOARD_URL": board.url,
            "AGENTBOARD_TOKEN": board.token,
            # Nothing fetched that the test does not use: the model list from models.dev,
            # which these machines do not reach (the scripted model is configured), the
            # default plugins (providers' sign-ins) and updates.
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
        }
        subprocess.run(
            ["agentboard", "install-opencode", "--project", str(directory)],
            env=env,
            check=True,
            capture_output=True,
            timeout=60,
        )
        (directory / "opencode.json").write_text(json.dumps(_config(model), indent=2))
        _plugin_dependencies_given(directory)
        project = Project(opencode=opencode, board=board, model=model, directory=directory, env=env)
        projects.append(project)
        return project

    yield connect_
    for project in projects:
        project.stop()
        _plugin_dependencies_kept(project.directory)
