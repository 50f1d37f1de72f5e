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
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dashboard.client.config import TOKEN_VARIABLE
from dashboard.client.hook import HOOK_PATH
from dashboard.core.headers import HOOK_TIMEOUT_HEADER
from dashboard.core.waits import ServerWaits

DEFAULT_WAITS = ServerWaits()
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
    # Where the session works and what its teammates do (every supported version sends them).
    # Not WorktreeCreate/WorktreeRemove: a hook of those replaces git's own worktree handling
    # (Claude Code then expects the hook to make the worktree); entering one is a CwdChanged.
    ("CwdChanged", None),
    ("TeammateIdle", None),
    ("StopFailure", None),
    ("TaskCreated", None),
    ("TaskCompleted", None),
    ("PermissionRequest", "ExitPlanMode"),
]

# Claude Code refuses HTTP hooks for these events ("HTTP hooks are not supported for
# SessionStart"): they always get the `agentboard hook` command, which forwards to the server.
COMMAND_ONLY_EVENTS = frozenset({"SessionStart"})


@dataclass(frozen=True)
class Background:
    """A command hook Claude Code runs in the background (`"async": true`): it goes on without
    waiting for the hook's answer, which it would not use anyway."""

    # The first Claude Code version seen to run the event's async hook and carry on (older
    # ones get the hook waited on, as before).
    since: tuple[int, int, int]
    # Only these occurrences of the event (a matcher); `waited` gets the others, waited on.
    matcher: str | None = None
    waited: str | None = None


# Which events run in the background, established by running the real CLIs with a hook that
# takes 2 s (`async: true` on every event: the CLI went on at once, and killed the ones still
# running when `claude -p` ended). Only events whose answer Claude Code ignores, or ours never
# carries, and whose order among the others does not matter; the rest are waited on:
# - PreToolUse: it orders a tool call before the todo and Task events the board pairs with it
#   (2.1.197 sends TaskCreated without agent_id), and it may deny; PostToolUse carries the todo
#   reminders; PostToolUseFailure, PermissionDenied, TaskCreated and TaskCompleted are the same
#   tool steps, in order.
# - Stop and SubagentStop: the continuation countdown answers them; PermissionRequest: the
#   decision; UserPromptSubmit: the reminders, a reviewer's message, the list after compaction.
# - SubagentStart: a subagent's card must exist before its own tool events arrive.
# - PreCompact: marks the list to hand back after compaction, before SessionStart(compact).
# - StopFailure: `claude -p` exits right after it, killing a hook still in the background.
# - Notification: neither version waits for it even when it is not async (tried: the permission
#   prompt shows first, and a call approved while the hook still runs goes on at once).
IN_BACKGROUND: dict[str, Background] = {
    # Every session waits for it before its first request to the model. Its answer hands the
    # todo list back only after compaction (`compact`), which stays waited on; a startup,
    # resume or clear answers nothing (a list still pending goes with the next prompt).
    # 2.1.197 and 2.1.330 both send the prompt while it runs.
    "SessionStart": Background((2, 1, 197), matcher="startup|resume|clear", waited="compact"),
    # Its answer is ignored, and Claude Code exits after it. 2.1.330 starts it after `claude -p`
    # has exited and lets it finish; 2.1.197 ends before an async one has even started, so
    # there the exit waits for it.
    "SessionEnd": Background((2, 1, 330)),
    # Their answers are ignored (ours carries none): the board only shows them.
    "CwdChanged": Background((2, 1, 197)),
    "TeammateIdle": Background((2, 1, 197)),
}

# Claude Code 2.1.233+ offers neither TodoWrite nor the Task tools to its newest models unless
# this is set; without them an agent's card stays empty. install-hooks sets it in the settings'
# `env` block, unless told not to.
TODO_TOOLS_VARIABLE = "CLAUDE_CODE_ENABLE_TODO_TOOLS"

OUR_COMMAND = re.compile(r"(^|[\s/])agentboard\s+hook(\s|$)")

# Claude Code's OpenTelemetry export, to the board's OTLP receiver (`/v1/metrics`, `/v1/logs`):
# what its models cost. The token comes from `otelHeadersHelper`, a command Claude Code runs for
# the exporter's headers (`agentboard otel-headers` prints them from AGENTBOARD_TOKEN), so no
# secret lands in the file. Claude Code 2.1.330 ignores these keys in a project's settings
# ("project-scoped settings can't set this key"): they go in the user's settings.
TELEMETRY_HELPER = "agentboard otel-headers"
OUR_HELPER = re.compile(r"(^|[\s/])agentboard\s+otel-headers(\s|$)")


