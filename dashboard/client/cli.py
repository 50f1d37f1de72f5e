"""The `agentboard` command: `hook` and `install-hooks` for Claude Code, `codex-hook` and
`install-codex` for Codex CLI, `gemini-hook` and `install-gemini` for Gemini CLI,
`install-opencode` for opencode.

Claude Code runs `agentboard hook` for every hook event (and waits for most), so this entry
point is small: a hook command line as the installers write it goes to `hook_command`, read
without argparse; anything else to `commands`, imported only then (each module a hook imports
is one more to load, or, without bytecode files, to compile, on every call).
"""

from __future__ import annotations

import sys

from dashboard.client.hook_command import HOOK_COMMANDS, quick_hook_arguments, run_hook_command

TYPE_CHECKING = False  # `typing.TYPE_CHECKING` without importing typing at run time
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments and arguments[0] in HOOK_COMMANDS:
        quick = quick_hook_arguments(arguments)
        if quick is not None:
            return run_hook_command(arguments[0], **quick)
    from dashboard.client.commands import run

    return run(arguments)
