"""Permission rules as Claude Code writes them, matched against one tool request.

`Tool` or `Tool(content)`: `Bash(git status*)`, `Bash(npm run test:*)`, `Read(*)`,
`Edit(src/**/*.py)`, `WebFetch(domain:docs.*)`, `WebSearch(django *)`, `mcp__github` (every tool
of that server), `mcp__github__get_issue`. Pure functions, no database: the team rules, the
inbox's "always allow" patterns and their tests all go through here.

Matching is conservative where a rule allows: an allow rule never matches a shell command that
chains, pipes, redirects or substitutes (`git status; rm -rf ~` is not `git status*`), while a
deny rule matches a command when any part of it matches.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

T = TypeVar("T")

RULE_PATTERN = re.compile(r"^(?P<tool>[A-Za-z0-9_*.:-]+)(?:\((?P<content>.*)\))?$", re.DOTALL)
MAX_RULE_LENGTH = 500
PATH_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS"})
PATH_FIELDS = ("file_path", "notebook_path", "path")
# Shell syntax that makes one command line do more than its first command.
SHELL_CHAINING = re.compile(r"[;&|\n\r`<>]|\$\(")
SHELL_SPLIT = re.compile(r"&&|\|\||[;&|\n\r]")
ANY_CONTENT = frozenset({"*", "**"})


@dataclass(frozen=True)
class Rule:
    tool: str
    content: str | None = None

    def __str__(self) -> str:
        return self.tool if self.content is None else f"{self.tool}({self.content})"


def parse_rule(text: str) -> Rule:
    """A rule from its written form; ValueError with one sentence when it cannot be one."""
    text = text.strip()
    if not text:
        raise ValueError("Write a rule such as Bash(git status*) or Read(*).")
    if len(text) > MAX_RULE_LENGTH:
        raise ValueError(f"A rule has at most {MAX_RULE_LENGTH} characters.")
    if "\n" in text or "\r" in text:
        raise ValueError("A rule is one line; remove the line breaks.")
    match = RULE_PATTERN.match(text)
    if match is None:
        raise ValueError(
            "Write the rule as a tool name with an optional pattern in brackets, such as "
            "Bash(git status*), Read(*) or WebFetch(domain:docs.*)."
        )
    content = match.group("content")
    if content is not None and not content.strip():
        content = None
    return Rule(tool=match.group("tool"), content=content.strip() if content else None)


def tool_matches(pattern: str, tool_name: str) -> bool:
    if pattern == tool_name:
        return True
    # `mcp__server` stands for every tool of that MCP server.
    if pattern.startswith("mcp__") and pattern.count("__") == 1:
        return tool_name.startswith(pattern + "__")
    return "*" in pattern and fnmatch.fnmatchcase(tool_name, pattern)


# Gemini CLI's tools that take what Claude Code's take (a command, a file path), matched alike:
# `run_shell_command(git status*)` as conservatively as `Bash(git status*)`.
SAME_AS = {"run_shell_command": "Bash", "write_file": "Write", "replace": "Edit"}


def rule_matches(
    rule: Rule, *, tool_name: str, tool_input: Mapping[str, Any], cwd: str, allowing: bool
) -> bool:
    """Whether `rule` covers this request; `allowing` is True for allow rules (stricter)."""
    if not tool_matches(rule.tool, tool_name):
        return False
    if rule.content is None or rule.content in ANY_CONTENT:
        return True
    tool_name = SAME_AS.get(tool_name, tool_name)
    if tool_name == "Bash":
        return _command_matches(rule.content, _text(tool_input.get("command")), allowing)
    if tool_name in PATH_TOOLS:
        path = next((_text(tool_input.get(f)) for f in PATH_FIELDS if tool_input.get(f)), cwd)
        return _path_matches(rule.content, path, cwd)
    if tool_name == "WebFetch":
        return _url_matches(rule.content, _text(tool_input.get("url")))
    if tool_name == "WebSearch":
        return _glob(rule.content, _text(tool_input.get("query")))
    return _glob(rule.content, primary_text(tool_input))


def decide(
    rules: Iterable[tuple[T, Rule, str]],
    *,
    tool_name: str,
    tool_input: Mapping[str, Any],
    cwd: str,
) -> tuple[T, str] | None:
    """The first deny rule that matches, else the first allow rule, else None (a person
    decides). Each rule is (its key, the rule, "allow" or "deny")."""
    allowed: tuple[T, str] | None = None
    for key, rule, behavior in rules:
        allowing = behavior == "allow"
        if allowing and allowed is not None:
            continue
        if rule_matches(
            rule, tool_name=tool_name, tool_input=tool_input, cwd=cwd, allowing=allowing
        ):
            if not allowing:
                return key, behavior
            allowed = (key, behavior)
    return allowed


def suggested_content(tool_name: str, tool_input: Mapping[str, Any]) -> str:
    """A starting point for a rule the reviewer edits: this very request, no wider."""
    tool_name = SAME_AS.get(tool_name, tool_name)
    if tool_name == "Bash":
        return _text(tool_input.get("command")).strip()
    if tool_name in PATH_TOOLS:
        return next((_text(tool_input.get(f)) for f in PATH_FIELDS if tool_input.get(f)), "")
    if tool_name == "WebFetch":
        host = urlsplit(_text(tool_input.get("url"))).hostname
        return f"domain:{host}" if host else ""
    if tool_name == "WebSearch":
        return _text(tool_input.get("query"))
    return ""


def primary_text(tool_input: Mapping[str, Any]) -> str:
    """The first plain text value of an input, for tools without a known shape."""
    return next((value for value in tool_input.values() if isinstance(value, str)), "")


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _glob(pattern: str, text: str) -> bool:
    """`*` stands for any text (spaces and slashes too); everything else is literal."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, text, re.DOTALL) is not None


