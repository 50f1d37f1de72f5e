"""Team rules as code: every rule in one TOML file, written out and read back.

    [[rule]]
    rule = "Bash(npm test *)"
    effect = "allow"
    project = "shop"
    message = ""
    expires = 2027-01-31T00:00:00Z
    mode = "shadow"
    author = "lead"
    allows_dangerous = false

Reading checks the whole file first (TOML with `tomllib`, each `[[rule]]` table with pydantic,
then each rule as the rules page would save it) and names each mistake with its line; nothing
changes when any is wrong. An import replaces the rule set: a rule of the file equal to one in
force (same rule, project and effect) is kept with its history and figures, changed only where
the file says otherwise; rules the file does not name are removed. Every change is audited.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal

import tomli_w
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from dashboard.core.audit import Via
from dashboard.core.visibility import audience_of
from planmode import rules
from planmode.models import TeamRule
from planmode.permissions import (
    KEEP,
    MAX_MESSAGE_CHARS,
    Keep,
    team_rule_add,
    team_rule_remove,
    team_rule_update,
    team_rule_words,
)

MAX_FILE_BYTES = 1024 * 1024
MAX_RULES = 2_000
CHOICES = {"effect": "allow or deny", "mode": "active or shadow"}
# Markup where plain text belongs: refused rather than stored to be shown escaped.
MARKUP = re.compile(r"<\s*/?\s*[A-Za-z!][^<>]*>")
TABLE = re.compile(r"^\s*\[\[\s*rule\s*\]\]\s*(?:#.*)?$")
KEY = re.compile(r"^\s*([A-Za-z0-9_-]+|\"[^\"]*\")\s*=")
HEADER = (
    "# Agentboard team rules: every rule of this server, one [[rule]] table each.\n"
    "# `python manage.py rules import FILE` (or POST /api/v1/rules/import) makes the server's\n"
    "# rules exactly these: rules it does not name are removed.\n\n"
)


def may_change_rules(user: AbstractBaseUser) -> bool:
    """Team rules answer requests in every session: for admins and holders of the review
    permission, not for the reviewers of one team."""
    audience = audience_of(user)
    return audience.everything or audience.reviews_open


ONLY_REVIEWERS = "Only reviewers can change team rules; ask an admin for the review permission."


def dangerous_unconfirmed(*, rule: str, behavior: str, allows_dangerous: bool) -> str:
    """The sentence refusing an allow rule that names a dangerous shape nobody confirmed;
    "" when there is nothing to confirm. Such a rule would allow nothing it names."""
    if behavior != "allow" or allows_dangerous:
        return ""
    try:
        shapes = rules.named_shapes(rules.parse_rule(rule))
    except ValueError:
        return ""
    if not shapes:
        return ""
    return (
        f"This rule allows a dangerous shape ({', '.join(shapes)}): confirm that it may, "
        "or write a narrower rule."
    )


def markup_refused(*, rule: str, message: str) -> str:
    """The sentence refusing markup where plain text belongs; "" when there is none."""
    for text, what in ((rule, "rule"), (message, "message")):
        if MARKUP.search(text):
            return f"The {what} has HTML in it; write it as plain text."
    return ""


# --- writing ------------------------------------------------------------------------------------


def _entry_of(team_rule: TeamRule) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "rule": team_rule.rule,
        "effect": team_rule.behavior,
        "project": team_rule.project,
        "message": team_rule.message,
    }
    if team_rule.expires_at is not None:
        entry["expires"] = team_rule.expires_at.astimezone(UTC).replace(microsecond=0)
    entry["mode"] = team_rule.mode
    entry["author"] = team_rule.created_by.get_username() if team_rule.created_by else ""
    entry["allows_dangerous"] = team_rule.allows_dangerous
    return entry


def rule_file_export() -> str:
    """Every rule, oldest first, as one TOML file."""
    team_rules = TeamRule.objects.select_related("created_by").order_by("pk")
    text = tomli_w.dumps({"rule": [_entry_of(team_rule) for team_rule in team_rules]})
    return HEADER + text


# --- reading ------------------------------------------------------------------------------------


class RuleEntry(BaseModel):
    """One [[rule]] table, as written."""

    model_config = ConfigDict(extra="forbid", strict=True)

    rule: str = Field(max_length=rules.MAX_RULE_LENGTH)
    effect: Literal["allow", "deny"]
    project: str = Field(default="", max_length=200)
    message: str = Field(default="", max_length=MAX_MESSAGE_CHARS)
    expires: datetime | date | None = None
    mode: Literal["active", "shadow"] = "active"
    author: str = Field(default="", max_length=150)
    allows_dangerous: bool = False

    @field_validator("expires", mode="before")
    @classmethod
    def _written_as_iso(cls, value: object) -> object:
        """A TOML date or date-time, or the same as an ISO string."""
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value) if "T" in value else date.fromisoformat(value)
            except ValueError:
                raise ValueError("write the expiry as 2027-01-31 or 2027-01-31T18:00:00Z") from None
        return value

    def expires_at(self) -> datetime | None:
        """A day alone: the rule decides until the end of that day (the server's time zone)."""
        if self.expires is None or isinstance(self.expires, datetime):
            return self.expires
        return timezone.make_aware(datetime.combine(self.expires + timedelta(days=1), time.min))

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.rule.strip(), self.project.strip(), self.effect)


