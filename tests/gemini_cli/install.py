"""The Gemini CLI version Agentboard is tested against, installed from npm into `var/gemini/`
(or `$AGENTBOARD_GEMINI_CLI_DIR`): `python -m tests.gemini_cli.install`. The package is
JavaScript only (Node.js 20 or newer)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.npm_cli import NpmCli

__all__ = ["VERSION", "install"]

VERSION = "0.61.0"
# `gemini --version` says "0.61.0".
CLI = NpmCli(
    name="Gemini CLI",
    package="@google/gemini-cli",
    command="gemini",
    folder="gemini",
    env_var="AGENTBOARD_GEMINI_CLI_DIR",
)


def install(version: str = VERSION) -> Path:
    return CLI.install(version)


if __name__ == "__main__":
    sys.exit(CLI.main([VERSION]))
