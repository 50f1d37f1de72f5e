"""What a permission request asks for, as the inbox shows it: the command, the file and its
diff, the address, the MCP tool and its arguments, or else the raw input.

Tool inputs come from agents: everything here is plain text for templates to escape, and
bounded, so a megabyte-long command or diff cannot swamp a page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictStr, ValidationError

from planmode.selectors import DiffLine, plan_diff

HEADLINE_CHARS = 160
BODY_CHARS = 10_000
DIFF_LINES = 400
DIFF_LINE_CHARS = 400
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
# Gemini CLI's tools that take the same input as Claude Code's (`file_path`, `old_string`…),
# shown the same way under their own names.
GEMINI_TOOLS = {"run_shell_command": "Bash", "write_file": "Write", "replace": "Edit"}
# The arguments of an MCP tool that say what will happen, most telling first: the first one
# present is the headline, the others that are present lead the rest.
MCP_HEADLINE_KEYS = (
    "title", "subject", "name", "query", "q", "command", "cmd", "sql", "url", "uri",
    "path", "file_path", "filename", "message", "text", "prompt",
)  # fmt: skip
MCP_KEY_ARGUMENTS = (
    "owner", "repo", "repository", "project", "path", "file_path", "url", "uri", "branch",
    "base", "head", "channel", "to", "issue_number", "pull_number", "id",
)  # fmt: skip
KEY_ARGUMENT_CHARS = 80


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


class WebPromptInput(_Input):
    prompt: StrictStr


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
    arguments: str = ""  # MCP: the arguments as indented text; unknown tools: pretty JSON
    left_out: int = 0  # characters of body or arguments not shown

    @property
    def has_diff(self) -> bool:
        return bool(self.diff)


def describe(tool_name: str, tool_input: dict[str, Any]) -> RequestView:
    """The view of any tool's request; an input of an unexpected shape shows as its JSON."""
    if tool_name in GEMINI_TOOLS:
        view = describe(GEMINI_TOOLS[tool_name], tool_input)
        if view.kind != "other":
            return replace(view, tool=tool_name)
    try:
        if tool_name == "web_fetch":  # Gemini CLI's: the URLs are in its prompt
            body, left_out = _bounded(WebPromptInput.model_validate(tool_input).prompt)
            return RequestView("web", tool_name, _headline(body), body=body, left_out=left_out)
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
    if tool_name.startswith("mcp__") and tool_name.count("__") >= 2:
        return _mcp(tool_name, tool_input)
    arguments, left_out = _bounded(json.dumps(tool_input, indent=2, ensure_ascii=False))
    return RequestView(
        "other", tool_name, _headline(tool_name), arguments=arguments, left_out=left_out
    )


def _mcp(tool_name: str, tool_input: dict[str, Any]) -> RequestView:
    """An MCP call leads with what it will do (its title, query, path…), not the tool's name:
    the key arguments first, then the rest, as indented text with real line breaks."""
    _, server, tool = tool_name.split("__", 2)
    headline_key = next(
        (key for key in MCP_HEADLINE_KEYS if _is_shown_scalar(tool_input.get(key))), None
    )
    facts = [
        f"{key}: {_headline(_scalar(tool_input[key]), limit=KEY_ARGUMENT_CHARS)}"
        for key in MCP_KEY_ARGUMENTS
        if key != headline_key and _is_shown_scalar(tool_input.get(key))
    ]
    ordered = {
        key: tool_input[key]
        for key in (headline_key, *MCP_KEY_ARGUMENTS, *tool_input)
        if key is not None and key in tool_input
    }
    arguments, left_out = _bounded(_indented(ordered))
    return RequestView(
        "mcp",
        f"MCP {server} · {tool}",
        _headline(_scalar(tool_input[headline_key]) if headline_key else f"{server} · {tool}"),
        description=_headline(" · ".join(facts), limit=300),
        arguments=arguments,
        left_out=left_out,
    )


def _is_shown_scalar(value: object) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    return isinstance(value, int | float) and not isinstance(value, bool)


def _scalar(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _indented(value: object, depth: int = 0) -> str:
    """Arguments as a person reads them: `key: value` lines, nested values and multi-line
    text indented below their key, lists as `- ` items; never a `\\n` escape. Stops a little
    past BODY_CHARS (the caller cuts it there) however big the input."""
    lines: list[str] = []
    size = 0
    pad = "  " * depth
    if isinstance(value, dict):
        entries = [(f"{key}:", item) for key, item in value.items()]
    elif isinstance(value, list):
        entries = [("-", item) for item in value]
    else:
        return pad + _scalar(value)
    if not entries:
        return pad + ("{}" if isinstance(value, dict) else "[]")
    for label, item in entries:
        if isinstance(item, dict | list) and item:
            line = f"{pad}{label}\n{_indented(item, depth + 1)}"
        elif isinstance(item, str) and "\n" in item.strip():
            inner = "\n".join(f"{pad}  {text}".rstrip() for text in item.strip("\n").splitlines())
            line = f"{pad}{label}\n{inner}"
        elif isinstance(item, str):
            line = f"{pad}{label} {item}" if item else f'{pad}{label} ""'
        else:
            line = f"{pad}{label} {_indented(item)}"
        lines.append(line)
        size += len(line) + 1
        if size > BODY_CHARS:
            break
    return "\n".join(lines)


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
