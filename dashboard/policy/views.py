"""The team rules page (`/inbox/rules/`): each rule with what it did and saved, the rules the
team's own decisions suggest, and the form that writes or edits a rule with its backtest beside
it (live with htmx, a submit button without JavaScript). Reviewers change rules; everyone sees
the figures of the requests they may see.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from dashboard.core.audit import via_request
from dashboard.core.security import login_required
from dashboard.core.visibility import visible_sessions
from dashboard.core.writer import write_sync
from dashboard.policy.backtest import Backtest, rule_backtest
from dashboard.policy.rulefile import (
    ONLY_REVIEWERS,
    dangerous_unconfirmed,
    markup_refused,
    may_change_rules,
)
from dashboard.policy.stats import RuleStats, rule_stats
from dashboard.policy.suggestions import Suggestion, rule_suggestions, suggestion_dismiss
from planmode import rules
from planmode.models import RuleBehavior, RuleMode, TeamRule
from planmode.permissions import KEEP, Keep, team_rule_add, team_rule_remove, team_rule_update
from planmode.tool_display import describe

SURFACE = "team rules page"
DAYS = {"30": 30, "90": 90, "all": None}
EXAMPLES = 3
# A rule's first save follows its making by milliseconds: a later save is a change.
SAVED_WITH_MAKING = timedelta(milliseconds=200)


# --- what the page shows ----------------------------------------------------------------------


@dataclass
class RuleRow:
    team_rule: TeamRule
    stats: RuleStats

    @property
    def state(self) -> str:
        if self.stats.expired:
            return "expired"
        return "shadow" if self.team_rule.is_shadow else "active"

    @property
    def changed(self) -> bool:
        """Changed since it was made: by someone else, or after its making's own save."""
        made = self.team_rule
        return (
            made.updated_by_id != made.created_by_id
            or made.updated_at - made.created_at > SAVED_WITH_MAKING
        )


@dataclass
class Example:
    headline: str
    decided_by: str
    decided_at: datetime


@dataclass
class SuggestionRow:
    suggestion: Suggestion
    examples: list[Example] = field(default_factory=list)


def _rule_rows(viewer: AbstractBaseUser) -> list[RuleRow]:
    team_rules = list(TeamRule.objects.select_related("created_by", "updated_by"))
    stats = rule_stats(team_rules=team_rules, viewer=viewer)
    return [RuleRow(team_rule, stats[team_rule.pk]) for team_rule in team_rules]


def _suggestion_rows(viewer: AbstractBaseUser) -> list[SuggestionRow]:
    rows = []
    for suggestion in rule_suggestions(viewer=viewer):
        examples = [
            Example(describe(r.tool_name, r.tool_input).headline, r.decided_by, r.decided_at)
            for r in suggestion.evidence[:EXAMPLES]
        ]
        rows.append(SuggestionRow(suggestion, examples))
    return rows


# --- the form ---------------------------------------------------------------------------------


@dataclass
class RuleForm:
    """The rule form's fields as posted (or prefilled)."""

    rule: str = ""
    behavior: str = RuleBehavior.ALLOW
    project: str = ""
    message: str = ""
    expires: str = ""
    shadow: bool = False
    allows_dangerous: bool = False
    days: str = "30"
    # Editing: the expiry as the form was filled with it (unchanged: kept as it is).
    expires_before: str = ""

    @classmethod
    def posted(cls, data: QueryDict) -> RuleForm:
        days = data.get("days", "30")
        return cls(
            rule=data.get("rule", "").strip(),
            behavior=data.get("behavior", ""),
            project=data.get("project", "").strip(),
            message=data.get("message", "").strip(),
            expires=data.get("expires", "").strip(),
            shadow=data.get("shadow") == "on",
            allows_dangerous=data.get("allows_dangerous") == "on",
            days=days if days in DAYS else "30",
            expires_before=data.get("expires_before", ""),
        )

    @classmethod
    def of(cls, team_rule: TeamRule) -> RuleForm:
        expires = _day_of(team_rule.expires_at)
        return cls(
            rule=team_rule.rule, behavior=team_rule.behavior, project=team_rule.project,
            message=team_rule.message, expires=expires, shadow=team_rule.is_shadow,
            allows_dangerous=team_rule.allows_dangerous, expires_before=expires,
        )  # fmt: skip

    @property
    def mode(self) -> str:
        return RuleMode.SHADOW if self.shadow else RuleMode.ACTIVE

    @property
    def shapes(self) -> tuple[str, ...]:
        """The dangerous shapes the rule names: the confirmation asks about these."""
        try:
            return rules.named_shapes(rules.parse_rule(self.rule))
        except ValueError:
            return ()

    def refusal(self) -> str:
        """One sentence when the fields cannot make a rule the page saves; "" otherwise."""
        for text, what in ((self.rule, "rule"), (self.message, "message")):
            if rules.unstorable(text) or "\x00" in text:
                return f"The {what} has characters that cannot be stored; retype it."
        if len(self.project) > 200:
            return "A project name has at most 200 characters."
        return markup_refused(rule=self.rule, message=self.message) or dangerous_unconfirmed(
            rule=self.rule, behavior=self.behavior, allows_dangerous=self.allows_dangerous
        )

    def expires_at(self) -> datetime | None:
        """The end of the day chosen, in the server's time zone: the rule decides through it.
        ValueError (one sentence) for what is not a day."""
        if not self.expires:
            return None
        try:
            day = date.fromisoformat(self.expires)
        except ValueError:
            raise ValueError(
                "Write the expiry as a day, such as 2027-01-31, or leave it empty."
            ) from None
        return timezone.make_aware(datetime.combine(day + timedelta(days=1), time.min))


