"""The `agentboard` command: `hook` and `install-hooks` for Claude Code, `codex-hook` and
`install-codex` for Codex CLI, `install-opencode` for opencode."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from dashboard.client import codex
from dashboard.client.hook import HookConfig, run_hook
from dashboard.client.install import (
    DEFAULT_WAITS,
    TOKEN_VARIABLE,
    SettingsError,
    install_hooks,
    server_waits,
    settings_path,
)
from dashboard.client.origin import REPORT_VARIABLE, origin_headers, reporting
from dashboard.core.waits import ServerWaits
from dashboard.integrations.opencode.install import InstallError, install_plugin, plugin_dir


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command in {"hook", "codex-hook"}:
        return _hook(args)
    if args.command == "install-codex":
        return _install_codex(args, parser)
    if args.command == "install-opencode":
        return _install_opencode(args)
    return _install_hooks(args, parser)


def _hook_arguments(hook: argparse.ArgumentParser, *, wait_help: str) -> None:
    """What every hook command takes: the server, and how long to wait for it and for a person."""
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
        help=wait_help,
    )
    hook.add_argument(
        "--hook-timeout",
        type=float,
        default=None,
        help=(
            "Seconds the agent lets this hook run (its installed timeout; the installers set "
            "it): a hook the server holds waits that long, and the server answers before."
        ),
    )
    hook.add_argument(
        "--no-origin",
        dest="report_origin",
        action="store_false",
        help=(
            "Do not tell the server the repository (its origin, without credentials) and host "
            f"name the session runs on; {REPORT_VARIABLE}=0 does the same."
        ),
    )


def _no_origin_argument(install: argparse.ArgumentParser) -> None:
    install.add_argument(
        "--no-origin",
        dest="report_origin",
        action="store_false",
        help=(
            "Install hooks that do not tell the server the repository (its origin, without "
            "credentials) and host name sessions run on."
        ),
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentboard", description="Connect Claude Code or Codex CLI to an Agentboard server."
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
    _hook_arguments(
        hook,
        wait_help=(
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
    _no_origin_argument(install)
    _codex_commands(commands)
    opencode = commands.add_parser(
        "install-opencode",
        help="Add the Agentboard plugin to opencode.",
        description=(
            "Copies the Agentboard plugin into .opencode/plugin/ (or, with --user, into "
            "~/.config/opencode/plugin/). opencode then reports to the server named by "
            f"AGENTBOARD_URL with the token in {TOKEN_VARIABLE}."
        ),
    )
    where = opencode.add_mutually_exclusive_group()
    where.add_argument(
        "--project", metavar="DIR", help="The project to add the plugin to (default: here)."
    )
    where.add_argument("--user", action="store_true", help="Add it for every project of this user.")
    opencode.add_argument("--remove", action="store_true", help="Remove the plugin again.")
    return parser


def _codex_commands(commands: argparse._SubParsersAction) -> None:
    hook = commands.add_parser(
        "codex-hook",
        help="Forward one Codex CLI hook input (stdin) and print the answer (stdout).",
        description=(
            "Reads one Codex hook input from stdin, sends it to Agentboard and prints the "
            f"answer. The server comes from --url or AGENTBOARD_URL, the token from "
            f"{TOKEN_VARIABLE}. Never fails the agent: problems go to stderr, exit code 0."
        ),
    )
    _hook_arguments(
        hook, wait_help="Seconds to wait for a decision on a permission request (default 540)."
    )

    install = commands.add_parser(
        "install-codex",
        help="Add Agentboard's hooks to Codex CLI's hooks.json.",
        description=(
            "Merges Agentboard's command hooks into hooks.json in $CODEX_HOME (default "
            "~/.codex) or a project's .codex/, keeping everything already there, and switches "
            "on Codex's update_plan checklist tool in config.toml. Copies of changed files "
            "are kept as .bak."
        ),
    )
    install.add_argument("--url", help="The Agentboard server, e.g. http://127.0.0.1:8000.")
    where = install.add_mutually_exclusive_group()
    where.add_argument(
        "--project", metavar="DIR", help="Change DIR/.codex/ (Codex loads it in trusted projects)."
    )
    where.add_argument(
        "--user", action="store_true", help="Change $CODEX_HOME or ~/.codex (the default)."
    )
    install.add_argument(
        "--remove", action="store_true", help="Remove what install-codex added, nothing else."
    )
    install.add_argument(
        "--approvals",
        action="store_true",
        help=(
            "Send Codex's permission requests to the board's inbox and hold them there; Codex "
            "asks in its terminal when nobody decides in time."
        ),
    )
    install.add_argument(
        "--no-plan-tool",
        dest="plan_tool",
        action="store_false",
        help="Leave config.toml alone (Codex 0.169.0 offers update_plan only when enabled).",
    )
    _no_origin_argument(install)


def _install_codex(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    url = None
    if not args.remove:
        url = _server_url(args.url or "")
        if url is None:
            parser.error("give the server's address with --url, e.g. --url http://127.0.0.1:8000")
    home = codex.codex_home(project=args.project)
    waits = DEFAULT_WAITS if url is None else _waits_of(url)
    try:
        outcome = codex.install_codex(
            home,
            url=url,
            remove=args.remove,
            approvals=args.approvals,
            plan_tool=args.plan_tool,
            waits=waits,
            report_origin=args.report_origin,
        )
    except (SettingsError, OSError) as error:
        print(f"agentboard: {error}", file=sys.stderr)
        return 1
    if not outcome.changed:
        print(
            f"{home} already has {'no ' if args.remove else ''}Agentboard hooks; nothing changed."
        )
        return 0
    for path in outcome.changed:
        print(f"{'Removed Agentboard from' if args.remove else 'Updated'} {path}.")
    if not args.remove:
        print(
            "Codex asks you to trust new hooks: start codex and choose to trust them (or review "
            "them with /hooks). Until then they do not run."
        )
        if not os.environ.get(TOKEN_VARIABLE):
            print(f"Set {TOKEN_VARIABLE} to your agent token in the shell that starts Codex.")
    return 0


def _waits_of(url: str) -> ServerWaits:
    """The server's waits, which the installed hook timeouts must outlast; the defaults, said
    so, when they cannot be read."""
    found = server_waits(url, os.environ.get(TOKEN_VARIABLE, "").strip())
    if isinstance(found, ServerWaits):
        print(
            f"The server holds a stopping agent {found.countdown:g} s and a permission request "
            f"up to {max(found.plan, found.permission):g} s; the hooks wait longer."
        )
        return found
    print(
        f"Could not read the server's waits ({found}): the hooks get timeouts for its default "
        "waits. Run this again once the server answers if you changed them."
    )
    return DEFAULT_WAITS


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
    config = HookConfig(
        url=url,
        token=token,
        timeout=args.timeout,
        plan_wait=args.plan_wait,
        hook_timeout=args.hook_timeout,
        report_origin=args.report_origin and reporting(os.environ),
    )
    if args.command == "codex-hook":
        return codex.run_codex_hook(config, sys.stdin, sys.stdout, sys.stderr)
    return run_hook(config, sys.stdin, sys.stdout, sys.stderr)


def _install_hooks(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    url = None
    if not args.remove:
        url = _server_url(args.url or "")
        if url is None:
            parser.error("give the server's address with --url, e.g. --url http://127.0.0.1:8000")
    path = settings_path(project=args.project, user=args.user)
    waits = DEFAULT_WAITS if url is None else _waits_of(url)
    try:
        outcome = install_hooks(
            path,
            url=url,
            command=args.use_command,
            remove=args.remove,
            todo_tools=args.todo_tools,
            approvals=args.approvals,
            waits=waits,
            report_origin=args.report_origin,
            origin=_static_origin(args),
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


def _static_origin(args: argparse.Namespace) -> dict[str, str]:
    """The headers HTTP hooks send as written in the settings: the host always, the repository
    when the settings are a project's (a user's serve every repository, so there only the
    command hooks, which read it per call, can say it)."""
    if not args.report_origin:
        return {}
    return origin_headers(None if args.user else str(Path(args.project or ".").expanduser()))


def _install_opencode(args: argparse.Namespace) -> int:
    try:
        outcome = install_plugin(
            plugin_dir(project=args.project, user=args.user), remove=args.remove
        )
    except (InstallError, OSError) as error:
        print(f"agentboard: {error}", file=sys.stderr)
        return 1
    if not outcome.changed:
        print(f"{outcome.path} is {'absent' if args.remove else 'up to date'}; nothing changed.")
        return 0
    print(f"{'Removed' if args.remove else 'Installed'} {outcome.path}.")
    configured = os.environ.get("AGENTBOARD_URL") and os.environ.get(TOKEN_VARIABLE)
    if not args.remove and not configured:
        print(
            f"Set AGENTBOARD_URL (e.g. http://127.0.0.1:8000) and {TOKEN_VARIABLE} in the shell "
            "that starts opencode."
        )
    return 0
