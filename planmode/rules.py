"""Permission rules as Claude Code writes them, matched against one tool request.

`Tool` or `Tool(content)`: `Bash(git status*)`, `Bash(npm run test:*)`, `Read(*)`,
`Edit(src/**/*.py)`, `WebFetch(domain:docs.*)`, `WebSearch(django *)`, `mcp__github` (every tool
of that server), `mcp__github__get_issue`. Pure functions, no database: the team rules, the
inbox's "always allow" patterns and their tests all go through here.

Matching is conservative where a rule allows: an allow rule never matches a shell command that
chains, pipes, redirects or substitutes (`git status; rm -rf ~` is not `git status*`), while a
deny rule matches a command when any part of it matches.

Some requests have a dangerous shape (`dangerous_shapes`: sudo, a force push to the default
branch, a download piped into a shell, a recursive delete outside the project, writing to
`.env` or to keys and credentials). An allow rule never allows one unless its own pattern names
that shape (`Bash(sudo apt-get update)` names sudo, `Bash(*)` and `Bash(git push*)` name
nothing) and a reviewer confirmed it (`decide`'s `confirmed`); such a request waits for a
person. Deny rules are not limited.
"""

from __future__ import annotations

import fnmatch
import functools
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

T = TypeVar("T")

RULE_PATTERN = re.compile(r"^(?P<tool>[A-Za-z0-9_*.:-]+)(?:\((?P<content>.*)\))?$", re.DOTALL)
MAX_RULE_LENGTH = 500
PATH_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS"})
# Where a tool's input names its file: Claude Code's and Gemini's fields, then opencode's.
PATH_FIELDS = ("file_path", "notebook_path", "path", "filepath", "filePath")
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
    if "\x00" in text or unstorable(text):
        raise ValueError("The rule has characters that cannot be stored; retype it.")
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