@dataclass
class Located:
    entry: RuleEntry
    line: int


class RuleFileError(ValueError):
    """The file's mistakes, each one sentence that starts with its line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems[0] if len(problems) == 1 else f"{len(problems)} mistakes")
        self.problems = problems


def _table_lines(text: str) -> list[int]:
    """The line of each [[rule]] table, in order (the tables of the parsed file)."""
    return [n for n, line in enumerate(text.splitlines(), start=1) if TABLE.match(line)]


def _key_line(lines: list[str], start: int, key: str) -> int:
    """The line of `key` in the table that starts on line `start`; `start` when not found."""
    for n in range(start, len(lines)):
        line = lines[n]
        if TABLE.match(line) or line.lstrip().startswith("["):
            break
        found = KEY.match(line)
        if found and found.group(1).strip('"') == key:
            return n + 1
    return start


def _said(error: dict[str, Any]) -> str:
    kind = error["type"]
    name = str(error["loc"][0]) if error["loc"] else "rule"
    if kind == "extra_forbidden":
        return f"there is no key {name!r} in a rule; use {', '.join(RuleEntry.model_fields)}"
    if kind == "missing":
        return f"{name} is missing"
    if kind == "literal_error":
        return f"{name} must be {CHOICES.get(name, 'one of its values')}"
    if kind == "string_too_long":
        return f"{name} is too long (at most {error['ctx']['max_length']} characters)"
    if kind in ("string_type", "bool_type"):
        wanted = "text in quotes" if kind == "string_type" else "true or false"
        return f"{name} must be {wanted}"
    message = error["msg"].removeprefix("Value error, ")
    return f"{name}: {message}"


def _decoded(data: bytes | str) -> str:
    if isinstance(data, str):
        if rules.unstorable(data):
            raise RuleFileError(
                ["The file has characters that cannot be stored; save it as UTF-8."]
            )
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise RuleFileError(
            [f"line {line}: this is not UTF-8 text; save the file as UTF-8."]
        ) from None


def rule_file_parse(data: bytes | str) -> list[Located]:
    """The file's rules, each with its line; RuleFileError naming every mistake."""
    if len(data) > MAX_FILE_BYTES:
        raise RuleFileError([f"The file is larger than {MAX_FILE_BYTES} bytes; split the rules."])
    text = _decoded(data)
    if "\x00" in text:
        raise RuleFileError(["The file has a NUL character; remove it."])
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RuleFileError([f"The file is not valid TOML: {error}."]) from None
    lines = text.splitlines()
    problems = [
        f"line {_key_line(lines, 0, key)}: {key!r} is not a rule; write rules as [[rule]] tables"
        for key in parsed
        if key != "rule"
    ]
    tables = parsed.get("rule", [])
    if not isinstance(tables, list):
        raise RuleFileError(["Write each rule as a [[rule]] table, not [rule]."])
    if len(tables) > MAX_RULES:
        raise RuleFileError([f"The file has {len(tables)} rules; at most {MAX_RULES} are taken."])
    starts = _table_lines(text)
    if len(starts) != len(tables):
        starts = [0] * len(tables)  # tables written inline: name them by their number
    found: list[Located] = []
    seen: dict[tuple[str, str, str], int] = {}
    for number, (table, start) in enumerate(zip(tables, starts, strict=True), start=1):
        where = f"line {start}" if start else f"rule {number}"
        try:
            entry = RuleEntry.model_validate(table)
        except ValidationError as error:
            for item in error.errors():
                key = str(item["loc"][0]) if item["loc"] else ""
                at = _key_line(lines, start, key) if start and key else start
                problems.append(f"{f'line {at}' if at else where}: {_said(item)}")
            continue
        if entry.key in seen:
            problems.append(
                f"{where}: the same rule as on line {seen[entry.key]}; keep one of them"
            )
            continue
        seen[entry.key] = start or number
        found.append(Located(entry, start))
    if problems:
        raise RuleFileError(problems)
    return found


