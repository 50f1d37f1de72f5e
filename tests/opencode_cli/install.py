"""The opencode version Agentboard is tested against, installed from npm into `var/opencode/`
(or `$AGENTBOARD_OPENCODE_DIR`): `python -m tests.opencode_cli.install`."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.npm_cli import NpmCli

__all__ = ["VERSION", "install"]

VERSION = "1.18.33"
CLI = NpmCli(
    name="opencode",
    package="opencode-ai",
    command="opencode",
    folder="opencode",
    env_var="AGENTBOARD_OPENCODE_DIR",
    version_word=-1,
)


def install(version: str = VERSION) -> Path:
    return CLI.install(version)


if __name__ == "__main__":
    sys.exit(CLI.main([VERSION]))