def unstorable(text: str) -> bool:
    """A lone surrogate (which JSON can spell) no database stores."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


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
    confirmed: Callable[[T], bool] | None = None,
) -> tuple[T, str] | None:
    """The first deny rule that matches, else the first allow rule that may allow this
    request, else None (a person decides). Each rule is (its key, the rule, "allow" or
    "deny"). A request of a dangerous shape is allowed only by a rule that names each of its
    shapes and that `confirmed(key)` says a reviewer confirmed."""
    allowed: tuple[T, str] | None = None
    shapes: tuple[str, ...] | None = None
    for key, rule, behavior in rules:
        allowing = behavior == "allow"
        if allowing and allowed is not None:
            continue
        if not rule_matches(
            rule, tool_name=tool_name, tool_input=tool_input, cwd=cwd, allowing=allowing
        ):
            continue
        if not allowing:
            return key, behavior
        if shapes is None:
            shapes = dangerous_shapes(tool_name, tool_input, cwd)
        if shapes and not (
            confirmed is not None
            and confirmed(key)
            and all(rule_names_shape(rule, shape, cwd) for shape in shapes)
        ):
            continue
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
    return _glob_regex(pattern).fullmatch(text) is not None


# Compiled once per pattern: hundreds of rules are matched against each request, more than the
# `re` module's own cache keeps.
@functools.lru_cache(maxsize=8192)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


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
    return _path_regex(anchored).fullmatch(path) is not None


@functools.lru_cache(maxsize=8192)
def _path_regex(pattern: str) -> re.Pattern[str]:
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
    return re.compile("".join(out))


def _url_matches(pattern: str, url: str) -> bool:
    if pattern.startswith("domain:"):
        host = (urlsplit(url).hostname or "").lower()
        return bool(host) and _glob(pattern.removeprefix("domain:").strip().lower(), host)
    return _glob(pattern, url)


# --- dangerous shapes -------------------------------------------------------------------------

SUDO = "sudo"
FORCE_PUSH = "force push to the default branch"
DOWNLOAD_INTO_SHELL = "download piped into a shell"
DELETE_OUTSIDE = "recursive delete outside the project"
ENV_FILE = "writing to .env"
CREDENTIALS = "writing to keys or credentials"
SHAPES = (SUDO, FORCE_PUSH, DOWNLOAD_INTO_SHELL, DELETE_OUTSIDE, ENV_FILE, CREDENTIALS)

# Claude Code's file-writing tools (Gemini's `write_file` and `replace`, opencode's `edit` and
# `write` arrive as these).
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
DEFAULT_BRANCHES = frozenset({"main", "master", "trunk"})
ELEVATE = frozenset({"sudo", "doas", "su", "pkexec"})
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh"})
SHELLS = frozenset({
    "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "ash",
    "python", "python3", "perl", "ruby", "node", "php", "pwsh", "iex",
})  # fmt: skip
# Words that run the command after them: `env FOO=1 rm …`, `nohup rm …`.
RUNNERS = frozenset({"env", "command", "builtin", "exec", "nohup", "time", "nice", "xargs"})
SUBSTITUTED_DOWNLOAD = re.compile(r"(?:<\(|\$\(|`)\s*(?:\S*/)?(?:curl|wget)\b")
RUNS_TEXT = re.compile(r"(?:^|[\s;&|(])(?:(?:\S*/)?(?:ba|z|da|k)?sh|eval|source|\.)(?=\s)")
ENV_TEMPLATES = frozenset({"example", "sample", "template", "dist", "defaults"})
SECRET_FOLDERS = frozenset({".ssh", ".gnupg", ".aws", ".kube", ".docker", ".azure", "gcloud"})
SECRET_NAMES = frozenset({
    ".npmrc", ".pypirc", ".netrc", "_netrc", ".git-credentials", ".pgpass", ".htpasswd",
    "credentials", "credentials.json", "credentials.yml", "credentials.yaml",
    "authorized_keys", "known_hosts",
})  # fmt: skip
SECRET_PREFIXES = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519")
SECRET_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk")
UNKNOWN_DIR = "\0unknown"


def dangerous_shape(tool_name: str, tool_input: Mapping[str, Any], cwd: str) -> str | None:
    """The name of the first dangerous shape of this request ("sudo", …), None for none."""
    shapes = dangerous_shapes(tool_name, tool_input, cwd)
    return shapes[0] if shapes else None


def dangerous_shapes(tool_name: str, tool_input: Mapping[str, Any], cwd: str) -> tuple[str, ...]:
    """Every dangerous shape of this request, in `SHAPES` order; `cwd` is the project."""
    tool_name = SAME_AS.get(tool_name, tool_name)
    found: set[str] = set()
    if tool_name == "Bash":
        command = _text(tool_input.get("command"))
        where = _text(tool_input.get("directory")) or _text(tool_input.get("dir_path"))
        run_dir = posixpath.join(cwd, where) if cwd and where else (where or cwd)
        found = _command_shapes(command, run_dir=run_dir, project=cwd)
    elif tool_name in WRITE_TOOLS:
        paths = [_text(tool_input.get(f)) for f in PATH_FIELDS]
        patterns = tool_input.get("patterns")
        if isinstance(patterns, list):
            paths += [_text(pattern) for pattern in patterns]
        found = {shape for path in paths if path for shape in _path_shapes(path, cwd)}
    return tuple(shape for shape in SHAPES if shape in found)


def rule_names_shape(rule: Rule, shape: str, cwd: str) -> bool:
    """Whether the rule's own pattern, read as a request of its tool, has this shape:
    `Bash(sudo apt-get update)` names sudo; `Bash(*)`, `Bash` and `Bash(git push*)` name no
    force push."""
    if rule.content is None or rule.content in ANY_CONTENT:
        return False
    tool_name = SAME_AS.get(rule.tool, rule.tool)
    if tool_name == "Bash":
        example: dict[str, Any] = {"command": rule.content.removesuffix(":*")}
    elif tool_name in WRITE_TOOLS:
        example = {"file_path": rule.content.rstrip("*") or rule.content}
    else:
        return False
    return shape in dangerous_shapes(tool_name, example, cwd)


def named_shapes(rule: Rule) -> tuple[str, ...]:
    """The dangerous shapes a rule names, whatever the project."""
    return tuple(shape for shape in SHAPES if rule_names_shape(rule, shape, ""))


def _command_shapes(command: str, *, run_dir: str, project: str) -> set[str]:
    found: set[str] = set()
    if SUBSTITUTED_DOWNLOAD.search(command) and RUNS_TEXT.search(command):
        found.add(DOWNLOAD_INTO_SHELL)
    for pipeline in _pipelines(command):
        programs = []
        for words in pipeline:
            words = _unwrapped(words, found)
            if not words:
                continue
            program = posixpath.basename(words[0])
            programs.append(program)
            if program == "cd":
                run_dir = _changed_dir(run_dir, words[1:])
            elif program == "git" and _force_pushes_default(words):
                found.add(FORCE_PUSH)
            elif program == "rm" and _deletes_outside(words, run_dir, project):
                found.add(DELETE_OUTSIDE)
            for target in _written_by(program, words):
                found |= _path_shapes(target, run_dir if run_dir != UNKNOWN_DIR else project)
        downloaded = next((i for i, p in enumerate(programs) if p in DOWNLOADERS), None)
        if downloaded is not None and any(p in SHELLS for p in programs[downloaded + 1 :]):
            found.add(DOWNLOAD_INTO_SHELL)
    return found


def _pipelines(command: str) -> list[list[list[str]]]:
    """The command's pipelines, each a list of its commands' words (quotes read as a shell
    reads them; a line it cannot read is split on spaces and operators)."""
    pipelines: list[list[list[str]]] = []
    for line in re.split(r"[\n\r]+", command):
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            tokens = list(lexer)
        except ValueError:
            tokens = re.findall(r"&&|\|\||>>|[;&|<>()]|[^\s;&|<>()]+", line)
        pipeline: list[list[str]] = []
        words: list[str] = []
        for token in tokens:
            if token in ("|", "|&"):
                pipeline.append(words)
                words = []
            elif token in (";", "&&", "||", "&", ";;", "(", ")"):
                pipelines.append([*pipeline, words])
                pipeline, words = [], []
            else:
                words.append(token)
        pipelines.append([*pipeline, words])
    return [[words for words in pipeline if words] for pipeline in pipelines]


def _unwrapped(words: list[str], found: set[str]) -> list[str]:
    """The command a line runs, past assignments (`FOO=1`), runners (`env`, `nohup`) and
    elevation (`sudo -u x`, noted in `found`)."""
    index = 0
    while index < len(words):
        word = words[index]
        program = posixpath.basename(word)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word, re.DOTALL):
            index += 1
        elif program in ELEVATE:
            found.add(SUDO)
            index += 1
            while index < len(words) and words[index].startswith("-"):
                takes_value = words[index] in ("-u", "-g", "-C", "-D", "-h", "-p", "-U", "-c")
                index += 2 if takes_value else 1
        elif program in RUNNERS:
            index += 1
            while index < len(words) and words[index].startswith("-"):
                index += 2 if words[index] in ("-n", "-u", "-C", "-S", "-I") else 1
        else:
            break
    return words[index:]


def _changed_dir(run_dir: str, arguments: list[str]) -> str:
    target = next((a for a in arguments if not a.startswith("-")), "~")
    if target.startswith(("~", "$", "`")) or target == "-" or run_dir == UNKNOWN_DIR:
        return UNKNOWN_DIR if not target.startswith("/") else posixpath.normpath(target)
    return posixpath.normpath(posixpath.join(run_dir or ".", target))


def _force_pushes_default(words: list[str]) -> bool:
    """`git push --force origin main`, `git push -f` (the branch checked out may be the
    default), `git push origin +main`; not a force push of another branch."""
    index = 1
    while index < len(words) and words[index].startswith("-"):
        takes_value = words[index] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace")
        index += 2 if takes_value else 1
    if index >= len(words) or words[index] != "push":
        return False
    force, every_branch, positional = False, False, []
    for argument in words[index + 1 :]:
        if argument in ("--force", "--force-if-includes", "--mirror") or argument.startswith(
            "--force-with-lease"
        ):
            force = True
            every_branch = every_branch or argument == "--mirror"
        elif argument == "--all":
            every_branch = True
        elif argument.startswith("--"):
            continue
        elif argument.startswith("-") and len(argument) > 1:
            force = force or "f" in argument[1:]
        else:
            positional.append(argument)
    refspecs = positional[1:]
    force = force or any(refspec.startswith("+") for refspec in refspecs)
    if not force:
        return False
    if every_branch or not refspecs:
        return True
    for refspec in refspecs:
        branch = refspec.lstrip("+").split(":")[-1].removeprefix("refs/heads/")
        if branch in DEFAULT_BRANCHES or branch in ("HEAD", "@", ""):
            return True
    return False


def _deletes_outside(words: list[str], run_dir: str, project: str) -> bool:
    recursive, options_end, targets = False, False, []
    for argument in words[1:]:
        if not options_end and argument == "--":
            options_end = True
        elif not options_end and argument.startswith("--"):
            recursive = recursive or argument == "--recursive"
        elif not options_end and argument.startswith("-") and len(argument) > 1:
            recursive = recursive or "r" in argument or "R" in argument
        else:
            targets.append(argument)
    return recursive and any(_outside(target, run_dir, project) for target in targets)


def _outside(path: str, run_dir: str, project: str) -> bool:
    """Whether `path` (from `run_dir`) leaves the project, or is the project itself; a path
    that cannot be known before it runs (`~`, `$HOME`, after `cd -`) counts as outside."""
    if path.startswith("~") or "$" in path or "`" in path:
        return True
    if not path.startswith("/") and run_dir == UNKNOWN_DIR:
        return True
    if not project:
        resolved = posixpath.normpath(path)
        return resolved.startswith("/") or resolved == ".." or resolved.startswith("../")
    root = posixpath.normpath(project)
    resolved = posixpath.normpath(posixpath.join(run_dir or root, path))
    return not resolved.startswith(root.rstrip("/") + "/")


def _written_by(program: str, words: list[str]) -> list[str]:
    """Files a command writes that a rule could name: redirections, `tee`, `cp`/`mv`'s target."""
    targets = [words[i + 1] for i, w in enumerate(words[:-1]) if w in (">", ">>", "&>", ">|")]
    arguments = [w for w in words[1:] if not w.startswith("-")]
    if program == "tee":
        targets += arguments
    elif program in ("cp", "mv", "install", "ln") and len(arguments) >= 2:
        targets.append(arguments[-1])
    return targets


def _path_shapes(path: str, cwd: str) -> set[str]:
    if not path.startswith("~"):
        path = posixpath.normpath(posixpath.join(cwd or "/", path))
    parts = [part.lower() for part in path.split("/") if part]
    name = parts[-1] if parts else ""
    found = set()
    if (
        name == ".env"
        or name.endswith(".env")
        or (name.startswith(".env.") and name.rsplit(".", 1)[-1] not in ENV_TEMPLATES)
    ):
        found.add(ENV_FILE)
    if (
        name in SECRET_NAMES
        or name.startswith(SECRET_PREFIXES)
        or name.endswith(SECRET_SUFFIXES)
        or SECRET_FOLDERS.intersection(parts[:-1])
    ):
        found.add(CREDENTIALS)
    return found
