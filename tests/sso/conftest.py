"""A real OpenID provider (panva's oidc-provider under Node) and Agentboard servers that sign
in with it: `sso_world()` starts both, the provider first (the server reads its discovery
document when it starts) and registered with the server's callback address."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.liveserver import ROOT, LiveServer, free_port, server_env
from tests.sso import install

HERE = Path(__file__).resolve().parent
CLIENT_ID = "agentboard"
CLIENT_SECRET = "a-test-secret-of-the-agentboard-client"
_install_problem: list[str] = []


def node_modules() -> Path:
    """The installed provider, or a skip saying why it cannot be had."""
    if not _install_problem:
        try:
            return install.install()
        except install.InstallFailed as error:
            _install_problem.append(str(error))
    pytest.skip(f"oidc-provider {install.VERSION} is not available: {_install_problem[0]}")


@dataclass
class OpenIdProvider:
    port: int
    state_file: Path
    log_path: Path
    redirect_uri: str
    process: subprocess.Popen | None = None
    state: dict[str, Any] = field(default_factory=lambda: {"mode": "", "accounts": {}})

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write(self, **changes: Any) -> None:
        """Changes what the provider says from its next request on (accounts, mode)."""
        self.state.update(changes)
        self.state_file.write_text(json.dumps(self.state))

    def account(self, login: str, **claims: Any) -> None:
        self.write(accounts={**self.state["accounts"], login: claims})

    def start(self) -> None:
        self.write()
        node = shutil.which("node")
        if node is None:
            pytest.skip("Node.js is needed for the OpenID provider; install Node.js 20.")
        env = {
            "PATH": "/usr/bin:/bin:/usr/local/bin",
            "NODE_PATH": str(node_modules()),
            "OIDC_PORT": str(self.port),
            "OIDC_CLIENT_ID": CLIENT_ID,
            "OIDC_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_REDIRECT_URI": self.redirect_uri,
            "OIDC_POST_LOGOUT_URI": self.redirect_uri.replace(
                "/oidc/callback/", "/accounts/login/"
            ),
            "OIDC_STATE_FILE": str(self.state_file),
        }
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(
                [node, str(HERE / "provider.mjs")], env=env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"The provider exited:\n{self.log_path.read_text()}")
            try:
                discovery = f"{self.issuer}/.well-known/openid-configuration"
                with urllib.request.urlopen(discovery, timeout=2):
                    return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        raise RuntimeError(f"The provider did not answer:\n{self.log_path.read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None


def sso_env(provider: OpenIdProvider, **more: str) -> dict[str, str]:
    return {
        "AGENTBOARD_OIDC_ISSUER": provider.issuer,
        "AGENTBOARD_OIDC_CLIENT_ID": CLIENT_ID,
        "AGENTBOARD_OIDC_CLIENT_SECRET": CLIENT_SECRET,
        "AGENTBOARD_OIDC_NAME": "Acme",
        "AGENTBOARD_OIDC_ADMIN_GROUP": "agentboard-admins",
        **more,
    }


def shell(server: LiveServer, script: str) -> str:
    """Runs Python in the server's Django (its database), as an admin at its shell would."""
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT, env=server.env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


@dataclass
class World:
    provider: OpenIdProvider
    server: LiveServer


@pytest.fixture
def sso_world(tmp_path) -> Iterator:
    """Starts a provider and a server signing in with it; both stop after the test."""
    started: list[Any] = []

    def start(**env: str) -> World:
        port = free_port()
        provider = OpenIdProvider(
            port=free_port(),
            state_file=tmp_path / "provider-state.json",
            log_path=tmp_path / "provider.log",
            redirect_uri=f"http://127.0.0.1:{port}/oidc/callback/",
        )
        started.append(provider)
        provider.start()
        data_dir = tmp_path / "server"
        data_dir.mkdir()
        server = LiveServer(
            url=f"http://127.0.0.1:{port}",
            port=port,
            env=server_env(data_dir) | sso_env(provider, **env),
            log_path=tmp_path / "server.log",
        )
        started.append(server)
        server.start()
        return World(provider, server)

    yield start
    for thing in reversed(started):
        thing.stop()
