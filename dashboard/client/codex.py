"""Codex CLI: `agentboard install-codex` and the `agentboard codex-hook` it installs.

Codex runs command hooks only, listed in `hooks.json` beside its `config.toml` (the user's
`$CODEX_HOME`, by default `~/.codex`, or a project's `.codex/`). Each hook gets one JSON object
on stdin and may print one JSON answer; `agentboard codex-hook` forwards it to
`POST /hooks/codex` and prints the server's answer, or nothing when anything goes wrong (Codex
then carries on as if no hook had answered).

Codex 0.169.0 offers its checklist tool, `update_plan`, only when `config.toml` switches it on
(`[tools.update_plan] enabled = true`); install-codex adds that table unless told not to, and
removes only what it added.
"""

from __future__ import annotations

import copy
import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from dashboard.client.config import HookConfig, HookFailed
from dashboard.client.hook import (
    HELD_EVENTS,
    forward,
    held_config,
    read_payload,
    while_parent_lives,
    with_git_branch,
)
from dashboard.client.install import (
    DEFAULT_WAITS,
    TOKEN_VARIABLE,
    SettingsError,
    _write_atomically,
    drop_handlers,
    hook_command,
    read_json_object,
)
from dashboard.core.waits import ServerWaits

CODEX_HOOK_PATH = "/hooks/codex"
# The events hooked, each with the timeout `hook_timeout` gives it from the server's waits.
# PreToolUse and PostToolUse of every tool: each call is a step of the agent's activity;
# update_plan updates the checklist, the others count as steps for the reminders. Codex caps
# SessionEnd hooks at a few seconds.
HOOKED_EVENTS: list[str] = [
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
]
APPROVAL_EVENT = "PermissionRequest"

OUR_COMMAND = re.compile(r"(^|[\s/])agentboard\s+codex-hook(\s|$)")

PLAN_TOOL_MARK = "# Added by agentboard install-codex: Codex's update_plan checklist tool."
PLAN_TOOL_BLOCK = f"{PLAN_TOOL_MARK}\n[tools.update_plan]\nenabled = true\n"


def codex_home(*, project: str | None) -> Path:
    if project is not None:
        return Path(project).expanduser().resolve() / ".codex"
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex").expanduser()


# --- hooks.json ---------------------------------------------------------------------------------


def is_ours(handler: Any) -> bool:
    return (
        isinstance(handler, dict)
        and handler.get("type") == "command"
        and bool(OUR_COMMAND.search(str(handler.get("command", ""))))
    )


def merge_codex_hooks(
    config: dict[str, Any],
    *,
    url: str | None,
    remove: bool = False,
    approvals: bool = False,
    waits: ServerWaits = DEFAULT_WAITS,
    report_origin: bool = True,
) -> dict[str, Any]:
    """The hooks file with Agentboard's hooks replaced (or removed); the input is not changed.
    Every other hook stays as it was. The hook command reports the repository and host on
    every call unless `report_origin` is False."""
    merged = copy.deepcopy(config)
    hooks = merged.get("hooks", {})
    drop_handlers(hooks, ours=is_ours, file="hooks file")
    if not remove:
        if not url:
            raise SettingsError("Give the server's address with --url.")
        events = [*HOOKED_EVENTS, APPROVAL_EVENT] if approvals else HOOKED_EVENTS
        for event in events:
            timeout = waits.timeout_for(event)
            handler = {
                "type": "command",
                "command": hook_command(
                    "codex-hook", url=url, timeout=timeout, report_origin=report_origin
                ),
                "timeout": timeout,
            }
            hooks.setdefault(event, []).append({"hooks": [handler]})
    if hooks:
        merged["hooks"] = hooks
    else:
        merged.pop("hooks", None)
    return merged


# --- config.toml: the update_plan tool ------------------------------------------------------------


def switch_plan_tool(text: str, *, on: bool) -> str:
    """config.toml's text with our `[tools.update_plan]` table added (when the user has not
    set it themselves) or taken out again; everything else in the file stays as it was."""
    without = text.replace("\n" + PLAN_TOOL_BLOCK, "").replace(PLAN_TOOL_BLOCK, "")
    if not on:
        return without
    try:
        tools = tomllib.loads(without).get("tools", {})
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(
            f"config.toml is not valid TOML ({error}); fix it by hand first."
        ) from None
    if isinstance(tools, dict) and "update_plan" in tools:
        return without  # the user's own choice stays
    if not without.strip():
        result = PLAN_TOOL_BLOCK
    else:
        result = without + ("" if without.endswith("\n") else "\n") + "\n" + PLAN_TOOL_BLOCK
    try:
        tomllib.loads(result)
    except tomllib.TOMLDecodeError:
        raise SettingsError(
            "config.toml defines 'tools' in a way no table can be added to; add "
            "'update_plan = { enabled = true }' to it by hand, or pass --no-plan-tool."
        ) from None
    return result


# --- config.toml: the OpenTelemetry export -------------------------------------------------------

OTEL_MARK = "# Added by agentboard install-codex: Codex's OpenTelemetry export to the board."
# The block: the mark, the table and its two keys (`otel_block`); found again by the mark.
OTEL_BLOCK = re.compile(r"\n?" + re.escape(OTEL_MARK) + r"\n\[otel\]\n(?:[^\n]*\n){2}")


