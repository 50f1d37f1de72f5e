"""The Codex CLI version Agentboard is tested against, installed from npm into `var/codex/`
(or `$AGENTBOARD_CODEX_CLI_DIR`): `python -m tests.codex_cli.install`. The npm package brings a
native binary for the platform (here linux x86_64) as a dependency."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.npm_cli import NpmCli

__all__ = ["VERSION", "install"]

VERSION = "0.169.0"
# `codex --version` says "codex-cli 0.169.0".
CLI = NpmCli(
    name="Codex CLI",
    package="@openai/codex",
    command="codex",
    folder="codex",
    env_var="AGENTBOARD_CODEX_CLI_DIR",
    version_word=-1,
)


def install(version: str = VERSION) -> Path:
    return CLI.install(version)


if __name__ == "__main__":
    sys.exit(CLI.main([VERSION]))