def _day_of(moment: datetime | None) -> str:
    if moment is None:
        return ""
    return timezone.localtime(moment - timedelta(microseconds=1)).date().isoformat()


def _backtest(form: RuleForm, viewer: AbstractBaseUser) -> tuple[Backtest | None, str]:
    if not form.rule:
        return None, ""
    try:
        return rule_backtest(
            rule=form.rule, behavior=form.behavior, project=form.project,
            days=DAYS[form.days], viewer=viewer, allows_dangerous=form.allows_dangerous,
        ), ""  # fmt: skip
    except ValueError as error:
        return None, str(error)


# --- pages ------------------------------------------------------------------------------------


def _page(
    request: HttpRequest,
    *,
    status: int = 200,
    form: RuleForm | None = None,
    editing: TeamRule | None = None,
    **extra: Any,
) -> HttpResponse:
    may_change = may_change_rules(request.user)
    context = {
        "rules": _rule_rows(request.user),
        "suggestions": _suggestion_rows(request.user) if may_change else [],
        "can_steer": may_change,
        "projects": sorted(
            {s.project for s in visible_sessions(request.user).only("cwd", "project_name")[:500]}
        ),
        "form": form or RuleForm(),
        "editing": editing,
        "days": DAYS,
        **extra,
    }
    return render(request, "policy/rules.html", context, status=status)


def _refused(request: HttpRequest, **context: Any) -> HttpResponse:
    return _page(request, status=403, error=ONLY_REVIEWERS, **context)


def _prefilled(data: QueryDict) -> RuleForm:
    """The form filled from a link (a suggestion's Edit)."""
    form = RuleForm.posted(data)
    form.rule, form.project = form.rule[: rules.MAX_RULE_LENGTH], form.project[:200]
    if form.behavior not in RuleBehavior.values:
        form.behavior = RuleBehavior.ALLOW
    return form


