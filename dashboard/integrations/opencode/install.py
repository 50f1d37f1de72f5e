"""`agentboard install-opencode`: put the Agentboard plugin where opencode loads plugins from.

opencode loads every module in a project's `.opencode/plugin/` folder, and in the user's
`~/.config/opencode/plugin/` for every project. Installing writes our one file there (again
only when it differs); removing deletes it, and only when it is ours.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PLUGIN_NAME = "agentboard.js"
PLUGIN_SOURCE = Path(__file__).parent / "plugin" / PLUGIN_NAME
# The first line of our plugin: a file by that name without it is someone else's.
SIGNATURE = "// Agentboard for opencode"


class InstallError(Exception):
    """The plugin cannot be installed or removed there; the message says why."""


@dataclass
class Outcome:
    path: Path
    changed: bool


def plugin_dir(*, project: str | None = None, user: bool = False) -> Path:
    if user:
        config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        return Path(config) / "opencode" / "plugin"
    return Path(project or ".").resolve() / ".opencode" / "plugin"


def install_plugin(directory: Path, *, remove: bool = False) -> Outcome:
    path = directory / PLUGIN_NAME
    current = path.read_text(encoding="utf-8") if path.is_file() else None
    if current is not None and not current.startswith(SIGNATURE):
        raise InstallError(f"{path} is not Agentboard's plugin; move it away and try again.")
    if remove:
        if current is None:
            return Outcome(path, changed=False)
        path.unlink()
        return Outcome(path, changed=True)
    wanted = PLUGIN_SOURCE.read_text(encoding="utf-8")
    if current == wanted:
        return Outcome(path, changed=False)
    directory.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{PLUGIN_NAME}.tmp")
    partial.write_text(wanted, encoding="utf-8")
    partial.replace(path)
    return Outcome(path, changed=True)
