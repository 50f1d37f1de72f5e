"""A hook command (`agentboard hook`, `codex-hook`, `gemini-hook`) from its command line to its
answer.

Claude Code runs `agentboard hook` for every hook event it sends (and waits for most), a fresh
process each time, so starting one costs as little as it can: the command line install-hooks
writes is read here without argparse, and only what forwarding needs is imported (see
`transport`). argparse, and every other command, are in `commands`, imported only when the
command line is anything else.
"""

from __future__ import annotations

import os
import sys

from dashboard.client.config import TOKEN_VARIABLE, HookConfig
from dashboard.client.hook import run_hook
from dashboard.client.origin import reporting

TYPE_CHECKING = False  # `typing.TYPE_CHECKING` without importing typing at run time
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

HOOK_COMMANDS = ("hook", "codex-hook", "gemini-hook")


def hook_defaults() -> dict[str, Any]:
    """What a hook command does when its command line does not say (`run_hook_command`'s
    keywords)."""
    return {
        "url": os.environ.get("AGENTBOARD_URL", ""),
        "timeout": env_float("AGENTBOARD_HOOK_TIMEOUT", 10.0),
        "plan_wait": env_float("AGENTBOARD_PLAN_WAIT_SECONDS", 540.0),
        "hook_timeout": None,
        "report_origin": True,
    }


# The hook commands' options that take a value, by the keyword `run_hook_command` takes.
HOOK_VALUE_OPTIONS = {
    "--url": "url",
    "--timeout": "timeout",
    "--plan-wait": "plan_wait",
    "--hook-timeout": "hook_timeout",
}


def quick_hook_arguments(arguments: Sequence[str]) -> dict[str, Any] | None:
    """A hook command line read without argparse, whose import and parser cost more than half
    of what a hook call adds to the interpreter's start: `run_hook_command`'s keywords for the
    hook's own options, each at most once, as `--name value` or `--name=value`. None for
    anything else (help, a mistake, an abbreviation, a value that looks like an option), which
    argparse then reads, and answers, as always: what both read, they read alike."""
    options = hook_defaults()
    if arguments[0] == "gemini-hook":
        options["approvals"] = False  # its own option: hold what Gemini asks about
    given: set[str] = set()
    words = iter(arguments[1:])
    for word in words:
        if word == "--no-origin":
            options["report_origin"] = False
            continue
        if word == "--approvals" and "approvals" in options:
            options["approvals"] = True
            continue
        name, equals, value = word.partition("=")
        key = HOOK_VALUE_OPTIONS.get(name)
        if key is None or key in given:
            return None
        if not equals:
            following = next(words, None)
            if following is None or following.startswith("-"):
                return None
            value = following
        given.add(key)
        if key == "url":
            options[key] = value
            continue
        try:
            options[key] = float(value)
        except ValueError:
            return None
    return options


def env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name) or default)
    except ValueError:
        return default


def server_url(value: str) -> str | None:
    """The server's address without a trailing slash, or None when it is not an http(s) URL
    with a host (read without `urllib.parse`, which a hook would import for this alone)."""
    url = value.strip()
    scheme, separator, rest = url.partition("://")
    netloc = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if not separator or scheme.lower() not in {"http", "https"} or not netloc:
        return None
    return url.rstrip("/")


def run_hook_command(
    command: str,
    *,
    url: str,
    timeout: float,
    plan_wait: float,
    hook_timeout: float | None,
    report_origin: bool,
    approvals: bool = False,
) -> int:
    server = server_url(url)
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    if server is None:
        print(
            "agentboard: set AGENTBOARD_URL (or pass --url) to the server's http(s) address; "
            "nothing was sent.",
            file=sys.stderr,
        )
        return 0
    if not token:
        print(
            f"agentboard: set {TOKEN_VARIABLE} to an agent token; nothing was sent.",
            file=sys.stderr,
        )
        return 0
    config = HookConfig(
        url=server,
        token=token,
        timeout=timeout,
        plan_wait=plan_wait,
        hook_timeout=hook_timeout,
        report_origin=report_origin and reporting(os.environ),
    )
    if command == "codex-hook":
        from dashboard.client import codex

        return codex.run_codex_hook(config, sys.stdin, sys.stdout, sys.stderr)
    if command == "gemini-hook":
        from dashboard.client import gemini_hook

        return gemini_hook.run_gemini_hook(
            config, sys.stdin, sys.stdout, sys.stderr, approvals=approvals
        )
    return run_hook(config, sys.stdin, sys.stdout, sys.stderr)