# --- importing ------------------------------------------------------------------------------------


@dataclass
class Imported:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: int = 0
    checked_only: bool = False

    def summary(self) -> str:
        done = (
            f"{len(self.added)} added, {len(self.changed)} changed, "
            f"{len(self.removed)} removed, {self.kept} kept as they were"
        )
        if self.checked_only:
            return f"The file is valid; importing it would leave: {done}. Nothing was changed."
        return f"Rules imported: {done}."


def rule_set_replace(
    *,
    entries: list[Located],
    user: AbstractBaseUser | None,
    via: Via | None = None,
    check: bool = False,
) -> Imported:
    """Make the server's rules exactly the file's; RuleFileError (nothing changed) naming the
    line of each rule that cannot be saved. `check`: the same, then nothing is kept."""
    result = Imported(checked_only=check)
    problems: list[str] = []
    with transaction.atomic():
        present: dict[tuple[str, str, str], list[TeamRule]] = {}
        for team_rule in TeamRule.objects.select_for_update().order_by("pk"):
            key = (team_rule.rule, team_rule.project, team_rule.behavior)
            present.setdefault(key, []).append(team_rule)
        authors = _authors({located.entry.author for located in entries})
        for located in entries:
            try:
                _apply(located.entry, present, authors, user, via, result)
            except ValueError as error:
                problems.append(f"line {located.line}: {error}" if located.line else str(error))
        for left in present.values():
            for team_rule in left:
                result.removed.append(team_rule_words(team_rule))
                team_rule_remove(rule_id=team_rule.pk, user=user, via=via)
        if problems or check:
            transaction.set_rollback(True)
    if problems:
        raise RuleFileError(problems)
    return result


def _authors(names: set[str]) -> dict[str, AbstractBaseUser]:
    found = get_user_model().objects.filter(username__in=[name for name in names if name])
    return {user.get_username(): user for user in found}


def _apply(
    entry: RuleEntry,
    present: dict[tuple[str, str, str], list[TeamRule]],
    authors: dict[str, AbstractBaseUser],
    user: AbstractBaseUser | None,
    via: Via | None,
    result: Imported,
) -> None:
    refused = markup_refused(rule=entry.rule, message=entry.message) or dangerous_unconfirmed(
        rule=entry.rule, behavior=entry.effect, allows_dangerous=entry.allows_dangerous
    )
    if refused:
        raise ValueError(refused.replace("confirm that it may", "set allows_dangerous = true"))
    expires_at = entry.expires_at()
    same = present.get(entry.key)
    if same:
        kept = same.pop(0)
        before = team_rule_words(kept)
        expiry: datetime | Keep | None = KEEP if expires_at == kept.expires_at else expires_at
        updated = team_rule_update(
            rule_id=kept.pk, user=user, via=via, mode=entry.mode,
            message=entry.message, expires_at=expiry, allows_dangerous=entry.allows_dangerous,
        )  # fmt: skip
        if updated is not None and team_rule_words(updated) != before:
            result.changed.append(team_rule_words(updated))
        else:
            result.kept += 1
        return
    created = team_rule_add(
        rule=entry.rule, behavior=entry.effect, project=entry.project, user=user,
        via=via, mode=entry.mode, message=entry.message,
        expires_at=expires_at, allows_dangerous=entry.allows_dangerous,
    )  # fmt: skip
    author = authors.get(entry.author)
    if author is not None and author != user:
        TeamRule.objects.filter(pk=created.pk).update(created_by=author)
    result.added.append(team_rule_words(created))
