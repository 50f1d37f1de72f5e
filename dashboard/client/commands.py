"""The `agentboard` command line as argparse reads it: `install-hooks`, `install-codex`,
`install-gemini`, `install-opencode`, and a hook command line that is not one the installers
write (help, a mistake: `hook_command` reads those without argparse)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from dashboard.client import codex, gemini
from dashboard.client.config import TOKEN_VARIABLE
from dashboard.client.hook_command import (
    HOOK_COMMANDS,
    hook_defaults,
    run_hook_command,
    server_url,
)
from dashboard.client.install import (
    COMMAND_ONLY_EVENTS,
    DEFAULT_WAITS,
    SettingsError,
    claude_code_version,
    in_background,
    install_hooks,
    install_telemetry,
    parse_version,
    server_waits,
    settings_path,
)
from dashboard.client.origin import REPORT_VARIABLE, origin_headers
from dashboard.core.waits import ServerWaits
from dashboard.integrations.opencode.install import InstallError, install_plugin, plugin_dir


def run(arguments: Sequence[str]) -> int:
    """Parse and run the command line; its exit code."""
    # A hook command's parser is built alone: the others' cost it time and it never uses them.
    only = arguments[0] if arguments and arguments[0] in HOOK_COMMANDS else None
    parser = build_parser(only)
    args = parser.parse_args(arguments)
    if args.command in HOOK_COMMANDS:
        return run_hook_command(
            args.command,
            url=args.url,
            timeout=args.timeout,
            plan_wait=args.plan_wait,
            hook_timeout=args.hook_timeout,
            report_origin=args.report_origin,
            approvals=getattr(args, "approvals", False),
        )
    if args.command == "install-codex":
        return _install_codex(args, parser)
    if args.command == "install-gemini":
        return _install_gemini(args, parser)
    if args.command == "install-opencode":
        return _install_opencode(args)
    if args.command == "otel-headers":
        return _otel_headers()
    return _install_hooks(args, parser)


def _hook_arguments(hook: argparse.ArgumentParser, *, wait_help: str) -> None:
    """What every hook command takes: the server, and how long to wait for it and for a person."""
    defaults = hook_defaults()
    hook.add_argument("--url", default=defaults["url"])
    hook.add_argument(
        "--timeout",
        type=float,
        default=defaults["timeout"],
        help="Seconds to wait for the server on ordinary hooks (default 10).",
    )
    hook.add_argument(
        "--plan-wait",
        type=float,
        default=defaults["plan_wait"],
        help=wait_help,
    )
    hook.add_argument(
        "--hook-timeout",
        type=float,
        default=defaults["hook_timeout"],
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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with `only`, just that command's (the same, for it)."""
    parser = argparse.ArgumentParser(
        prog="agentboard",
        description="Connect Claude Code, Codex CLI, Gemini CLI or opencode to Agentboard.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    if only in (None, "hook"):
        _hook_command(commands)
    if only is None:
        _install_command(commands)
    if only in (None, "codex-hook"):
        _codex_hook_command(commands)
    if only in (None, "gemini-hook"):
        _gemini_hook_command(commands)
    if only is None:
        _install_codex_command(commands)
        _install_gemini_command(commands)
        _opencode_command(commands)
    return parser


def _hook_command(commands: argparse._SubParsersAction) -> None:
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


def _server_and_place(install: argparse.ArgumentParser, *, project: str, user: str) -> None:
    """An installer's --url, and where it installs: --project DIR or --user, not both."""
    install.add_argument("--url", help="The Agentboard server, e.g. http://127.0.0.1:8000.")
    where = install.add_mutually_exclusive_group()
    where.add_argument("--project", metavar="DIR", help=project)
    where.add_argument("--user", action="store_true", help=user)


def _install_command(commands: argparse._SubParsersAction) -> None:
    install = commands.add_parser(
        "install-hooks",
        help="Add Agentboard's hooks to a Claude Code settings file.",
        description=(
            "Merges Agentboard's hooks into .claude/settings.json, keeping everything already "
            "there; a copy of the previous file is kept as settings.json.bak."
        ),
    )
    _server_and_place(
        install,
        project="The project whose .claude/settings.json to change (default: here).",
        user="Change ~/.claude/settings.json.",
    )
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
    install.add_argument(
        "--claude-version",
        metavar="VERSION",
        help=(
            "The Claude Code version the hooks are for, e.g. 2.1.330 (default: what `claude "
            "--version` says): from 2.1.197 on, hooks whose answer Claude Code does not need "
            "run in the background."
        ),
    )
    install.add_argument(
        "--no-telemetry",
        dest="telemetry",
        action="store_false",
        help=(
            "Do not switch on Claude Code's OpenTelemetry export of tokens and cost to the "
            "board (written to ~/.claude/settings.json, where Claude Code reads it); removes "
            "it if set."
        ),
    )
    _no_origin_argument(install)
    commands.add_parser(
        "otel-headers",
        help="Print the headers Claude Code's telemetry export sends (its otelHeadersHelper).",
        description=(
            f"Prints the OTLP exporter's headers as JSON, the token from {TOKEN_VARIABLE}; "
            "install-hooks sets this command as Claude Code's otelHeadersHelper."
        ),
    )


def _opencode_command(commands: argparse._SubParsersAction) -> None:
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


def _codex_hook_command(commands: argparse._SubParsersAction) -> None:
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


def _install_codex_command(commands: argparse._SubParsersAction) -> None:
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
    _server_and_place(
        install,
        project="Change DIR/.codex/ (Codex loads it in trusted projects).",
        user="Change $CODEX_HOME or ~/.codex (the default).",
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
    install.add_argument(
        "--no-telemetry",
        dest="telemetry",
        action="store_false",
        help=(
            "Do not add the [otel] table exporting Codex's events to the board (its tokens); "
            "removes it if set."
        ),
    )
    _no_origin_argument(install)


def _gemini_hook_command(commands: argparse._SubParsersAction) -> None:
    hook = commands.add_parser(
        "gemini-hook",
        help="Forward one Gemini CLI hook input (stdin) and print the answer (stdout).",
        description=(
            "Reads one Gemini CLI hook input from stdin, sends it to Agentboard and prints the "
            f"answer. The server comes from --url or AGENTBOARD_URL, the token from "
            f"{TOKEN_VARIABLE}. Never fails the agent: problems go to stderr, exit code 0."
        ),
    )
    _hook_arguments(hook, wait_help="Seconds to wait for a decision on a tool call (default 540).")
    hook.add_argument(
        "--approvals",
        action="store_true",
        help="Hold the tool calls Gemini asks about for the board's inbox.",
    )


def _install_gemini_command(commands: argparse._SubParsersAction) -> None:
    install = commands.add_parser(
        "install-gemini",
        help="Add Agentboard's hooks to Gemini CLI's settings.json.",
        description=(
            "Merges Agentboard's command hooks into a project's .gemini/settings.json (or, "
            "with --user, ~/.gemini/settings.json), keeping everything already there, with "
            "hooks switched on. A copy of the previous file is kept as settings.json.bak."
        ),
    )
    _server_and_place(
        install,
        project="The project whose .gemini/settings.json to change (default: here).",
        user="Change ~/.gemini/settings.json.",
    )
    install.add_argument(
        "--remove", action="store_true", help="Remove what install-gemini added, nothing else."
    )
    install.add_argument(
        "--approvals",
        action="store_true",
        help=(
            "Hold the tool calls Gemini asks about (shell commands, file writes and edits, web "
            "fetches, MCP tools) for the board's inbox; a deny there refuses the call, an allow "
            "leaves it to Gemini's approval mode."
        ),
    )
    _no_origin_argument(install)


def _install_gemini(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    url, waits = _server_and_waits(args, parser)
    path = gemini.settings_file(project=args.project, user=args.user)
    try:
        outcome = gemini.install_gemini(
            path,
            url=url,
            remove=args.remove,
            approvals=args.approvals,
            waits=waits,
            report_origin=args.report_origin,
        )
    except (SettingsError, OSError) as error:
        return _failed(error)
    if not outcome.changed:
        _say_unchanged(path, remove=args.remove)
        return 0
    _say_hooks_written(path, remove=args.remove, backup=outcome.backup)
    if not args.remove:
        if not args.user:
            print(
                "Gemini CLI runs a project's hooks only in a trusted folder, and warns once "
                "about new ones."
            )
        _remind_token("Gemini CLI")
    return 0


def _install_codex(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    url, waits = _server_and_waits(args, parser)
    home = codex.codex_home(project=args.project)
    try:
        outcome = codex.install_codex(
            home,
            url=url,
            remove=args.remove,
            approvals=args.approvals,
            plan_tool=args.plan_tool,
            waits=waits,
            report_origin=args.report_origin,
            telemetry=args.telemetry,
        )
    except (SettingsError, OSError) as error:
        return _failed(error)
    if not outcome.changed:
        _say_unchanged(home, remove=args.remove)
        return 0
    for path in outcome.changed:
        print(f"{'Removed Agentboard from' if args.remove else 'Updated'} {path}.")
    if not args.remove:
        print(
            "Codex asks you to trust new hooks: start codex and choose to trust them (or review "
            "them with /hooks). Until then they do not run."
        )
        _remind_token("Codex")
        if args.telemetry:
            print(
                f"For its token counts, also export {codex.TELEMETRY_HEADERS} there: Codex "
                "reads its exporter's token from that variable only."
            )
    return 0


def _server_and_waits(
    args: argparse.Namespace, parser: argparse.ArgumentParser
) -> tuple[str | None, ServerWaits]:
    """The server's address from --url or AGENTBOARD_URL (None when removing: nothing is sent
    there), and the waits the installed hooks' timeouts must outlast."""
    if args.remove:
        return None, DEFAULT_WAITS
    url = server_url(args.url or "")
    if url is None:
        parser.error("give the server's address with --url, e.g. --url http://127.0.0.1:8000")
    return url, _waits_of(url)


def _failed(error: Exception) -> int:
    print(f"agentboard: {error}", file=sys.stderr)
    return 1


def _say_unchanged(place: object, *, remove: bool) -> None:
    print(f"{place} already has {'no ' if remove else ''}Agentboard hooks; nothing changed.")


def _say_hooks_written(path: object, *, remove: bool, backup: object) -> None:
    what = "Removed Agentboard's hooks from" if remove else "Added Agentboard's hooks to"
    print(f"{what} {path}.")
    if backup:
        print(f"The previous version is in {backup}.")


def _remind_token(agent: str) -> None:
    if not os.environ.get(TOKEN_VARIABLE):
        print(f"Set {TOKEN_VARIABLE} to your agent token in the shell that starts {agent}.")


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


def _install_hooks(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    url, waits = _server_and_waits(args, parser)
    path = settings_path(project=args.project, user=args.user)
    claude_version = None if args.remove else _claude_version_of(args, parser)
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
            claude_version=claude_version,
            # A user's settings take the telemetry with the hooks; for a project's, see below.
            telemetry=args.telemetry if args.user else None,
        )
        exported = None
        if not args.user:
            telemetry_url = url if args.telemetry and not args.remove else None
            exported = install_telemetry(settings_path(project=None, user=True), url=telemetry_url)
    except (SettingsError, OSError) as error:
        return _failed(error)
    if not outcome.changed:
        _say_unchanged(path, remove=args.remove)
    else:
        _say_hooks_written(path, remove=args.remove, backup=outcome.backup)
    if exported is not None and exported.changed:
        on = args.telemetry and not args.remove
        print(
            f"{'Switched on' if on else 'Switched off'} Claude Code's export of tokens and cost "
            f"to the board in {exported.path} (Claude Code reads it only there)."
        )
        if exported.backup:
            print(f"The previous version is in {exported.backup}.")
    if not args.remove:
        _remind_token("Claude Code")
    return 0


def _otel_headers() -> int:
    """Claude Code's otelHeadersHelper: the exporter's headers, the token from the
    environment of the agent (never from a file)."""
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    if not token:
        print(
            f"agentboard: set {TOKEN_VARIABLE} to an agent token; telemetry goes unsent.",
            file=sys.stderr,
        )
        print("{}")
        return 0
    print(json.dumps({"Authorization": f"Bearer {token}"}))
    return 0


def _and(words: list[str]) -> str:
    """ "A", "A and B", "A, B and C"."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _claude_version_of(
    args: argparse.Namespace, parser: argparse.ArgumentParser
) -> tuple[int, int, int] | None:
    """The Claude Code version to install for (`--claude-version`, else the one on PATH), said
    with the hooks that run in the background for it."""
    if args.claude_version:
        version = parse_version(args.claude_version)
        if version is None:
            parser.error("--claude-version takes a version such as 2.1.330")
    else:
        version = claude_code_version()
    if version is None:
        print(
            "Could not tell which Claude Code runs here (no `claude` on PATH): every hook is "
            "installed to be waited on. Give --claude-version to let the ones whose answer it "
            "does not need run in the background."
        )
        return None
    events = [
        event
        for event in in_background(version)
        if args.use_command or event in COMMAND_ONLY_EVENTS
    ]
    if events:
        print(
            f"Claude Code {'.'.join(map(str, version))} runs the {_and(events)} hooks "
            "in the background: it does not wait for them."
        )
    return version


def _static_origin(args: argparse.Namespace) -> dict[str, str]:
    """The headers HTTP hooks send as written in the settings: the host always, the repository
    when the settings are a project's (a user's serve every repository, so there only the
    command hooks, which read it per call, can say it)."""
    if not args.report_origin:
        return {}
    return origin_headers(None if args.user else os.path.expanduser(args.project or "."))


def _install_opencode(args: argparse.Namespace) -> int:
    try:
        outcome = install_plugin(
            plugin_dir(project=args.project, user=args.user), remove=args.remove
        )
    except (InstallError, OSError) as error:
        return _failed(error)
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
