"""An agent's CLI installed from npm into a cache, one folder per pinned version.

Each `tests/<agent>_cli/install.py` names its package; `python -m tests.<agent>_cli.install`
installs the pinned versions (CI runs it before the suite), and the tests call `install()`
themselves and skip, saying why, when it cannot work.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.liveserver import ROOT

# What each CLI version came to in this test run: its path, or why it cannot be had.
_tried: dict[tuple[str, str], Path | str] = {}


class InstallFailed(Exception):
    """The CLI cannot be installed here; the message says why, in one sentence."""


@dataclass(frozen=True)
class NpmCli:
    name: str  # as people call it: "Claude Code"
    package: str  # on npm: "@anthropic-ai/claude-code"
    command: str  # in node_modules/.bin: "claude"
    folder: str  # under var/: "claude-code"
    env_var: str  # another cache folder: "AGENTBOARD_CLAUDE_CLI_DIR"
    # Which word of `<command> --version` is the version ("2.1.197 (Claude Code)": the first,
    # "codex-cli 0.169.0": the last).
    version_word: int = 0

    def cache_dir(self) -> Path:
        return Path(os.environ.get(self.env_var) or ROOT / "var" / self.folder)

    def executable(self, version: str) -> Path:
        return self.cache_dir() / version / "node_modules" / ".bin" / self.command

    def installed_version(self, path: Path) -> str | None:
        """What `<command> --version` says, or None when it does not run."""
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
        return words[self.version_word] if result.returncode == 0 and words else None

    def install(self, version: str) -> Path:
        """The path of a working CLI of exactly this version, installing it when needed."""
        path = self.executable(version)
        if self.installed_version(path) == version:
            return path
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            raise InstallFailed(
                f"npm and node are needed to install {self.name}; install Node.js 20 or newer."
            )
        prefix = self.cache_dir() / version
        prefix.mkdir(parents=True, exist_ok=True)
        spec = f"{self.package}@{version}"
        quiet = ["--no-audit", "--no-fund", "--loglevel=error"]
        try:
            result = subprocess.run(
                [npm, "install", "--prefix", str(prefix), *quiet, spec],
                capture_output=True,
                text=True,
                timeout=600,
            )
        except subprocess.TimeoutExpired:
            raise InstallFailed(f"npm install {spec} took over 10 minutes.") from None
        if result.returncode != 0:
            last_line = (result.stderr.strip().splitlines() or ["no output"])[-1]
            raise InstallFailed(
                f"npm install {spec} failed (is the npm registry reachable?): {last_line}"
            )
        found = self.installed_version(path)
        if found != version:
            raise InstallFailed(
                f"npm installed {spec} but {path} --version says {found!r} "
                "(is there a build for this platform?)."
            )
        return path

    def path_or_skip(self, version: str) -> Path:
        """For a test: the CLI of this version (installed once per run), or a skip saying why."""
        key = (self.package, version)
        if key not in _tried:
            try:
                _tried[key] = self.install(version)
            except InstallFailed as error:
                _tried[key] = str(error)
        found = _tried[key]
        if isinstance(found, str):
            pytest.skip(f"{self.name} {version} is not available: {found}")
        return found

    def main(self, versions: Sequence[str]) -> int:
        failed = False
        for version in versions:
            try:
                path = self.install(version)
            except InstallFailed as error:
                print(f"{self.name} {version}: {error}", file=sys.stderr)
                failed = True
            else:
                print(f"{self.name} {version}: {path}")
        return 1 if failed else 0
