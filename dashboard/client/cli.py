"""The `agentboard` command: `agentboard hook` and `agentboard install-hooks`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from urllib.parse import urlsplit

from dashboard.client.hook import HookConfig, run_hook
from dashboard.client.install import (
    TOKEN_VARIABLE,
    SettingsError,
    install_hooks,
    settings_path,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "hook":
        return _hook(args)
    return _install_hooks(args, parser)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentboard", description="Connect Claude Code to an Agentboard server."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    hook = commands.add_parser(
        "hook",
        help="Forward one Claude Code hook input (stdin) and print the answer (stdout).",
        description=(
            "Reads one hook input from stdin, sends it to Agentboard and prints the hook output. "
            "A plan waits for a reviewer on the agent socket. The server comes from --url or "
            f"AGENTBOARD_URL, the token from {TOKEN_VARIABLE}. Never fails the agent: problems "
            "are reported on stderr with exit code 0."
        ),
    )
    hook.add_argument("--url", default=os.environ.get("AGENTBOARD_URL", ""))
    hook.add_argument(
        "--timeout",
        type=float,
        default=_env_float("AGENTBOARD_HOOK_TIMEOUT", 10.0),
        help="Seconds to wait for the server on ordinary hooks (default 10).",
    )
    hook.add_argument(
        "--plan-wait",
        type=float,
        default=_env_float("AGENTBOARD_PLAN_WAIT_SECONDS", 540.0),
        help=(
            "Seconds to wait for a decision on a plan or, with install-hooks --approvals, on "
            "any permission request (default 540)."
        ),
    )

    install = commands.add_parser(
        "install-hooks",
        help="Add Agentboard's hooks to a Claude Code settings file.",
        description=(
            "Merges Agentboard's hooks into .claude/settings.json, keeping everything already "
            "there; a copy of the previous file is kept as settings.json.bak."
        ),
    )
    install.add_argument("--url", help="The Agentboard server, e.g. http://127.0.0.1:8000.")
    where = install.add_mutually_exclusive_group()
    where.add_argument(
        "--project",
        metavar="DIR",
        help="The project whose .claude/settings.json to change (default: here).",
    )
    where.add_argument("--user", action="store_true", help="Change ~/.claude/settings.json.")
    install.add_argument(
        "--command",
        dest="use_command",
        action="store_true",
        help="Install 'agentboard hook' command hooks instead of HTTP hooks.",
    )
    install.add_argument(
        "--remove",
        action="store_true",
        help="Remove Agentboard's hooks (and the todo tools switch) and nothing else.",
    )
    install.add_argument(
        "--approvals",
        action="store_true",
        help=(
            "Send every tool's permission request to the board's inbox and hold it there "
            "(not only plans); the terminal still asks when nobody decides in time."
        ),
    )
    install.add_argument(
        "--no-todo-tools",
        dest="todo_tools",
        action="store_false",
        help=(
            "Do not set CLAUDE_CODE_ENABLE_TODO_TOOLS=1 in the settings' env (Claude Code "
            "2.1.233+ offers TodoWrite and the Task tools only with it); removes it if set."
        ),
    )
    return parser


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name) or default)
    except ValueError:
        return default


def _server_url(value: str) -> str | None:
    parts = urlsplit(value.strip())
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        return None
    return value.strip().rstrip("/")


def _hook(args: argparse.Namespace) -> int:
    url = _server_url(args.url)
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    if url is None:
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
    config = HookConfig(url=url, token=token, timeout=args.timeout, plan_wait=args.plan_wait)
    return run_hook(config, sys.stdin, sys.stdout, sys.stderr)


def _install_hooks(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    url = None
    if not args.remove:
        url = _server_url(args.url or "")
        if url is None:
            parser.error("give the server's address with --url, e.g. --url http://127.0.0.1:8000")
    path = settings_path(project=args.project, user=args.user)
    try:
        outcome = install_hooks(
            path,
            url=url,
            command=args.use_command,
            remove=args.remove,
            todo_tools=args.todo_tools,
            approvals=args.approvals,
        )
    except (SettingsError, OSError) as error:
        print(f"agentboard: {error}", file=sys.stderr)
        return 1
    if not outcome.changed:
        print(
            f"{path} already has {'no ' if args.remove else ''}Agentboard hooks; nothing changed."
        )
        return 0
    what = "Removed Agentboard's hooks from" if args.remove else "Added Agentboard's hooks to"
    print(f"{what} {path}.")
    if outcome.backup:
        print(f"The previous version is in {outcome.backup}.")
    if not args.remove and not os.environ.get(TOKEN_VARIABLE):
        print(f"Set {TOKEN_VARIABLE} to your agent token in the shell that starts Claude Code.")
    return 0
