"""The OpenID provider the single sign-on tests sign in with: panva's `oidc-provider`, a pinned
version installed from npm into `var/oidc-provider/<version>/` (or `$AGENTBOARD_OIDC_PROVIDER_DIR`):
`python -m tests.sso.install`. The tests skip, saying why, when it cannot be installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.liveserver import ROOT

VERSION = "9.13.3"
PACKAGE = "oidc-provider"


class InstallFailed(Exception):
    """The provider cannot be installed here; the message says why, in one sentence."""


def prefix(version: str = VERSION) -> Path:
    base = os.environ.get("AGENTBOARD_OIDC_PROVIDER_DIR") or ROOT / "var" / "oidc-provider"
    return Path(base) / version


def installed_version(version: str = VERSION) -> str | None:
    manifest = prefix(version) / "node_modules" / PACKAGE / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def install(version: str = VERSION) -> Path:
    """The node_modules folder holding exactly this version, installing it when needed."""
    folder = prefix(version)
    if installed_version(version) == version:
        return folder / "node_modules"
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise InstallFailed("npm and node are needed for the OpenID provider; install Node.js 20.")
    folder.mkdir(parents=True, exist_ok=True)
    spec = f"{PACKAGE}@{version}"
    try:
        result = subprocess.run(
            [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund",
             "--loglevel=error", spec],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise InstallFailed(f"npm install {spec} took over 10 minutes.") from None
    if result.returncode != 0 or installed_version(version) != version:
        last_line = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise InstallFailed(f"npm install {spec} failed (is the registry reachable?): {last_line}")
    return folder / "node_modules"


if __name__ == "__main__":
    try:
        print(f"oidc-provider {VERSION}: {install()}")
    except InstallFailed as error:
        print(f"oidc-provider {VERSION}: {error}", file=sys.stderr)
        sys.exit(1)
