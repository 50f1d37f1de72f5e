"""Team rules in the API, for reviewers' tokens: the rule set as one TOML file (or JSON), an
import that replaces it (or only checks it), and a rule's backtest."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from channels.db import database_sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, HttpResponse
from ninja import Query, Router
from pydantic import BaseModel, ConfigDict, Field

from dashboard.core.audit import Via
from dashboard.core.errors import ServiceError
from dashboard.core.writer import write
from dashboard.policy.backtest import rule_backtest
from dashboard.policy.rulefile import (
    ONLY_REVIEWERS,
    Imported,
    RuleFileError,
    may_change_rules,
    rule_file_export,
    rule_file_parse,
    rule_set_replace,
)
from planmode import rules
from planmode.models import TeamRule
from todos.schemas import ErrorOut

router = Router(tags=["team rules"])

RULE_ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 413: ErrorOut, 422: ErrorOut}
TOML = "application/toml; charset=utf-8"


class RuleOut(BaseModel):
    rule: str
    effect: Literal["allow", "deny"]
    project: str
    message: str
    expires: datetime | None
    mode: Literal["active", "shadow"]
    author: str
    allows_dangerous: bool


class RulesOut(BaseModel):
    rules: list[RuleOut]


class ImportedOut(BaseModel):
    added: int
    changed: int
    removed: int
    kept: int
    checked_only: bool = Field(description="True for ?check=1: nothing was changed.")
    summary: str


class BacktestIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rule: str = Field(max_length=rules.MAX_RULE_LENGTH)
    effect: Literal["allow", "deny"]
    project: str = Field(default="", max_length=200)
    days: Literal[30, 90] | None = Field(default=30, description="30, 90, or null for all.")
    allows_dangerous: bool = False


class DisagreementOut(BaseModel):
    request_id: int
    tool: str
    request: str = Field(description="What it asked, as stored (redacted).")
    decided_by: str
    decided: Literal["allow", "deny"]
    decided_at: datetime


class BacktestOut(BaseModel):
    rule: str
    effect: str
    project: str
    days: int | None
    matched: int
    agreed: int
    disagreed: int
    allowed_denied: int = Field(description="Requests it would have allowed that a person denied.")
    held_dangerous: int
    answered_by_rules: int
    waited_total_seconds: float
    waited_median_seconds: float | None
    disagreements: list[DisagreementOut]


def _reviewer(request: HttpRequest) -> AbstractBaseUser:
    if not may_change_rules(request.auth):
        raise ServiceError("forbidden", ONLY_REVIEWERS, status=403)
    return request.auth


def _via(request: HttpRequest) -> Via:
    return Via(surface="API", address=request.META.get("REMOTE_ADDR"))


def _rules_out() -> RulesOut:
    team_rules = TeamRule.objects.select_related("created_by").order_by("pk")
    return RulesOut(rules=[_rule_out(team_rule) for team_rule in team_rules])


def _rule_out(team_rule: TeamRule) -> RuleOut:
    return RuleOut(
        rule=team_rule.rule,
        effect=team_rule.behavior,
        project=team_rule.project,
        message=team_rule.message,
        expires=team_rule.expires_at,
        mode=team_rule.mode,
        author=team_rule.created_by.get_username() if team_rule.created_by else "",
        allows_dangerous=team_rule.allows_dangerous,
    )


@router.get(
    "/rules",
    response={200: RulesOut, **RULE_ERRORS},
    summary="Every team rule, as one TOML file (or JSON)",
)
async def rules_export(
    request: HttpRequest,
    format: Annotated[
        Literal["toml", "json"], Query(description="toml (default) or json")
    ] = "toml",
) -> HttpResponse | dict:
    """The file `python manage.py rules export` writes; `?format=json` for the same as JSON."""
    await database_sync_to_async(_reviewer)(request)
    if format == "json":
        return await database_sync_to_async(_rules_out)()
    return HttpResponse(await database_sync_to_async(rule_file_export)(), content_type=TOML)


@router.post(
    "/rules/import",
    response={200: ImportedOut, **RULE_ERRORS},
    summary="Replace every team rule with those of a TOML file",
)
async def rules_import(
    request: HttpRequest,
    check: Annotated[bool, Query(description="Only check the file; change nothing.")] = False,
) -> ImportedOut:
    """The body is the TOML file. The server's rules become exactly the file's: a rule equal to
    one in force (same rule, project and effect) keeps its history, rules the file does not name
    are removed. Any mistake (each named with its line in `detail`) changes nothing."""
    user = await database_sync_to_async(_reviewer)(request)
    try:
        entries = rule_file_parse(request.body)
        imported: Imported = await write(
            rule_set_replace, entries=entries, user=user, via=_via(request), check=check
        )
    except RuleFileError as error:
        problems = error.problems
        more = f" ({len(problems) - 1} more listed in detail)" if len(problems) > 1 else ""
        raise ServiceError(
            "invalid_rules",
            f"{problems[0].rstrip('.')}{more}; nothing was changed.",
            detail=[{"loc": ["body"], "msg": problem} for problem in problems],
        ) from None
    return ImportedOut(
        added=len(imported.added),
        changed=len(imported.changed),
        removed=len(imported.removed),
        kept=imported.kept,
        checked_only=imported.checked_only,
        summary=imported.summary(),
    )


def _backtest(user: AbstractBaseUser, payload: BacktestIn) -> BacktestOut:
    try:
        found = rule_backtest(
            rule=payload.rule,
            behavior=payload.effect,
            project=payload.project,
            days=payload.days,
            viewer=user,
            allows_dangerous=payload.allows_dangerous,
        )
    except ValueError as error:
        raise ServiceError("invalid_rule", str(error)) from None
    disagreements = [
        DisagreementOut(
            request_id=d.request_pk,
            tool=d.tool,
            request=d.headline,
            decided_by=d.decided_by,
            decided=d.decided,
            decided_at=d.decided_at,
        )
        for d in found.disagreements
    ]
    return BacktestOut(
        rule=found.rule,
        effect=found.behavior,
        project=found.project,
        days=found.days,
        matched=found.matched,
        agreed=found.agreed,
        disagreed=found.disagreed,
        allowed_denied=found.allowed_denied,
        held_dangerous=found.held_dangerous,
        answered_by_rules=found.answered_by_rules,
        waited_total_seconds=found.waited_total,
        waited_median_seconds=found.waited_median,
        disagreements=disagreements,
    )


@router.post(
    "/rules/backtest",
    response={200: BacktestOut, **RULE_ERRORS},
    summary="What a rule would have done to the requests you may see",
)
async def rules_backtest(request: HttpRequest, payload: BacktestIn) -> BacktestOut:
    """Compared with the people's decisions of the last 30 days, 90, or all (`days`: null)."""
    user = await database_sync_to_async(_reviewer)(request)
    return await database_sync_to_async(_backtest)(user, payload)
