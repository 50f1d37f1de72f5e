"""Where a session runs: the repository it works in and the machine, sent as two request headers.

The board groups sessions by project (the repository's `origin` remote), person and machine;
only the agent's side knows the first and the last. The hook commands read them on every call,
without running git (each hook is a fresh process and must stay cheap: reading the two or three
small files below takes a fraction of a millisecond, a `git config` process tens of them) and
without caching anything between calls. A remote URL goes out without any credentials it may
hold. `AGENTBOARD_REPORT_ORIGIN=0` (or `--no-origin`) sends neither.

Only what a hook command needs is imported (`os.path`, not `pathlib`; see `transport`).
"""

from __future__ import annotations

import _socket  # `socket.gethostname` itself, without importing `socket` (see `transport`)
import os
import re

TYPE_CHECKING = False  # `typing.TYPE_CHECKING` without importing typing at run time
if TYPE_CHECKING:
    from collections.abc import Mapping

REPOSITORY_HEADER = "X-Agentboard-Repository"
HOST_HEADER = "X-Agentboard-Host"
REPORT_VARIABLE = "AGENTBOARD_REPORT_ORIGIN"
# The server ignores longer values; a cut URL would name another project, so none is sent.
MAX_REPOSITORY = 300
MAX_HOST = 255

# `[remote "origin"]`, and the old `[remote.origin]` spelling git still reads.
_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')


def reporting(environ: Mapping[str, str]) -> bool:
    """False when the user said not to report where sessions run."""
    return environ.get(REPORT_VARIABLE, "").strip().lower() not in {"0", "false", "no", "off"}


def header_value(value: str | None, limit: int) -> str | None:
    """The value as a header can carry it, or None: HTTP headers are latin-1 text, and a
    control character or an over-long value would be refused (or cut) on the way."""
    if not value:
        return None
    value = value.strip()
    if not value or len(value) > limit or not value.isprintable():
        return None
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return None
    return value


def host_name() -> str | None:
    return header_value(_socket.gethostname(), MAX_HOST)


def without_credentials(url: str) -> str:
    """The remote URL with any user name, password or token taken out of a `scheme://` URL
    (`https://ghp_…@github.com/acme/shop` is a secret in the config file, not on a board), and
    its query and fragment too, where tokens sometimes ride. The scp-like `git@host:path` stays:
    its user is the ssh account every such URL names. Plain string work, the same as the
    opencode plugin's, so both send the same text for the same remote."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    rest = re.split(r"[?#]", rest, maxsplit=1)[0]
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"


def names_a_shared_repository(url: str) -> bool:
    """Whether the remote is on a server (`scheme://host/…` or git's scp-like `host:path`, a
    colon before any slash) rather than a folder on this machine (`/srv/git/shop.git`,
    `../shop`, `file://…`), which names no project the team shares and which the board
    would ignore."""
    if "://" in url:
        return not url.lower().startswith("file://")
    head, colon, _ = url.partition(":")
    return bool(colon and head) and "/" not in head


def own_git_dir(cwd: str) -> str | None:
    """The git directory of the repository (or worktree, or submodule) `cwd` is in: `.git`
    above it, or the directory a `.git` file names (a worktree's own, with its own HEAD)."""
    folder = os.path.abspath(cwd)
    while True:
        dot_git = os.path.join(folder, ".git")
        try:
            if os.path.isdir(dot_git):
                return dot_git
            if os.path.isfile(dot_git):
                with open(dot_git, encoding="utf-8") as file:
                    text = file.read().strip()
                if not text.startswith("gitdir:"):
                    return None
                return os.path.join(folder, text.removeprefix("gitdir:").strip())
        except (OSError, UnicodeDecodeError):
            return None
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def git_dir(cwd: str) -> str | None:
    """The git directory holding `cwd`'s configuration: a worktree's own git directory has a
    `commondir` file naming the main repository's, where the remotes live (a submodule's has
    none: its remotes are its own)."""
    own = own_git_dir(cwd)
    if own is None:
        return None
    try:
        with open(os.path.join(own, "commondir"), encoding="utf-8") as file:
            return os.path.join(own, file.read().strip())
    except (OSError, UnicodeDecodeError):
        return own


def origin_url(config_text: str) -> str | None:
    """`remote.origin.url` from a git config file's text (its first value, the one git fetches
    from), or None. Understands sections, comments and quoted values; `include` files and
    `insteadOf` rewrites are not followed: the URL is sent as the repository configures it."""
    in_origin = False
    # Lines end at "\n" only, as git reads them (`splitlines` would also split at U+2028).
    for raw in config_text.split("\n"):
        line = raw.strip()
        if line.startswith("["):
            section = _SECTION.match(line)
            if section is None:
                in_origin = False
                continue
            name, subsection = section.group(1).lower(), section.group(2)
            in_origin = (name, subsection) == ("remote", "origin") or (
                subsection is None and name == "remote.origin"
            )
            line = line[section.end() :].strip()  # `[remote "origin"] url = …` on one line
            if not line:
                continue
        if not in_origin or "=" not in line:
            continue
        key, value = line.split("=", 1)
        if key.strip().lower() == "url":
            return _config_value(value) or None
    return None


def _config_value(raw: str) -> str:
    """A config value without its comment and quotes, with git's escapes read."""
    value, quoted, index = [], False, 0
    raw = raw.strip()
    while index < len(raw):
        char = raw[index]
        if char == "\\" and index + 1 < len(raw):
            following = raw[index + 1]
            value.append({"n": "\n", "t": "\t", "b": "\b"}.get(following, following))
            index += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            value.append(char)
        index += 1
    return "".join(value).strip()


def repository(cwd: str) -> str | None:
    """The origin of the repository `cwd` is in, without credentials, fit for the header."""
    found = git_dir(cwd)
    if found is None:
        return None
    try:
        with open(os.path.join(found, "config"), encoding="utf-8", errors="replace") as file:
            text = file.read()
    except OSError:
        return None
    url = origin_url(text)
    if not url or not names_a_shared_repository(url):
        return None
    return header_value(without_credentials(url), MAX_REPOSITORY)


def origin_headers(cwd: object) -> dict[str, str]:
    """Both headers for a session working in `cwd` (a hook input's `cwd`, whatever it holds);
    a header whose value is unknown or unfit is left out."""
    headers: dict[str, str] = {}
    if isinstance(cwd, str) and cwd:
        found = repository(cwd)
        if found:
            headers[REPOSITORY_HEADER] = found
    host = host_name()
    if host:
        headers[HOST_HEADER] = host
    return headers
