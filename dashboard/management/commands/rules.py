from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.core.audit import Via
from dashboard.core.writer import write_sync
from dashboard.policy.rulefile import (
    MAX_FILE_BYTES,
    RuleFileError,
    rule_file_export,
    rule_file_parse,
    rule_set_replace,
)


class Command(BaseCommand):
    help = (
        "Team rules as one TOML file: `rules export [FILE]` writes every rule (to standard "
        "output without FILE); `rules import FILE` makes the server's rules exactly the file's "
        "(rules it does not name are removed), `--check` only checks it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(dest="action", required=True)
        export = commands.add_parser("export", help="Write every rule as TOML.")
        export.add_argument("file", nargs="?", help="Where to write it (standard output if none).")
        into = commands.add_parser("import", help="Replace every rule with the file's.")
        into.add_argument("file", help="The TOML file to read.")
        into.add_argument("--check", action="store_true", help="Check the file; change nothing.")

    def handle(self, *args: object, action: str, file: str | None, **options: object) -> None:
        if action == "export":
            self._export(file)
        else:
            assert file is not None
            self._import(Path(file), check=bool(options.get("check")))

    def _export(self, file: str | None) -> None:
        text = rule_file_export()
        if file is None:
            self.stdout.write(text, ending="")
            return
        try:
            Path(file).write_text(text, encoding="utf-8")
        except OSError as error:
            raise CommandError(f"Could not write {file}: {error.strerror}.") from None
        self.stderr.write(f"Wrote {text.count('[[rule]]')} rules to {file}.")

    def _import(self, path: Path, *, check: bool) -> None:
        try:
            with path.open("rb") as opened:
                data = opened.read(MAX_FILE_BYTES + 1)
        except OSError as error:
            raise CommandError(f"Could not read {path}: {error.strerror}.") from None
        try:
            entries = rule_file_parse(data)
            imported = write_sync(
                rule_set_replace,
                entries=entries,
                user=None,
                via=Via(surface="command line"),
                check=check,
            )
        except RuleFileError as error:
            for problem in error.problems:
                self.stderr.write(f"{path}: {problem}")
            raise CommandError(
                f"{path} has {len(error.problems)} mistake(s); nothing was changed."
            ) from None
        self.stdout.write(imported.summary())
