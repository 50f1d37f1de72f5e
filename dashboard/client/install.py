"""`agentboard install-hooks`: merge Agentboard's hooks into a Claude Code settings file.

Everything already in the file stays; Agentboard's own entries are recognised by their URL
(`.../hooks/claude-code`) or command (`agentboard hook`), so installing twice changes nothing,
installing with another URL replaces them and `--remove` takes out only them.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dashboard.client.hook import HOOK_PATH
from dashboard.core.waits import HOOK_TIMEOUT_HEADER, ServerWaits

DEFAULT_WAITS = ServerWaits()

TOKEN_VARIABLE = "AGENTBOARD_TOKEN"  # noqa: S105 - the variable's name, not a secret
# (event, matcher or None for every occurrence); their timeouts come from the server's waits
# (`hook_timeout`).
HOOKED_EVENTS: list[tuple[str, str | None]] = [
    ("SessionStart", None),
    ("SessionEnd", None),
    ("SubagentStart", None),
    ("SubagentStop", None),
    ("UserPromptSubmit", None),
    ("Stop", None),
    ("PreCompact", None),
    ("Notification", None),
    # Every tool use: its start and end are a step of the agent's activity; todo and plan
    # tools update the board, the others count as steps for the todo reminders (and the answer
    # can carry a reminder back to the model).
    ("PreToolUse", None),
    ("PostToolUse", None),
    ("PostToolUseFailure", None),
    ("PermissionDenied", None),
    ("StopFailure", None),
    ("TaskCreated", None),
    ("TaskCompleted", None),
    ("PermissionRequest", "ExitPlanMode"),
]

# Claude Code refuses HTTP hooks for these events ("HTTP hooks are not supported for
# SessionStart"): they always get the `agentboard hook` command, which forwards to the server.
COMMAND_ONLY_EVENTS = frozenset({"SessionStart"})

# Claude Code 2.1.233+ offers neither TodoWrite nor the Task tools to its newest models unless
# this is set; without them an agent's card stays empty. install-hooks sets it in the settings'
# `env` block, unless told not to.
TODO_TOOLS_VARIABLE = "CLAUDE_CODE_ENABLE_TODO_TOOLS"

OUR_COMMAND = re.compile(r"(^|[\s/])agentboard\s+hook(\s|$)")


class SettingsError(Exception):
    """The settings file cannot be merged safely; the message says what to fix."""


@dataclass(frozen=True)
class Outcome:
    path: Path
    changed: bool
    backup: Path | None


def settings_path(*, project: str | None, user: bool) -> Path:
    if user:
        return Path.home() / ".claude" / "settings.json"
    return Path(project or ".").expanduser().resolve() / ".claude" / "settings.json"


WAITS_PATH = "/api/v1/waits"


def server_waits(url: str, token: str) -> ServerWaits | str:
    """The server's waits (`GET /api/v1/waits`), or one sentence on why they are unknown."""
    if not token:
        return f"{TOKEN_VARIABLE} is not set"
    request = urllib.request.Request(url + WAITS_PATH, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            body = json.loads(response.read())
        return ServerWaits(
            countdown=float(body["continuation_countdown_seconds"]),
            plan=float(body["plan_wait_seconds"]),
            permission=float(body["permission_wait_seconds"]),
        )
    except urllib.error.HTTPError as error:
        return f"the server answered HTTP {error.code}"
    except (urllib.error.URLError, OSError) as error:
        return f"the server is unreachable ({getattr(error, 'reason', error)})"
    except (ValueError, KeyError, TypeError):
        return "the server's answer was not its waits"


def hook_command(name: str, *, url: str, timeout: int, report_origin: bool) -> str:
    """The command line of a command hook (`agentboard hook` or `codex-hook`)."""
    command = f"agentboard {name} --url {shlex.quote(url)} --hook-timeout {timeout}"
    return command if report_origin else command + " --no-origin"


def static_headers(origin: Mapping[str, str]) -> dict[str, str]:
    """The origin headers an HTTP hook can carry as written: Claude Code reads `$NAME` in a
    header value as an environment variable (and sends an empty string for one it may not
    read), so a value with a `$` would arrive changed and is left out."""
    return {name: value for name, value in origin.items() if "$" not in value}


def our_handler(
    *,
    url: str,
    timeout: int,
    command: bool,
    report_origin: bool = True,
    origin: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The hook, saying its timeout to the server too: the server never holds it longer. A
    command reads the repository and host itself on every call; an HTTP hook sends `origin`,
    the ones known at install time."""
    if command:
        return {
            "type": "command",
            "command": hook_command("hook", url=url, timeout=timeout, report_origin=report_origin),
            "timeout": timeout,
        }
    return {
        "type": "http",
        "url": url + HOOK_PATH,
        # Claude Code fills in the token from the environment, so no secret lands in the file.
        "headers": {
            "Authorization": f"Bearer ${TOKEN_VARIABLE}",
            HOOK_TIMEOUT_HEADER: str(timeout),
            **(static_headers(origin or {}) if report_origin else {}),
        },
        "allowedEnvVars": [TOKEN_VARIABLE],
        "timeout": timeout,
    }


def is_ours(handler: Any) -> bool:
    if not isinstance(handler, dict):
        return False
    if handler.get("type") == "http":
        return str(handler.get("url", "")).rstrip("/").endswith(HOOK_PATH)
    if handler.get("type") == "command":
        return bool(OUR_COMMAND.search(str(handler.get("command", ""))))
    return False


def drop_handlers(hooks: object, *, ours: Callable[[Any], bool], file: str) -> None:
    """Take the handlers `ours` recognises out of a hooks object (`{event: [{hooks: [...]}]}`,
    the shape Claude Code and Codex share), in place; a group or event left empty goes too.
    Anything else stays as it was."""
    if not isinstance(hooks, dict):
        raise SettingsError(f"'hooks' in the {file} is not an object; fix it by hand first.")
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            raise SettingsError(
                f"'hooks.{event}' in the {file} is not a list; fix it by hand first."
            )
        kept = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not any(ours(h) for h in handlers):
                kept.append(group)
                continue
            others = [h for h in handlers if not ours(h)]
            if others:
                kept.append({**group, "hooks": others})
        if kept:
            hooks[event] = kept
        elif groups:
            del hooks[event]


def merge_hooks(
    settings: dict[str, Any],
    *,
    url: str | None,
    command: bool = False,
    remove: bool = False,
    todo_tools: bool = True,
    approvals: bool = False,
    waits: ServerWaits = DEFAULT_WAITS,
    report_origin: bool = True,
    origin: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The settings with Agentboard's hooks replaced (or removed); the input is not changed.

    Installing also switches Claude Code's todo tools on (`todo_tools`), or off again when
    False; removing switches them off again, as before the install. With `approvals`, every
    tool's permission request goes to the board's inbox, not only plans. HTTP hooks send the
    `origin` headers (repository and host), unless `report_origin` is False, which also tells
    the command hooks not to report them."""
    merged = copy.deepcopy(settings)
    hooks = merged.get("hooks", {})
    drop_handlers(hooks, ours=is_ours, file="settings file")
    if not remove:
        if not url:
            raise SettingsError("Give the server's address with --url.")
        for event, matcher in HOOKED_EVENTS:
            timeout = waits.timeout_for(event)
            if approvals and event == "PermissionRequest":
                matcher = None  # every tool: plans and all other permission requests
            group: dict[str, Any] = {"matcher": matcher} if matcher else {}
            as_command = command or event in COMMAND_ONLY_EVENTS
            handler = our_handler(
                url=url,
                timeout=timeout,
                command=as_command,
                report_origin=report_origin,
                origin=origin,
            )
            group["hooks"] = [handler]
            hooks.setdefault(event, []).append(group)
    _switch_todo_tools(merged, on=todo_tools and not remove)
    if hooks:
        merged["hooks"] = hooks
    else:
        merged.pop("hooks", None)
    return merged


def _switch_todo_tools(settings: dict[str, Any], *, on: bool) -> None:
    env = settings.get("env", {})
    if not isinstance(env, dict):
        raise SettingsError("'env' in the settings file is not an object; fix it by hand first.")
    if on:
        env[TODO_TOOLS_VARIABLE] = "1"
    elif env.get(TODO_TOOLS_VARIABLE) == "1":
        del env[TODO_TOOLS_VARIABLE]
    if env:
        settings["env"] = env
    else:
        settings.pop("env", None)


def read_json_object(path: Path) -> tuple[str | None, dict[str, Any]]:
    """A settings file's text (None when there is none) and the JSON object it holds."""
    if not path.exists():
        return None, {}
    try:
        text = path.read_text(encoding="utf-8")
        current = json.loads(text) if text.strip() else {}
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise SettingsError(
            f"{path} cannot be read as JSON ({error}); fix it by hand first."
        ) from None
    if not isinstance(current, dict):
        raise SettingsError(f"{path} does not hold a JSON object; fix it by hand first.")
    return text, current


def install_hooks(
    path: Path,
    *,
    url: str | None,
    command: bool = False,
    remove: bool = False,
    todo_tools: bool = True,
    approvals: bool = False,
    waits: ServerWaits = DEFAULT_WAITS,
    report_origin: bool = True,
    origin: Mapping[str, str] | None = None,
) -> Outcome:
    """Merge into the file at `path`, keeping a `.bak` copy of what was there before."""
    text, current = read_json_object(path)
    merged = merge_hooks(
        current,
        url=url,
        command=command,
        remove=remove,
        todo_tools=todo_tools,
        approvals=approvals,
        waits=waits,
        report_origin=report_origin,
        origin=origin,
    )
    if merged == current:
        return Outcome(path=path, changed=False, backup=None)
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if text is not None:
        backup = path.with_name(path.name + ".bak")
        backup.write_text(text, encoding="utf-8")
    _write_atomically(path, json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
    return Outcome(path=path, changed=True, backup=backup)


def _write_atomically(path: Path, text: str) -> None:
    """Claude Code may read the file at any moment: it sees the old or the new one, never half."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
