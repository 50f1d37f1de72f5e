"""Gemini CLI: `agentboard install-gemini` and the `agentboard gemini-hook` it installs.

Gemini CLI runs command hooks listed under `hooks` in its `settings.json` (a project's
`.gemini/settings.json`, run only in trusted folders, or the user's `~/.gemini/settings.json`),
with `hooksConfig.enabled` switched on (its default). Each hook gets one JSON object on stdin
and may print one JSON answer; `agentboard gemini-hook` forwards it to `POST /hooks/gemini` and
prints the server's answer, or nothing when anything goes wrong (Gemini then carries on as if
no hook had answered; the command is in `gemini_hook`). Its timeouts are in milliseconds.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from dashboard.client.install import (
    DEFAULT_WAITS,
    Outcome,
    SettingsError,
    drop_handlers,
    hook_command,
    read_json_object,
    write_merged,
)
from dashboard.core.waits import ORDINARY_HOOK_TIMEOUT, ServerWaits

# The events hooked. BeforeTool and AfterTool of every tool: each call is a step of the agent's
# activity; write_todos updates the checklist. AfterAgent is held for the continuation
# countdown, BeforeTool (with --approvals) while a person decides.
HOOKED_EVENTS: list[str] = [
    "SessionStart",
    "SessionEnd",
    "BeforeAgent",
    "AfterAgent",
    "BeforeTool",
    "AfterTool",
    "Notification",
]
# `hooks` keys that are settings, not events (older Gemini versions kept them there).
CONFIG_FIELDS = ("enabled", "disabled", "notifications")
HOOK_NAME = "agentboard"

OUR_COMMAND = re.compile(r"(^|[\s/])agentboard\s+gemini-hook(\s|$)")


def settings_file(*, project: str | None, user: bool) -> Path:
    if user:
        return Path.home() / ".gemini" / "settings.json"
    return Path(project or ".").expanduser().resolve() / ".gemini" / "settings.json"


def is_ours(handler: Any) -> bool:
    return (
        isinstance(handler, dict)
        and handler.get("type") == "command"
        and bool(OUR_COMMAND.search(str(handler.get("command", ""))))
    )


def timeout_for(event: str, *, approvals: bool, waits: ServerWaits) -> int:
    """The seconds Gemini should let the hook of `event` run: longer than it is held."""
    if event == "AfterAgent":
        return waits.stop_timeout()
    if event == "BeforeTool" and approvals:
        return waits.permission_timeout()
    return ORDINARY_HOOK_TIMEOUT


def merge_gemini_hooks(
    settings: dict[str, Any],
    *,
    url: str | None,
    remove: bool = False,
    approvals: bool = False,
    waits: ServerWaits = DEFAULT_WAITS,
    report_origin: bool = True,
) -> dict[str, Any]:
    """The settings with Agentboard's hooks replaced (or removed), hooks switched on; the input
    is not changed. Every other hook and setting stays as it was."""
    merged = copy.deepcopy(settings)
    hooks = merged.get("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError("'hooks' in the settings file is not an object; fix it by hand first.")
    kept = {field: hooks.pop(field) for field in CONFIG_FIELDS if field in hooks}
    drop_handlers(hooks, ours=is_ours, file="settings file")
    if not remove:
        if not url:
            raise SettingsError("Give the server's address with --url.")
        for event in HOOKED_EVENTS:
            timeout = timeout_for(event, approvals=approvals, waits=waits)
            command = hook_command(
                "gemini-hook", url=url, timeout=timeout, report_origin=report_origin
            )
            handler = {
                "type": "command",
                "name": HOOK_NAME,
                "command": command + (" --approvals" if approvals else ""),
                "timeout": timeout * 1000,
            }
            hooks.setdefault(event, []).append({"hooks": [handler]})
        config = merged.get("hooksConfig")
        if config is None:
            config = merged["hooksConfig"] = {}
        if not isinstance(config, dict):
            raise SettingsError(
                "'hooksConfig' in the settings file is not an object; fix it by hand first."
            )
        # Gemini runs no hook at all with hooks switched off, and none named in `disabled`.
        config["enabled"] = True
        disabled = config.get("disabled")
        if isinstance(disabled, list) and HOOK_NAME in disabled:
            config["disabled"] = [name for name in disabled if name != HOOK_NAME]
    hooks.update(kept)
    if hooks:
        merged["hooks"] = hooks
    else:
        merged.pop("hooks", None)
    return merged


def install_gemini(
    path: Path,
    *,
    url: str | None,
    remove: bool = False,
    approvals: bool = False,
    waits: ServerWaits = DEFAULT_WAITS,
    report_origin: bool = True,
) -> Outcome:
    """Merge into the settings file at `path`, keeping a `.bak` copy of what was there."""
    text, current = read_json_object(path)
    merged = merge_gemini_hooks(
        current,
        url=url,
        remove=remove,
        approvals=approvals,
        waits=waits,
        report_origin=report_origin,
    )
    return write_merged(path, text=text, current=current, merged=merged)
