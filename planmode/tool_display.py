"""What a permission request asks for, as the inbox shows it: the command, the file and its
diff, the address, the MCP tool and its arguments, or else the raw input.

Tool inputs come from agents: everything here is plain text for templates to escape, and
bounded, so a megabyte-long command or diff cannot swamp a page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictStr, ValidationError

from planmode.selectors import DiffLine, plan_diff

HEADLINE_CHARS = 160
BODY_CHARS = 10_000
DIFF_LINES = 400
DIFF_LINE_CHARS = 400
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})


class _Input(BaseModel):
    model_config = ConfigDict(extra="ignore")


class BashInput(_Input):
    command: StrictStr
    description: StrictStr | None = None


class EditInput(_Input):
    file_path: StrictStr
    old_string: StrictStr = ""
    new_string: StrictStr = ""
    replace_all: bool = False


class WriteInput(_Input):
    file_path: StrictStr
    content: StrictStr = ""


class OneEdit(_Input):
    old_string: StrictStr = ""
    new_string: StrictStr = ""


class MultiEditInput(_Input):
    file_path: StrictStr
    edits: list[OneEdit]


class NotebookEditInput(_Input):
    notebook_path: StrictStr
    new_source: StrictStr = ""
    cell_id: StrictStr | None = None
    edit_mode: StrictStr | None = None


class WebFetchInput(_Input):
    url: StrictStr
    prompt: StrictStr | None = None


class WebSearchInput(_Input):
    query: StrictStr


@dataclass(frozen=True)
class RequestView:
    """One request, ready for a template: all fields are plain text."""

    kind: str  # "bash", "edit", "web", "mcp" or "other"
    tool: str  # as people read it: "Bash", "Edit", "MCP github · create_issue"
    headline: str  # the loudest text of the row
    description: str = ""
    body: str = ""  # the full command, query or prompt
    diff: list[DiffLine] = field(default_factory=list)
    diff_lines_left_out: int = 0
    added: int = 0
    removed: int = 0
    arguments: str = ""  # pretty JSON for MCP and unknown tools
    left_out: int = 0  # characters of body or arguments not shown

    @property
    def has_diff(self) -> bool:
        return bool(self.diff)


def describe(tool_name: str, tool_input: dict[str, Any]) -> RequestView:
    """The view of any tool's request; an input of an unexpected shape shows as its JSON."""
    try:
        if tool_name == "Bash":
            return _bash(BashInput.model_validate(tool_input))
        if tool_name in EDIT_TOOLS:
            return _edit(tool_name, tool_input)
        if tool_name == "WebFetch":
            fetch = WebFetchInput.model_validate(tool_input)
            body, left_out = _bounded(fetch.prompt or "")
            return RequestView(
                "web", "WebFetch", _headline(fetch.url), body=body, left_out=left_out
            )
        if tool_name == "WebSearch":
            search = WebSearchInput.model_validate(tool_input)
            body, left_out = _bounded(search.query)
            return RequestView(
                "web", "WebSearch", _headline(search.query), body=body, left_out=left_out
            )
    except ValidationError:
        pass
    arguments, left_out = _bounded(json.dumps(tool_input, indent=2, ensure_ascii=False))
    if tool_name.startswith("mcp__") and tool_name.count("__") >= 2:
        _, server, tool = tool_name.split("__", 2)
        return RequestView(
            "mcp",
            f"MCP {server} · {tool}",
            _headline(f"{server} · {tool}"),
            arguments=arguments,
            left_out=left_out,
        )
    return RequestView(
        "other", tool_name, _headline(tool_name), arguments=arguments, left_out=left_out
    )


def _bash(bash: BashInput) -> RequestView:
    body, left_out = _bounded(bash.command)
    return RequestView(
        "bash",
        "Bash",
        _headline(bash.command),
        description=_headline(bash.description or "", limit=300),
        body=body,
        left_out=left_out,
    )


def _edit(tool_name: str, tool_input: dict[str, Any]) -> RequestView:
    if tool_name == "Edit":
        edit = EditInput.model_validate(tool_input)
        path, lines = edit.file_path, plan_diff(edit.old_string, edit.new_string)
    elif tool_name == "Write":
        write = WriteInput.model_validate(tool_input)
        path, lines = write.file_path, plan_diff("", write.content)
    elif tool_name == "MultiEdit":
        multi = MultiEditInput.model_validate(tool_input)
        path, lines = multi.file_path, []
        for one in multi.edits:
            if lines:
                lines.append(DiffLine("gap", ""))
            lines += plan_diff(one.old_string, one.new_string)
    else:
        notebook = NotebookEditInput.model_validate(tool_input)
        path = notebook.notebook_path
        lines = [] if notebook.edit_mode == "delete" else plan_diff("", notebook.new_source)
    added = sum(1 for line in lines if line.kind == "add")
    removed = sum(1 for line in lines if line.kind == "remove")
    shown = [DiffLine(line.kind, line.text[:DIFF_LINE_CHARS]) for line in lines[:DIFF_LINES]]
    return RequestView(
        "edit",
        tool_name,
        _headline(path),
        diff=shown,
        diff_lines_left_out=max(0, len(lines) - DIFF_LINES),
        added=added,
        removed=removed,
    )


def _headline(text: str, *, limit: int = HEADLINE_CHARS) -> str:
    """One line: the first line of the text, cut with an ellipsis."""
    lines = text.strip().splitlines()
    first = lines[0] if lines else ""
    more = len(lines) > 1
    if len(first) > limit:
        first, more = first[: limit - 1], True
    return first + ("…" if more else "")


def _bounded(text: str) -> tuple[str, int]:
    if len(text) <= BODY_CHARS:
        return text, 0
    return text[:BODY_CHARS], len(text) - BODY_CHARS


def describe_suggestion(suggestion: object) -> str:
    """A permission update Claude Code suggests, in words; empty when it has an unknown shape."""
    if not isinstance(suggestion, dict):
        return ""
    where = DESTINATIONS.get(str(suggestion.get("destination")), "")
    kind = suggestion.get("type")
    if kind in {"addRules", "replaceRules"}:
        rules = suggestion.get("rules")
        if not isinstance(rules, list) or not rules:
            return ""
        written = ", ".join(_rule_text(rule) for rule in rules if isinstance(rule, dict))
        behavior = {"allow": "Always allow", "deny": "Always deny", "ask": "Always ask for"}.get(
            str(suggestion.get("behavior")), "Remember"
        )
        return f"{behavior} {written} {where}".strip()
    if kind == "setMode":
        return f"Switch to {suggestion.get('mode')} mode {where}".strip()
    if kind == "addDirectories":
        directories = suggestion.get("directories")
        if isinstance(directories, list):
            return f"Allow working in {', '.join(map(str, directories))} {where}".strip()
    return ""


def _rule_text(rule: dict[str, Any]) -> str:
    content = rule.get("ruleContent")
    return f"{rule.get('toolName')}({content})" if content else str(rule.get("toolName"))


DESTINATIONS = {
    "session": "for this session",
    "localSettings": "in this project (local settings)",
    "projectSettings": "in this project (shared settings)",
    "userSettings": "in every project of this user",
    "cliArg": "for this run",
}
