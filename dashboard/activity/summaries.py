"""A tool call in a few words a person reads at a glance, bounded whatever the agent sent.

Every text a step stores passes `bounded_text`: it reads at most a few times its limit of the
input (a 5 MB Write costs the same as a short one), keeps it on one line without control
characters and cuts it to size. Nothing here walks deeper than a tool input's top level (and a
MultiEdit's list of edits, counted up to MAX_EDITS).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings

from dashboard.activity.models import DETAIL_CHARS, SUMMARY_CHARS
from dashboard.core.changes import StepReport
from dashboard.core.redaction import redact, redact_named

MAX_EDITS = 200
# Keys of a tool's input, most telling first: the one an unknown or MCP tool is summarised by.
KEY_ARGUMENTS = (
    "command",
    "cmd",
    "file_path",
    "filePath",
    "path",
    "url",
    "query",
    "q",
    "pattern",
    "description",
    "title",
    "name",
    "prompt",
    "id",
)
_UNPRINTABLE = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]+")
_SURROGATES = re.compile(r"[\ud800-\udfff]")


def bounded_text(text: object, limit: int = SUMMARY_CHARS, *, name: str = "") -> str:
    """`text` as one plain line of at most `limit` characters, its secrets redacted (all of
    it when it is the value of a secret-looking `name`). Every stored text of a step goes
    through here."""
    if not isinstance(text, str):
        text = "" if text is None else str(text) if isinstance(text, int | float) else ""
    head = text[: limit * 4]
    line = _SURROGATES.sub("\ufffd", _UNPRINTABLE.sub(" ", head)).strip()
    line = redact_named(name, line) if name else redact(line)
    if len(line) > limit or len(head) < len(text):
        return line[: limit - 1].rstrip() + "…"
    return line


def first_line(text: object, limit: int = SUMMARY_CHARS) -> str:
    """The first non-empty line of an error, bounded."""
    if not isinstance(text, str):
        return ""
    for line in text[: limit * 4].splitlines():
        if line.strip():
            return bounded_text(line, limit)
    return ""


@dataclass(frozen=True)
class StepDraft:
    """A hook's step before its agent is known (the writer resolves that)."""

    tool_use_id: str
    tool_name: str
    summary: str
    detail: str
    input_hash: str
    at: datetime
    outcome: str
    error: str = ""

    def report(self, *, agent: int, session: int) -> StepReport:
        return StepReport(
            agent=agent,
            session=session,
            tool_use_id=self.tool_use_id,
            tool_name=self.tool_name,
            summary=self.summary,
            detail=self.detail,
            input_hash=self.input_hash,
            at=self.at,
            outcome=self.outcome,
            error=self.error,
        )


def step_draft(
    *,
    tool_use_id: object,
    tool_name: object,
    tool_input: object,
    at: datetime,
    outcome: str,
    error: object = "",
    cwd: str = "",
) -> StepDraft | None:
    """The step a hook reports, or None when it names no call (no id, no tool)."""
    call = bounded_text(tool_use_id, 200)
    tool = bounded_text(tool_name, 200)
    if not call or not tool:
        return None
    summary, detail = summarize(tool, tool_input, cwd=cwd)
    return StepDraft(
        tool_use_id=call,
        tool_name=tool,
        summary=summary,
        detail=detail,
        input_hash=input_hash(tool, tool_input),
        at=at,
        outcome=outcome,
        error=first_line(error) if outcome == "failed" else "",
    )


def input_hash(tool_name: str, tool_input: object) -> str:
    """The same tool with the same input hashes the same (the order of keys aside)."""
    try:
        canonical = json.dumps(tool_input, sort_keys=True, ensure_ascii=False, default=str)
    except (RecursionError, TypeError, ValueError):
        canonical = repr(type(tool_input))
    # Keyed: the hash of an input that holds a secret cannot be checked against guesses.
    digest = hashlib.blake2b(digest_size=16, key=_hash_key())
    digest.update(tool_name.encode())
    digest.update(b"\0")
    digest.update(canonical.encode("utf-8", "replace"))
    return digest.hexdigest()