def telemetry_env(url: str) -> dict[str, str]:
    return {
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": url,
        # The board's figures follow within ten seconds (Claude Code's default is a minute).
        "OTEL_METRIC_EXPORT_INTERVAL": "10000",
        "OTEL_LOGS_EXPORT_INTERVAL": "5000",
    }


TELEMETRY_KEYS = tuple(telemetry_env(""))


class SettingsError(Exception):
    """The settings file cannot be merged safely; the message says what to fix."""


@dataclass(frozen=True)
class Outcome:
    path: Path
    changed: bool
    backup: Path | None


def claude_code_version(command: str = "claude") -> tuple[int, int, int] | None:
    """The version of the Claude Code on PATH (`claude --version`: "2.1.330 (Claude Code)"),
    or None when there is none or it does not say."""
    found = shutil.which(command)
    if found is None:
        return None
    try:
        said = subprocess.run(  # noqa: S603 - the user's own `claude`, found on their PATH
            [found, "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_version(said.split()[0] if said.split() else "")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """`2.1.330` as numbers; None for anything else."""
    parts = text.strip().split(".")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


def in_background(version: tuple[int, int, int] | None) -> list[str]:
    """The events whose command hooks run in the background for this Claude Code version."""
    if version is None:
        return []
    return [event for event, background in IN_BACKGROUND.items() if version >= background.since]


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
    telemetry: bool | None = None,
    claude_version: tuple[int, int, int] | None = None,
) -> dict[str, Any]:
    """The settings with Agentboard's hooks replaced (or removed); the input is not changed.
    `telemetry`: also switch Claude Code's export to the board on (True) or off (False), or
    leave it as it is (None, for a project's settings, where Claude Code ignores it).

    Installing also switches Claude Code's todo tools on (`todo_tools`), or off again when
    False; removing switches them off again, as before the install. With `approvals`, every
    tool's permission request goes to the board's inbox, not only plans. HTTP hooks send the
    `origin` headers (repository and host), unless `report_origin` is False, which also tells
    the command hooks not to report them. The command hooks of the events `IN_BACKGROUND` for
    `claude_version` (None: unknown, so none) run in the background."""
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
            as_command = command or event in COMMAND_ONLY_EVENTS
            handler = our_handler(
                url=url,
                timeout=timeout,
                command=as_command,
                report_origin=report_origin,
                origin=origin,
            )
            background = IN_BACKGROUND.get(event)
            if as_command and background and event in in_background(claude_version):
                groups = [_group(background.matcher, {**handler, "async": True})]
                if background.waited:
                    groups.append(_group(background.waited, handler))
            else:
                groups = [_group(matcher, handler)]
            hooks.setdefault(event, []).extend(groups)
    _switch_todo_tools(merged, on=todo_tools and not remove)
    if telemetry is not None:
        merged = merge_telemetry(merged, url=url if telemetry and not remove else None)
    if hooks:
        merged["hooks"] = hooks
    else:
        merged.pop("hooks", None)
    return merged


def _group(matcher: str | None, handler: dict[str, Any]) -> dict[str, Any]:
    return {"matcher": matcher, "hooks": [handler]} if matcher else {"hooks": [handler]}


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


def merge_telemetry(settings: dict[str, Any], *, url: str | None) -> dict[str, Any]:
    """The settings exporting Claude Code's telemetry to the board at `url`, or (None) with
    Agentboard's export taken out, the user's own `env` entries kept; the input is not
    changed. Agentboard's export is recognised by its headers helper."""
    merged = copy.deepcopy(settings)
    env = merged.get("env", {})
    if not isinstance(env, dict):
        raise SettingsError("'env' in the settings file is not an object; fix it by hand first.")
    if OUR_HELPER.search(str(merged.get("otelHeadersHelper", ""))):
        for key in TELEMETRY_KEYS:
            env.pop(key, None)
        del merged["otelHeadersHelper"]
    if url:
        env.update(telemetry_env(url))
        merged["otelHeadersHelper"] = TELEMETRY_HELPER
    if env:
        merged["env"] = env
    else:
        merged.pop("env", None)
    return merged


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
    telemetry: bool | None = None,
    claude_version: tuple[int, int, int] | None = None,
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
        telemetry=telemetry,
        claude_version=claude_version,
    )
    return write_merged(path, text=text, current=current, merged=merged)


def install_telemetry(path: Path, *, url: str | None) -> Outcome:
    """Switch Claude Code's export to the board on (`url`) or off (None) in the settings file
    at `path` (the user's), keeping a `.bak` copy."""
    text, current = read_json_object(path)
    return write_merged(path, text=text, current=current, merged=merge_telemetry(current, url=url))


def write_merged(
    path: Path, *, text: str | None, current: dict[str, Any], merged: dict[str, Any]
) -> Outcome:
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