def otel_block(url: str) -> str:
    """Codex's `[otel]` table exporting its log events over OTLP/HTTP (protobuf) to the
    board's `/v1/logs`. Codex sends a header's value as written (it reads no variables in
    config.toml): the token comes from OTEL_EXPORTER_OTLP_HEADERS in its environment
    (`TELEMETRY_HEADERS`), which its exporter adds to every export."""
    exporter = f'{{ otlp-http = {{ endpoint = "{url}/v1/logs", protocol = "binary" }} }}'
    return f"{OTEL_MARK}\n[otel]\nlog_user_prompt = false\nexporter = {exporter}\n"


TELEMETRY_HEADERS = f'OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer ${TOKEN_VARIABLE}"'


def switch_otel(text: str, *, url: str | None) -> str:
    """config.toml's text with our `[otel]` table (for `url`) or without it (None); a table
    of the user's own stays, and so does everything else in the file."""
    without = OTEL_BLOCK.sub("", text)
    if not url:
        return without
    try:
        own = "otel" in tomllib.loads(without)
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(
            f"config.toml is not valid TOML ({error}); fix it by hand first."
        ) from None
    if own:
        return without  # the user's own exporter stays
    block = otel_block(url)
    if not without.strip():
        return block
    return without + ("" if without.endswith("\n") else "\n") + "\n" + block


# --- the install -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CodexOutcome:
    hooks_path: Path
    config_path: Path
    changed: list[Path]


def _replace_file(path: Path, old: str | None, new: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if old is not None:
        path.with_name(path.name + ".bak").write_text(old, encoding="utf-8")
    _write_atomically(path, new)


def install_codex(
    home: Path,
    *,
    url: str | None,
    remove: bool = False,
    approvals: bool = False,
    plan_tool: bool = True,
    waits: ServerWaits = DEFAULT_WAITS,
    report_origin: bool = True,
    telemetry: bool = True,
) -> CodexOutcome:
    """Merge into `home`'s hooks.json and config.toml, keeping a `.bak` of what changed."""
    hooks_path, config_path = home / "hooks.json", home / "config.toml"
    changed: list[Path] = []
    text, current = read_json_object(hooks_path)
    merged = merge_codex_hooks(
        current,
        url=url,
        remove=remove,
        approvals=approvals,
        waits=waits,
        report_origin=report_origin,
    )
    if merged != current and (merged or text is not None):
        _replace_file(hooks_path, text, json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
        changed.append(hooks_path)
    try:
        config_text = config_path.read_text(encoding="utf-8") if config_path.exists() else None
    except (OSError, UnicodeDecodeError) as error:
        raise SettingsError(f"{config_path} cannot be read ({error}).") from None
    new_config = switch_plan_tool(config_text or "", on=plan_tool and not remove)
    new_config = switch_otel(new_config, url=url if telemetry and not remove else None)
    if new_config != (config_text or ""):
        _replace_file(config_path, config_text, new_config)
        changed.append(config_path)
    return CodexOutcome(hooks_path=hooks_path, config_path=config_path, changed=changed)


# --- the hook command ---------------------------------------------------------------------------


# How much of the end of Codex's transcript is read for a command's exit code.
TRANSCRIPT_TAIL_BYTES = 256 * 1024


def with_exit_code(payload: dict[str, Any]) -> dict[str, Any]:
    """A command's PostToolUse with its exit code. Codex's hook input tells only the output
    (`false` and `true` look alike); its transcript (`transcript_path`) has the call's end
    already, with the exit code the board needs to tell a failed command from a working one."""
    path, call_id = payload.get("transcript_path"), payload.get("tool_use_id")
    if (
        payload.get("hook_event_name") != "PostToolUse"
        or "exit_code" in payload
        or not isinstance(path, str)
        or not isinstance(call_id, str)
        or not call_id
    ):
        return payload
    code = transcript_exit_code(Path(path), call_id)
    return payload if code is None else {**payload, "exit_code": code}


def transcript_exit_code(transcript: Path, call_id: str) -> int | None:
    """The exit code Codex recorded for the command `call_id` (its `item_completed` event,
    near the end of the transcript), or None when it is not there or cannot be read."""
    try:
        with transcript.open("rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - TRANSCRIPT_TAIL_BYTES))
            tail = file.read()
    except OSError:
        return None
    needle = call_id.encode()
    for line in reversed(tail.splitlines()):
        if needle not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        event = entry.get("payload") if isinstance(entry, dict) else None
        item = event.get("item") if isinstance(event, dict) else None
        if not isinstance(item, dict) or item.get("id") != call_id:
            continue
        code = item.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    return None


def run_codex_hook(config: HookConfig, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    """Always 0, and no output when anything fails: Codex must never be broken by the board."""
    try:
        payload = read_payload(stdin)
        if payload.get("hook_event_name") in HELD_EVENTS:
            # Held until someone decides or the countdown ends; the server answers itself
            # before this gives up (it is told how long that is).
            held = held_config(config, payload)
            output = while_parent_lives(forward, held, payload, CODEX_HOOK_PATH)
        else:
            output = forward(config, with_exit_code(with_git_branch(payload)), CODEX_HOOK_PATH)
    except HookFailed as failure:
        print(f"agentboard: {failure}", file=stderr)
        return 0
    if output:
        print(json.dumps(output), file=stdout)
    return 0