@functools.cache
def _hash_key() -> bytes:
    return hashlib.blake2b(settings.SECRET_KEY.encode(), digest_size=32).digest()


def summarize(tool_name: str, tool_input: object, *, cwd: str = "") -> tuple[str, str]:
    """(summary, detail): what the call works on, and a few words beside it."""
    args: Mapping[str, Any] = tool_input if isinstance(tool_input, Mapping) else {}
    kind = tool_kind(tool_name)
    if tool_name.startswith("mcp__"):
        server, _, tool = tool_name[5:].partition("__")
        return bounded_text(f"{server} · {tool or server}"), _key_argument(args, DETAIL_CHARS)
    if kind == "bash":
        command = _arg(args, "command", "cmd")
        if isinstance(command, list):
            command = " ".join(str(part) for part in command[:50] if isinstance(part, str))
        return bounded_text(command), bounded_text(_arg(args, "description"), DETAIL_CHARS)
    if kind in {"edit", "multiedit", "write", "notebookedit", "read"}:
        path = _relative(_arg(args, "file_path", "filePath", "notebook_path", "path"), cwd)
        return bounded_text(path), _line_changes(kind, args)
    if kind in {"grep", "glob"}:
        where = _relative(_arg(args, "path"), cwd)
        return bounded_text(_arg(args, "pattern")), bounded_text(where, DETAIL_CHARS)
    if kind == "webfetch":
        return bounded_text(_arg(args, "url")), ""
    if kind == "websearch":
        return bounded_text(_arg(args, "query")), ""
    if kind in {"task", "agent"}:
        return (
            bounded_text(_arg(args, "description", "prompt")),
            bounded_text(_arg(args, "subagent_type", "subagentType"), DETAIL_CHARS),
        )
    if kind in {"todowrite", "update_plan"}:
        items = _arg(args, "todos", "plan")
        count = len(items) if isinstance(items, list) else 0
        return "", f"{count} item{'' if count == 1 else 's'}"
    return _key_argument(args, SUMMARY_CHARS), ""


def tool_kind(tool_name: str) -> str:
    """Claude Code's, Codex's and opencode's names of the same tools, as one."""
    name = tool_name.lower()
    return {"shell": "bash", "local_shell": "bash", "exec_command": "bash"}.get(name, name)


def _arg(args: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = args.get(key)
        if value not in (None, ""):
            return value
    return ""


def _key_argument(args: Mapping[str, Any], limit: int) -> str:
    for key in KEY_ARGUMENTS:
        value = args.get(key)
        if value not in (None, ""):
            return bounded_text(value, limit, name=key)
    # The first short plain value among the first few keys.
    for index, (key, value) in enumerate(args.items()):
        if index >= 20:
            break
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            return bounded_text(value, limit, name=str(key))
    return ""


def _relative(path: object, cwd: str) -> str:
    if not isinstance(path, str):
        return ""
    path = path[: SUMMARY_CHARS * 4]
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def _lines(text: object) -> int:
    if not isinstance(text, str) or not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _line_changes(kind: str, args: Mapping[str, Any]) -> str:
    if kind == "write":
        return f"+{_lines(_arg(args, 'content'))}"
    if kind == "edit":
        added = _lines(_arg(args, "new_string", "newString"))
        removed = _lines(_arg(args, "old_string", "oldString"))
        return f"+{added} \N{MINUS SIGN}{removed}"
    if kind == "multiedit":
        edits = args.get("edits")
        added = removed = 0
        for edit in edits[:MAX_EDITS] if isinstance(edits, list) else []:
            if isinstance(edit, Mapping):
                added += _lines(edit.get("new_string"))
                removed += _lines(edit.get("old_string"))
        return f"+{added} \N{MINUS SIGN}{removed}"
    return ""