def _command_matches(pattern: str, command: str, allowing: bool) -> bool:
    command = command.strip()
    if allowing:
        return not SHELL_CHAINING.search(command) and _one_command_matches(pattern, command)
    parts = [command, *(part.strip() for part in SHELL_SPLIT.split(command))]
    return any(part and _one_command_matches(pattern, part) for part in parts)


def _one_command_matches(pattern: str, command: str) -> bool:
    command = " ".join(command.split())
    if pattern.endswith(":*"):  # the older prefix form: `npm run test:*`
        prefix = " ".join(pattern[:-2].split())
        return command == prefix or command.startswith(prefix + " ")
    return _glob(" ".join(pattern.split()), command)


def _path_matches(pattern: str, path: str, cwd: str) -> bool:
    if not path:
        return False
    path = posixpath.normpath(posixpath.join(cwd or "/", path))
    if pattern.startswith("//"):
        anchored = pattern[1:]
    elif pattern.startswith("./"):
        anchored = posixpath.join(cwd or "/", pattern[2:])
    elif pattern.startswith("/"):
        # As in a project's Claude Code settings: from the project's root, here its cwd.
        anchored = posixpath.join(cwd or "/", pattern[1:])
    elif "/" not in pattern.rstrip("/"):
        # Like .gitignore: a bare name or glob matches at any depth.
        anchored = "**/" + pattern
    else:
        anchored = posixpath.join(cwd or "/", pattern)
    return re.fullmatch(_path_regex(anchored), path) is not None


def _path_regex(pattern: str) -> str:
    out = []
    index = 0
    while index < len(pattern):
        if pattern.endswith("/**") and index == len(pattern) - 3:
            out.append("(?:/.*)?")  # a folder and everything in it
            index += 3
        elif pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return "".join(out)


def _url_matches(pattern: str, url: str) -> bool:
    if pattern.startswith("domain:"):
        host = (urlsplit(url).hostname or "").lower()
        return bool(host) and _glob(pattern.removeprefix("domain:").strip().lower(), host)
    return _glob(pattern, url)