@login_required
def team_rules(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        # A suggestion's Edit opens the form with the rule tested already.
        form = _prefilled(request.GET)
        found, error = _backtest(form, request.user)
        return _page(request, form=form, backtest=found, backtest_error=error)
    form = RuleForm.posted(request.POST)
    if "backtest" in request.POST:
        found, error = _backtest(form, request.user)
        return _page(request, form=form, backtest=found, backtest_error=error)
    if not may_change_rules(request.user):
        return _refused(request, form=form)
    try:
        if refused := form.refusal():
            raise ValueError(refused)
        write_sync(
            team_rule_add, rule=form.rule, behavior=form.behavior, project=form.project,
            user=request.user, via=via_request(request, SURFACE), mode=form.mode,
            message=form.message, expires_at=form.expires_at(),
            allows_dangerous=form.allows_dangerous,
        )  # fmt: skip
    except ValueError as error:
        return _page(request, status=422, form=form, error=str(error))
    return redirect("team-rules")


def _back_to_rules(*, changed: bool) -> HttpResponse:
    """After a change to one rule: the rules page, or 404 when there was no such rule."""
    if not changed:
        raise Http404("No such rule.")
    return redirect("team-rules")


def _rule_or_404(rule_id: int) -> TeamRule:
    found = TeamRule.objects.filter(pk=rule_id).first()
    if found is None:
        raise Http404("No such rule.")
    return found


@login_required
def team_rule_edit(request: HttpRequest, rule_id: int) -> HttpResponse:
    editing = _rule_or_404(rule_id)
    if request.method != "POST":
        form = RuleForm.of(editing)
        found, error = _backtest(form, request.user)
        return _page(request, form=form, editing=editing, backtest=found, backtest_error=error)
    form = RuleForm.posted(request.POST)
    if "backtest" in request.POST:
        found, error = _backtest(form, request.user)
        return _page(request, form=form, editing=editing, backtest=found, backtest_error=error)
    if not may_change_rules(request.user):
        return _refused(request, form=form, editing=editing)
    try:
        if refused := form.refusal():
            raise ValueError(refused)
        expiry: datetime | Keep | None = (
            KEEP if form.expires == form.expires_before else form.expires_at()
        )
        updated = write_sync(
            team_rule_update, rule_id=rule_id, user=request.user,
            via=via_request(request, SURFACE), rule=form.rule, behavior=form.behavior,
            project=form.project, mode=form.mode, message=form.message, expires_at=expiry,
            allows_dangerous=form.allows_dangerous,
        )  # fmt: skip
    except ValueError as error:
        return _page(request, status=422, form=form, editing=editing, error=str(error))
    return _back_to_rules(changed=updated is not None)


@login_required
@require_POST
def team_rule_activate(request: HttpRequest, rule_id: int) -> HttpResponse:
    if not may_change_rules(request.user):
        return _refused(request)
    try:
        updated = write_sync(
            team_rule_update, rule_id=rule_id, user=request.user,
            via=via_request(request, SURFACE), mode=RuleMode.ACTIVE,
        )  # fmt: skip
    except ValueError as error:
        return _page(request, status=422, error=str(error))
    return _back_to_rules(changed=updated is not None)


@login_required
@require_POST
def team_rule_delete(request: HttpRequest, rule_id: int) -> HttpResponse:
    if not may_change_rules(request.user):
        return _refused(request)
    removed = write_sync(
        team_rule_remove, rule_id=rule_id, user=request.user, via=via_request(request, SURFACE)
    )
    return _back_to_rules(changed=removed)


@login_required
@require_POST
def rule_backtest_panel(request: HttpRequest) -> HttpResponse:
    """The form's backtest, re-rendered as the rule is written (htmx)."""
    form = RuleForm.posted(request.POST)
    found, error = _backtest(form, request.user)
    context = {"form": form, "backtest": found, "backtest_error": error}
    return render(request, "policy/_backtest.html", context)


# --- suggestions ------------------------------------------------------------------------------


def _back(request: HttpRequest) -> HttpResponse:
    return redirect("inbox" if request.POST.get("from") == "inbox" else "team-rules")


@login_required
@require_POST
def suggestion_accept(request: HttpRequest) -> HttpResponse:
    """A suggestion saved as it was suggested, in force or in shadow."""
    form = RuleForm.posted(request.POST)
    if not may_change_rules(request.user):
        return _refused(request)
    try:
        if refused := form.refusal():
            raise ValueError(refused)
        write_sync(
            team_rule_add, rule=form.rule, behavior=form.behavior, project=form.project,
            user=request.user, via=via_request(request, SURFACE), mode=form.mode,
        )  # fmt: skip
    except ValueError as error:
        return _page(request, status=422, form=form, error=str(error))
    return _back(request)


@login_required
@require_POST
def suggestion_dismiss_view(request: HttpRequest) -> HttpResponse:
    if not may_change_rules(request.user):
        return _refused(request)
    try:
        write_sync(
            suggestion_dismiss,
            key=request.POST.get("key", ""),
            evidence_digest=request.POST.get("evidence", ""),
            user=request.user,
        )
    except ValueError as error:
        return _page(request, status=400, error=str(error))
    return _back(request)


@login_required
@require_GET
def inbox_suggestions(request: HttpRequest) -> HttpResponse:
    """The inbox's compact list of suggested rules (loaded by htmx), for reviewers."""
    if not may_change_rules(request.user):
        return HttpResponse("")
    rows = _suggestion_rows(request.user)
    return render(request, "policy/_inbox_suggestions.html", {"suggestions": rows})
