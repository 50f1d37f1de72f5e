"""The Claude Code versions Agentboard supports, installed from npm into a cache.

`python -m tests.claude_cli.install` installs every pinned version (CI runs it before the
suite); the tests call `install()` themselves and skip, saying why, when it cannot work.
The cache is `var/claude-code/<version>` in the repository, or `$AGENTBOARD_CLAUDE_CLI_DIR`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.liveserver import ROOT

# The oldest and the newest Claude Code Agentboard is tested against. The newest must be pinned
# explicitly: its package metadata asks for Node 22, so npm on Node 20 would pick an older one.
VERSIONS = ("2.1.197", "2.1.330")
PACKAGE = "@anthropic-ai/claude-code"


class InstallFailed(Exception):
    """Claude Code cannot be installed here; the message says why, in one sentence."""


def cache_dir() -> Path:
    return Path(os.environ.get("AGENTBOARD_CLAUDE_CLI_DIR") or ROOT / "var" / "claude-code")


def executable(version: str) -> Path:
    return cache_dir() / version / "node_modules" / ".bin" / "claude"


def installed_version(path: Path) -> str | None:
    """What `claude --version` says, or None when it does not run."""
    if not path.exists():
        return None
    try:
        result = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": os.environ.get("PATH", ""), "HOME": str(path.parent)},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = result.stdout.split()
    return words[0] if result.returncode == 0 and words else None


def install(version: str) -> Path:
    """The path of a working `claude` of exactly this version, installing it when needed."""
    path = executable(version)
    if installed_version(path) == version:
        return path
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise InstallFailed(
            "npm and node are needed to install Claude Code; install Node.js 20 or newer."
        )
    prefix = cache_dir() / version
    prefix.mkdir(parents=True, exist_ok=True)
    try:
        result = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                f"{PACKAGE}@{version}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
    except subprocess.TimeoutExpired:
        raise InstallFailed(f"npm install {PACKAGE}@{version} took over 10 minutes.") from None
    if result.returncode != 0:
        last_line = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise InstallFailed(
            f"npm install {PACKAGE}@{version} failed (is the npm registry reachable?): {last_line}"
        )
    found = installed_version(path)
    if found != version:
        raise InstallFailed(
            f"npm installed {PACKAGE}@{version} but {path} --version says {found!r}."
        )
    return path


def main() -> int:
    failed = False
    for version in VERSIONS:
        try:
            path = install(version)
        except InstallFailed as error:
            print(f"Claude Code {version}: {error}", file=sys.stderr)
            failed = True
        else:
            print(f"Claude Code {version}: {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
