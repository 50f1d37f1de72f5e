"""The Claude Code versions Agentboard supports, installed from npm into `var/claude-code/`
(or `$AGENTBOARD_CLAUDE_CLI_DIR`): `python -m tests.claude_cli.install`."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.npm_cli import NpmCli

__all__ = ["NEWEST", "OLDEST", "VERSIONS", "install"]

# The oldest and the newest Claude Code Agentboard is tested against. The newest must be pinned
# explicitly: its package metadata asks for Node 22, so npm on Node 20 would pick an older one.
OLDEST = "2.1.197"
NEWEST = "2.1.332"
VERSIONS = (OLDEST, NEWEST)
CLI = NpmCli(
    name="Claude Code",
    package="@anthropic-ai/claude-code",
    command="claude",
    folder="claude-code",
    env_var="AGENTBOARD_CLAUDE_CLI_DIR",
)


def install(version: str) -> Path:
    return CLI.install(version)


if __name__ == "__main__":
    sys.exit(CLI.main(VERSIONS))
