"""Which permission requests are "the same request" for a suggestion, and the narrowest rule
that covers them: pure functions.

Requests are equivalent when they are of the same tool, in the same project, and have the same
stem:

- a shell command (Claude Code's, Codex's and opencode's `Bash`, Gemini's
  `run_shell_command`): its program, then the words and flags that follow it (at most three,
  lower-case words such as `test` or `run` and flags such as `-rf`), then, when the next
  argument is a path inside the project, its first folder. So `npm test -- --grep x` and
  `npm test` are `npm test` (the rule `npm test*`), `pytest tests/api/test_a.py -x` and
  `pytest tests/ui` are `pytest tests/` (the rule `pytest tests/*`), `rm -rf build/orders` is
  `rm -rf build/`. A command that chains, pipes, redirects or substitutes has no stem (an
  allow rule never covers one), nor one that starts with an assignment or a quote;
- a file (Read, Edit, Write, … and Gemini's `write_file`, `replace`, opencode's edits): the
  first folder of its path inside the project (a file at the project's root: the file); the
  rule is the folder all the requests share, `Edit(src/orders/**)`. A path outside the project
  has no stem;
- a web fetch: the address's host, `WebFetch(domain:docs.example.com)`;
- an MCP tool: the tool itself, `mcp__github__get_issue`.

Other tools have no stem: nothing is suggested for them.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from planmode import rules

MAX_WORDS = 3
PROGRAM = re.compile(r"[A-Za-z0-9_.+/-]{1,80}")
WORD = re.compile(r"[a-z][a-z0-9_:.@-]{0,39}")
FLAG = re.compile(r"--?[A-Za-z][A-Za-z0-9-]{0,30}")
PATH_PART = re.compile(r"[A-Za-z0-9_.@+-]{1,80}")
# A file or folder of the project named from its root: `./build`.
HERE = re.compile(r"\./[A-Za-z0-9_.@+-]{1,80}")


@dataclass(frozen=True)
class Stem:
    """What equivalent requests share. `kind`: command, folder, file, domain or tool."""

    kind: str
    text: str


def stem_of(tool_name: str, tool_input: Mapping[str, Any], cwd: str) -> Stem | None:
    tool = rules.SAME_AS.get(tool_name, tool_name)
    if tool_name.startswith("mcp_"):
        return Stem("tool", tool_name)
    if tool == "Bash":
        return _command_stem(_text(tool_input.get("command")))
    if tool in rules.PATH_TOOLS:
        path = next((_text(tool_input.get(f)) for f in rules.PATH_FIELDS if tool_input.get(f)), "")
        return _path_stem(path, cwd)
    if tool == "WebFetch":
        host = (urlsplit(_text(tool_input.get("url"))).hostname or "").lower()
        return Stem("domain", host) if re.fullmatch(r"[a-z0-9.-]{1,253}", host) else None
    return None


def rule_text(tool_name: str, stem: Stem, inputs: Sequence[tuple[Mapping[str, Any], str]]) -> str:
    """The narrowest rule for these requests' (input, cwd) sharing `stem`."""
    if stem.kind == "tool":
        return tool_name
    if stem.kind == "domain":
        return f"{tool_name}(domain:{stem.text})"
    if stem.kind == "file":
        return f"{tool_name}(/{stem.text})"
    if stem.kind == "folder":
        folders = [_relative_folder(tool_input, cwd) for tool_input, cwd in inputs]
        return f"{tool_name}({_common_folder([f for f in folders if f is not None])}/**)"
    commands = [" ".join(_text(tool_input.get("command")).split()) for tool_input, _ in inputs]
    exact = stem.text if not stem.text.endswith("/") else None
    if exact is not None and all(command == exact for command in commands):
        return f"{tool_name}({exact})"
    if exact is not None and " " not in exact and exact not in commands:
        return f"{tool_name}({exact} *)"  # `ls *`, not `ls*`, which is `lsblk` too
    return f"{tool_name}({stem.text}*)"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _command_stem(command: str) -> Stem | None:
    command = command.strip()
    if not command or rules.SHELL_CHAINING.search(command) or "$" in command:
        return None
    words = command.split()
    program = words[0]
    if not PROGRAM.fullmatch(program) or program.startswith("-"):
        return None
    stem = [program]
    rest = words[1:]
    while (
        rest
        and len(stem) <= MAX_WORDS
        and any(pattern.fullmatch(rest[0]) for pattern in (WORD, FLAG, HERE))
    ):
        stem.append(rest.pop(0))
    if rest and len(stem) <= MAX_WORDS:
        folder = _first_folder(rest[0])
        if folder is not None:
            return Stem("command", " ".join(stem) + f" {folder}")
    return Stem("command", " ".join(stem))


def _first_folder(argument: str) -> str | None:
    """`tests/api/test_a.py` → `tests/`, `./src/a.ts` → `./src/`; None for what is not a path
    inside the project."""
    here = "./" if argument.startswith("./") else ""
    path = argument.removeprefix("./")
    if "/" not in path:
        return None
    first = path.split("/", 1)[0]
    if first in (".", "..") or not PATH_PART.fullmatch(first):
        return None
    return f"{here}{first}/"


def _relative(path: str, cwd: str) -> list[str] | None:
    if not path or not cwd:
        return None
    root = posixpath.normpath(cwd)
    full = posixpath.normpath(posixpath.join(root, path))
    if not full.startswith(root.rstrip("/") + "/"):
        return None
    parts = full[len(root.rstrip("/")) + 1 :].split("/")
    return parts if all(PATH_PART.fullmatch(part) for part in parts) else None


def _path_stem(path: str, cwd: str) -> Stem | None:
    parts = _relative(path, cwd)
    if parts is None:
        return None
    return Stem("folder", parts[0]) if len(parts) > 1 else Stem("file", parts[0])


def _relative_folder(tool_input: Mapping[str, Any], cwd: str) -> str | None:
    path = next((_text(tool_input.get(f)) for f in rules.PATH_FIELDS if tool_input.get(f)), "")
    parts = _relative(path, cwd)
    return "/".join(parts[:-1]) if parts and len(parts) > 1 else None


def _common_folder(folders: list[str]) -> str:
    split = [folder.split("/") for folder in folders]
    common = []
    for parts in zip(*split, strict=False):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return "/".join(common)
