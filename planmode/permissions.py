"""Permission requests: an agent asks to use a tool, a team rule or a person answers, once.

Like plans: the request is stored pending, its held hook waits, and the first decision wins by
a conditional update (the loser is told who was quicker). A team rule that matches answers at
once. The developer may answer Claude Code's own prompt first: the agent's next event then marks
the request answered in the terminal. Nobody answering in time expires it.

Who may answer: the session's reviewers, and the person whose session it is
(`dashboard.core.visibility`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from django.utils.crypto import salted_hmac

from dashboard.activity.services import step_wait_record
from dashboard.core.audit import Via, audit
from dashboard.core.changes import Changes
from dashboard.core.errors import ServiceError
from dashboard.core.redaction import MARKER_PREFIX, redact, redact_json
from dashboard.core.visibility import audience_of
from dashboard.models import Agent, AuditAction, Project
from planmode import rules
from planmode.models import (
    PermissionDecision,
    PermissionRequest,
    RequestStatus,
    RuleBehavior,
    RuleMode,
    RuleVerdict,
    TeamRule,
    TerminalWait,
)
from planmode.rulebook import rules_answer
from planmode.services import (
    already_staged,
    held_until,
    nobody_waiting,
    nobody_waits,
    plans_answered_elsewhere,
)
from planmode.tool_display import describe, describe_suggestion

REVIEW_PERMISSION = "planmode.review_plan"
MAX_MESSAGE_CHARS = 5_000
MAX_NOTIFICATION_CHARS = 1_000
# Where an "always allow" chosen on the board is kept by Claude Code.
REMEMBER_DESTINATIONS = {"session": "session", "project": "localSettings"}


# --- who sees and answers what ----------------------------------------------------------------


def is_reviewer(user: AbstractBaseUser) -> bool:
    """Whether the user decides anything at all (the page shows them decision controls)."""
    return audience_of(user).reviews_anything


def check_may_answer(user: AbstractBaseUser, request: PermissionRequest) -> None:
    audience = audience_of(user)
    if not audience.may_see(request.session):
        raise ServiceError("not_found", "There is no such permission request.", status=404)
    if not audience.is_waited_on_in(request.session):
        raise ServiceError(
            "not_allowed",
            "Only reviewers, or the person whose session it is, can answer this request; "
            "ask an admin for the review permission.",
            status=403,
        )


# --- arriving ---------------------------------------------------------------------------------


def input_key(tool_name: str, tool_input: object) -> str:
    """The same for identical requests (same tool, same input), whichever agent asks.

    Made from the input as the agent sent it, before redaction: two requests that differ only
    in a secret are different requests, and the call that ran (its PostToolUse) is recognised
    by it. Keyed with the server's SECRET_KEY, so that the stored key cannot be used to guess
    a redacted secret (the rest of the input is stored beside it)."""
    text = json.dumps([tool_name, tool_input], sort_keys=True, ensure_ascii=False)
    # A lone surrogate (which JSON can spell) is kept as it came: such an input matches no
    # stored request, which could not hold it, but it must not take the hook down.
    raw = text.encode("utf-8", "surrogatepass")
    return salted_hmac("agentboard.permission-input", raw, algorithm="sha256").hexdigest()


@dataclass
class RequestChange:
    request: PermissionRequest
    changes: Changes = field(default_factory=Changes)


def permission_request_open(
    *,
    agent: Agent,
    tool_name: str,
    tool_input: dict[str, Any],
    suggestions: list[Any],
    permission_mode: str = "",
    held_for: float | None = None,
    refused_by_auto_mode: bool = False,
) -> RequestChange:
    """A PermissionRequest of `agent` (resolved and locked by the caller): answered at once by
    a matching team rule, or pending until someone decides. The same request delivered twice
    (both hook kinds installed) joins the one still waiting.

    The input and the suggestions are stored redacted; team rules match the input as sent,
    which is what the agent will run."""
    assert transaction.get_connection().in_atomic_block
    key = input_key(tool_name, tool_input)
    waiting = (
        agent.permission_requests.filter(
            status=RequestStatus.PENDING, input_key=key, refused_by_auto_mode=refused_by_auto_mode
        )
        .order_by("-pk")
        .first()
    )
    # How long the hook that asks holds the request for its answer.
    held = held_until(held_for)
    if waiting is not None:
        waiting.agent, waiting.session = agent, agent.session
        # Another held hook waits on it now: it stays answerable for that one too.
        waiting.held_until = held
        PermissionRequest.objects.filter(pk=waiting.pk).update(held_until=held)
        return RequestChange(waiting)
    request = PermissionRequest.objects.create(
        session=agent.session,
        agent=agent,
        tool_name=tool_name,
        tool_input=redact_json(tool_input),
        input_key=key,
        suggestions=redact_json(suggestions),
        permission_mode=permission_mode[:20],
        refused_by_auto_mode=refused_by_auto_mode,
        held_until=held,
    )
    request.agent, request.session = agent, agent.session
    step_wait_record(agent_pk=agent.pk, tool_name=tool_name, waited_on=f"permission:{request.pk}")
    matched = _matching_rule(request, tool_input)
    if matched is not None:
        rule, behavior = matched
        outcome = RequestStatus.ALLOWED if behavior == RuleBehavior.ALLOW else RequestStatus.DENIED
        _finish(request, outcome=outcome, rule=rule)
        view = describe(request.tool_name, request.tool_input)
        audit(
            AuditAction.REQUEST_ALLOWED if outcome == RequestStatus.ALLOWED
            else AuditAction.REQUEST_DENIED,
            rule=redact(f"{behavior} {rule.rule}"), session=request.session,
            about=f"request:{request.pk}", summary=f"{view.tool}: {view.headline}",
            via=Via(surface="team rule"),
        )  # fmt: skip
        return RequestChange(request, _changes([request]))
    if not agent.awaiting_plan:
        Agent.objects.filter(pk=agent.pk).update(awaiting_plan=True)
        agent.awaiting_plan = True
    # The agent's card, its session's row and its board's banner say what it waits for.
    changes = Changes(permission_requests={request.pk}, inbox_sessions={agent.session_id}).agent(
        agent.pk, agent.session_id
    )
    return RequestChange(request, changes)


def _matching_rule(
    request: PermissionRequest, tool_input: dict[str, Any]
) -> tuple[TeamRule, str] | None:
    """The active rule that answers the request, if one does; what each shadow rule that
    matches would have answered is recorded beside it (one insert)."""
    verdicts = rules_answer(
        project=request.session.project,
        tool_name=request.tool_name,
        tool_input=tool_input,
        cwd=request.session.cwd,
        now=timezone.now(),
    )
    if verdicts.shadow:
        shadows = verdicts.shadow
        RuleVerdict.objects.bulk_create(
            [RuleVerdict(rule=rule, request=request, would=would) for rule, would in shadows],
            ignore_conflicts=True,
        )
    return verdicts.answer


# --- deciding ---------------------------------------------------------------------------------


def _finish(
    request: PermissionRequest,
    *,
    outcome: str,
    user: AbstractBaseUser | None = None,
    rule: TeamRule | None = None,
    message: str = "",
    interrupt: bool = False,
    updated_permissions: Sequence[dict[str, Any]] = (),
    unless_staged: bool = False,
) -> bool:
    """Move a pending request to its final state and record the decision, exactly once: of
    two concurrent callers only one matches a row still pending. False for the one that lost.
    With `unless_staged` (a person's decision) a row with someone's decision waiting in its
    undo window does not match either: that one came first."""
    now = timezone.now()
    fields = {
        "message": message,
        "interrupt": interrupt,
        "updated_permissions": list(updated_permissions),
    }
    pending = PermissionRequest.objects.filter(pk=request.pk, status=RequestStatus.PENDING)
    if unless_staged:
        pending = pending.filter(staged_answer__isnull=True)
    won = pending.update(status=outcome, decided_by=user, decided_at=now, rule=rule, **fields)
    if not won:
        return False
    PermissionDecision.objects.create(
        request_id=request.pk,
        outcome=outcome,
        decided_by=user,
        decided_by_name=user.get_username() if user else "",
        rule=rule,
        rule_text=f"{rule.behavior} {rule.rule}" if rule else "",
        decided_at=now,
        **fields,
    )
    request.status, request.decided_by, request.decided_at, request.rule = outcome, user, now, rule
    request.message, request.interrupt = message, interrupt
    request.updated_permissions = list(updated_permissions)
    return True


def _changes(decided: list[PermissionRequest]) -> Changes:
    changes = Changes(
        permission_requests={request.pk for request in decided},
        decided_permissions={request.pk: permission_state(request) for request in decided},
    )
    for request in decided:
        changes.agent(request.agent_id, request.session_id)
        changes.inbox_sessions.add(request.session_id)
    return changes


def request_load(request_id: int) -> PermissionRequest:
    request = (
        PermissionRequest.objects.select_related(
            "session", "session__owner", "agent", "agent__session", "decided_by", "rule"
        )
        .filter(pk=request_id)
        .first()
    )
    if request is None:
        raise ServiceError(
            "request_not_found",
            f"There is no permission request {request_id}; it may have been removed.",
            status=404,
        )
    return request


def request_already_decided(request: PermissionRequest) -> ServiceError:
    when = timezone.localtime(request.decided_at).strftime("%H:%M:%S") if request.decided_at else ""
    if request.decided_by is not None:
        text = (
            f"{request.decided_by.get_username()} already {request.status} this request at {when}"
        )
    elif request.rule is not None:
        text = f"The team rule {request.rule.rule} already {request.status} this request"
    elif request.status == RequestStatus.ANSWERED_IN_TERMINAL:
        text = (
            "This request was answered in the agent's terminal before anyone decided here, "
            "and the agent has moved on"
        )
    elif request.status == RequestStatus.EXPIRED and request.end_reason:
        text = f"This request expired: {request.end_reason}"
    elif request.status == RequestStatus.EXPIRED:
        text = "Nobody decided in time, so the agent's terminal asked instead"
    else:
        text = f"This request is already {request.status}"
    return ServiceError("already_decided", f"{text}; nothing was changed.", status=409)


def decided_first(request: PermissionRequest) -> ServiceError:
    """Why a person's decision on `request` was refused: someone decided it already, or
    their decision waits in its undo window."""
    if request.is_pending and request.staged_answer is not None:
        return already_staged(request.staged_answer, "request")
    return request_already_decided(request)


def remembered_permissions(
    request: PermissionRequest, *, choice: str, pattern: str = "", where: str = "session"
) -> list[dict[str, Any]]:
    """The `updatedPermissions` of an "allow and remember": one of Claude Code's own
    suggestions (`choice` "suggestion:N"), or a rule for this tool with the reviewer's pattern
    (`choice` "custom"), kept for the session or the project."""
    if choice.startswith("suggestion:"):
        index = choice.removeprefix("suggestion:")
        suggestions = request.suggestions if isinstance(request.suggestions, list) else []
        if not index.isdigit() or int(index) >= len(suggestions):
            raise ServiceError(
                "unknown_suggestion",
                "That suggestion is not one Claude Code offered for this request; choose another.",
            )
        suggestion = suggestions[int(index)]
        if MARKER_PREFIX in json.dumps(suggestion):
            raise ServiceError(
                "redacted_suggestion",
                "That suggestion held a secret, which Agentboard does not keep; write the rule "
                "to remember yourself.",
            )
        return [suggestion]
    if choice != "custom":
        raise ServiceError("unknown_choice", "Choose a suggestion or write a rule to remember.")
    destination = REMEMBER_DESTINATIONS.get(where)
    if destination is None:
        raise ServiceError("unknown_destination", "Remember it for the session or the project.")
    pattern = pattern.strip()
    try:
        rules.parse_rule(f"{request.tool_name}({pattern})" if pattern else request.tool_name)
    except ValueError as error:
        raise ServiceError("invalid_rule", str(error)) from None
    rule: dict[str, Any] = {"toolName": request.tool_name}
    if pattern:
        rule["ruleContent"] = pattern
    return [{"type": "addRules", "rules": [rule], "behavior": "allow", "destination": destination}]


@dataclass
class Answer:
    """A person's answer: allow (optionally remembering a rule) or deny (optionally stopping
    the agent), as the inbox forms send it."""

    allow: bool
    message: str = ""
    interrupt: bool = False
    remember: str = ""  # "", "suggestion:N" or "custom"
    pattern: str = ""
    where: str = "session"

    def check(self) -> None:
        if len(self.message) > MAX_MESSAGE_CHARS:
            raise ServiceError(
                "message_too_long",
                f"The message has {len(self.message)} characters; keep it under "
                f"{MAX_MESSAGE_CHARS}.",
            )
        if not self.allow and not self.interrupt and not self.message.strip():
            raise ServiceError(
                "message_required",
                "Say why in the message: the agent reads it to choose what to do instead.",
                detail=[{"loc": ["message"], "msg": "required when denying"}],
            )


def _decide_one(
    request: PermissionRequest, *, user: AbstractBaseUser, answer: Answer, via: Via | None
) -> bool:
    remembered = (
        remembered_permissions(
            request, choice=answer.remember, pattern=answer.pattern, where=answer.where
        )
        if answer.allow and answer.remember
        else []
    )
    if answer.allow:
        won = _finish(
            request,
            outcome=RequestStatus.ALLOWED,
            user=user,
            updated_permissions=remembered,
            unless_staged=True,
        )
    else:
        won = _finish(
            request,
            outcome=RequestStatus.DENIED,
            user=user,
            message=redact(answer.message.strip()),
            interrupt=answer.interrupt,
            unless_staged=True,
        )
    if won:
        _audit_answer(request, user=user, answer=answer, via=via, written=remembered)
    return won


def _audit_answer(
    request: PermissionRequest,
    *,
    user: AbstractBaseUser,
    answer: Answer,
    via: Via | None,
    written: list[dict[str, Any]],
) -> None:
    """One entry per request answered (a bulk answer makes one for each); an "always allow"
    says the rule it wrote in words, whether the reviewer wrote it or chose Claude Code's."""
    if answer.allow:
        action = AuditAction.REQUEST_REMEMBERED if answer.remember else AuditAction.REQUEST_ALLOWED
    else:
        action = AuditAction.REQUEST_STOPPED if answer.interrupt else AuditAction.REQUEST_DENIED
    view = describe(request.tool_name, request.tool_input)
    said = [f"{view.tool}: {view.headline}"]
    said += [redact(describe_suggestion(update) or json.dumps(update)) for update in written]
    if not answer.allow and answer.message.strip():
        said.append(redact(answer.message.strip()))
    audit(
        action, actor=user, via=via, session=request.session, about=f"request:{request.pk}",
        summary="\n".join(said),
    )  # fmt: skip


def permission_decide(
    *, request_id: int, user: AbstractBaseUser, answer: Answer, via: Via | None = None
) -> RequestChange:
    """A person answers one pending request, exactly once."""
    answer.check()
    with transaction.atomic(savepoint=False):
        request = request_load(request_id)
        check_may_answer(user, request)
        if not request.is_pending or request.staged_answer is not None:
            raise decided_first(request)
        if nobody_waits(request.held_until):
            raise nobody_waiting("request")
        if not _decide_one(request, user=user, answer=answer, via=via):
            raise decided_first(request_load(request_id))
    return RequestChange(request, _changes([request]))


@dataclass
class ManyDecided:
    decided: list[PermissionRequest]
    # Requests someone (or something) else answered first, each with why.
    missed: list[str]
    changes: Changes = field(default_factory=Changes)


def permission_decide_many(
    *,
    request_ids: Sequence[int],
    user: AbstractBaseUser,
    answer: Answer,
    via: Via | None = None,
) -> ManyDecided:
    """The same answer to several identical requests (same tool, same input, any agents)."""
    answer.check()
    ids = sorted(set(request_ids))
    if not ids:
        raise ServiceError("nothing_selected", "Select the requests to answer first.")
    with transaction.atomic(savepoint=False):
        requests = [request_load(pk) for pk in ids]
        if len({request.input_key for request in requests}) > 1:
            raise ServiceError(
                "not_identical",
                "Only identical requests (the same tool with the same input) can be answered "
                "together; answer the others one by one.",
            )
        for request in requests:
            check_may_answer(user, request)
        decided, missed = [], []
        for request in requests:
            undecided = request.is_pending and request.staged_answer is None
            if undecided and nobody_waits(request.held_until):
                missed.append(nobody_waiting("request").message)
            elif undecided and _decide_one(request, user=user, answer=answer, via=via):
                decided.append(request)
            else:
                missed.append(decided_first(request_load(request.pk)).message)
        if not decided:
            raise ServiceError(
                "already_decided",
                "Every selected request was already answered; nothing changed.",
                status=409,
            )
    return ManyDecided(decided, missed, _changes(decided))


def permission_expire(*, request_id: int) -> RequestChange:
    """Nobody decided in time (the held hook gives up with `{}`, the terminal asks)."""
    with transaction.atomic(savepoint=False):
        request = request_load(request_id)
        if _finish(request, outcome=RequestStatus.EXPIRED):
            return RequestChange(request, _changes([request]))
    return RequestChange(request)


# --- the agent moved on -----------------------------------------------------------------------


# Events that close the agent's turn or open a new one: whatever it waited on was answered.
TURN_EVENTS = frozenset({"UserPromptSubmit", "Stop", "SubagentStop", "SessionStart"})


def agent_moved_on(
    *,
    agent: Agent,
    moved_on: bool,
    event: str = "",
    tool_name: str | None = None,
    tool_input: object = None,
) -> Changes:
    """An event of an agent that something of waited on a person: it is no longer waiting in
    its terminal, and when the event is other work (`moved_on`), its pending plans and
    requests were answered in the terminal (their held hooks let go, late decisions refused).

    Claude Code runs the tool calls of one turn side by side, so another tool's event says
    nothing about a permission request still waiting: only the same call having run
    (PostToolUse with its tool and input) or the turn ending answers it."""
    changes = Changes()
    ended = TerminalWait.objects.filter(agent=agent, ended_at__isnull=True).update(
        ended_at=timezone.now()
    )
    if ended:
        changes.inbox_sessions.add(agent.session_id)
        changes.agent(agent.pk, agent.session_id)
    if not moved_on:
        return changes
    changes.merge(plans_answered_elsewhere(agent=agent))
    pending = list(
        PermissionRequest.objects.select_related("session", "agent", "decided_by", "rule").filter(
            agent=agent, status=RequestStatus.PENDING
        )
    )
    if event in TURN_EVENTS:
        settled, waiting = pending, []
    else:
        key = input_key(tool_name or "", tool_input)
        settled = [r for r in pending if r.tool_name == tool_name and r.input_key == key]
        waiting = [r for r in pending if r not in settled]
    if waiting:
        # Still waiting on a person: the agent's next events must be looked at too.
        Agent.objects.filter(pk=agent.pk).update(awaiting_plan=True)
        agent.awaiting_plan = True
    answered = [r for r in settled if _finish(r, outcome=RequestStatus.ANSWERED_IN_TERMINAL)]
    return changes.merge(_changes(answered)) if answered else changes


def terminal_wait_record(*, agent: Agent, notification_type: str, message: str) -> Changes:
    """Claude Code notified that the agent waits for its developer (a Notification hook)."""
    # Redacted whole before it is cut, so that no cut leaves a secret unrecognisable.
    message = redact(message.strip(), limit=4 * MAX_NOTIFICATION_CHARS)[:MAX_NOTIFICATION_CHARS]
    notification_type = notification_type[:100]
    open_wait = TerminalWait.objects.filter(agent=agent, ended_at__isnull=True).first()
    if open_wait is not None:
        if (open_wait.notification_type, open_wait.message) == (notification_type, message):
            return Changes()
        open_wait.notification_type, open_wait.message = notification_type, message
        open_wait.save(update_fields=["notification_type", "message"])
    else:
        TerminalWait.objects.create(
            agent=agent, notification_type=notification_type, message=message
        )
    if not agent.awaiting_plan:
        Agent.objects.filter(pk=agent.pk).update(awaiting_plan=True)
        agent.awaiting_plan = True
    return Changes(inbox_sessions={agent.session_id}).agent(agent.pk, agent.session_id)


# --- what the agent is told -------------------------------------------------------------------


def model_message(request: PermissionRequest) -> str:
    """The text Claude Code hands the model with a denial, in our own words."""
    tool = request.tool_name
    if request.status != RequestStatus.DENIED:
        return ""
    if request.rule is not None and request.rule.message:
        return request.rule.message
    if request.rule is not None:
        return (
            f"A team rule on Agentboard ({request.rule.rule}) does not allow this {tool} call, "
            "so it did not run. Do not try it again; find another way, or ask the user."
        )
    if request.interrupt:
        said = f" Their message:\n{request.message}" if request.message else ""
        return f"The reviewer denied this {tool} call on Agentboard and stopped you.{said}"
    return (
        f"The reviewer denied this {tool} call on Agentboard, so it did not run. "
        f"Their message:\n{request.message}"
    )


def stopped_message(request: PermissionRequest) -> str:
    """A "deny and stop" told later, with the next prompt: which call it was, and the words
    Claude Code did not hand the model when it stopped it."""
    what = describe(request.tool_name, request.tool_input).headline
    return (
        f"When you were stopped earlier in this session, it was the reviewer on Agentboard: "
        f"they denied your {request.tool_name} call ({what}) and stopped you. Their message, "
        f"which you have not seen yet:\n{request.message}"
    )


def stopped_messages_take(*, agent: Agent) -> str | None:
    """The reviewers' messages of this session's "deny and stop" decisions the model has not
    read yet, each once, for the next prompt's context.

    Claude Code (2.1.197 and 2.1.330) drops a denial's message when the denial interrupts:
    the model reads only Claude Code's own refusal and the turn ends, so the reviewer's words
    wait for the session's next prompt."""
    untold = list(
        PermissionRequest.objects.filter(
            session_id=agent.session_id,
            status=RequestStatus.DENIED,
            interrupt=True,
            message_told_at__isnull=True,
        )
        .exclude(message="")
        .order_by("decided_at", "pk")
    )
    if not untold:
        return None
    PermissionRequest.objects.filter(pk__in=[request.pk for request in untold]).update(
        message_told_at=timezone.now()
    )
    return "\n\n".join(stopped_message(request) for request in untold)


def permission_state(request: PermissionRequest) -> dict[str, Any]:
    """The request as its held hook is told (and
    `dashboard.integrations.claude_code.decision` answers)."""
    return {
        "id": request.pk,
        "session_id": request.session.session_id,
        "agent_id": request.agent.agent_id,
        "tool_name": request.tool_name,
        "status": request.status,
        "message": model_message(request),
        "interrupt": request.interrupt,
        "updated_permissions": request.updated_permissions,
        "decided_by": request.decided_by.get_username() if request.decided_by else None,
        "rule": request.rule.rule if request.rule else None,
        "decided_at": request.decided_at.isoformat() if request.decided_at else None,
    }


# --- team rules ---------------------------------------------------------------------------------


class Keep:
    """An edit's "leave this as it is" where None means something (no expiry)."""


KEEP = Keep()


def _readable(text: str, what: str) -> str:
    """Text a database stores as it came: no lone surrogates, no NUL."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"The {what} has characters that cannot be stored; retype it.") from None
    if "\x00" in text:
        raise ValueError(f"The {what} has a NUL character; remove it.")
    return text


def _rule_checked(team_rule: TeamRule, *, now: datetime, new_expiry: bool = True) -> None:
    """A rule's fields as they may be stored; ValueError (one sentence) when they may not."""
    if team_rule.behavior not in RuleBehavior.values:
        raise ValueError("Choose allow or deny.")
    if team_rule.mode not in RuleMode.values:
        raise ValueError("Choose active or shadow.")
    team_rule.rule = _readable(team_rule.rule, "rule").strip()
    parsed = rules.parse_rule(team_rule.rule)
    team_rule.project = _readable(team_rule.project, "project").strip()[:200]
    message = _readable(team_rule.message, "message").strip()
    if len(message) > MAX_MESSAGE_CHARS:
        raise ValueError(
            f"The message has {len(message)} characters; keep it under {MAX_MESSAGE_CHARS}."
        )
    team_rule.message = redact(message)
    expires_at = team_rule.expires_at
    if expires_at is not None and timezone.is_naive(expires_at):
        raise ValueError("Give the expiry with its time zone.")
    if new_expiry and expires_at is not None and expires_at <= now:
        raise ValueError("Choose an expiry in the future, or none.")
    if team_rule.allows_dangerous and team_rule.behavior != RuleBehavior.ALLOW:
        raise ValueError("Only an allow rule can be confirmed to allow a dangerous shape.")
    if team_rule.allows_dangerous and not rules.named_shapes(parsed):
        raise ValueError(
            "This rule names no dangerous shape (such as sudo or a force push to main), so "
            "there is nothing to confirm; leave the confirmation off."
        )


def team_rule_add(
    *,
    rule: str,
    behavior: str,
    project: str,
    user: AbstractBaseUser,
    via: Via | None = None,
    mode: str = RuleMode.ACTIVE,
    message: str = "",
    expires_at: datetime | None = None,
    allows_dangerous: bool = False,
) -> TeamRule:
    """A reviewer's new team rule; ValueError (one sentence) when it cannot be one. A shadow
    rule decides nothing and records what it would have answered; `allows_dangerous` is the
    reviewer's confirmation that this allow rule may allow the dangerous shape it names."""
    created = TeamRule(
        rule=rule, behavior=behavior, project=project, mode=mode, message=message,
        expires_at=expires_at, allows_dangerous=allows_dangerous, created_by=user,
        updated_by=user,
    )  # fmt: skip
    _rule_checked(created, now=timezone.now())
    created.save()
    team_rule_audit(AuditAction.RULE_ADDED, created, actor=user, via=via)
    return created


def team_rule_update(
    *,
    rule_id: int,
    user: AbstractBaseUser,
    via: Via | None = None,
    rule: str | None = None,
    behavior: str | None = None,
    project: str | None = None,
    mode: str | None = None,
    message: str | None = None,
    expires_at: datetime | Keep | None = KEEP,
    allows_dangerous: bool | None = None,
) -> TeamRule | None:
    """A rule edited (None: leave that field as it is); None when there is no such rule. The
    audit log says what it was and what it is. A confirmation to allow a dangerous shape does
    not outlive a change of the rule's words or a change to deny, unless given again."""
    with transaction.atomic(savepoint=False):
        found = TeamRule.objects.select_for_update().filter(pk=rule_id).first()
        if found is None:
            return None
        before = team_rule_words(found)
        rule_before, behavior_before = found.rule, found.behavior
        for name, value in (
            ("rule", rule), ("behavior", behavior), ("project", project), ("mode", mode),
            ("message", message), ("allows_dangerous", allows_dangerous),
        ):  # fmt: skip
            if value is not None:
                setattr(found, name, value)
        if not isinstance(expires_at, Keep):
            found.expires_at = expires_at
        reworded = found.rule.strip() != rule_before or found.behavior != behavior_before
        if allows_dangerous is None and reworded:
            found.allows_dangerous = False
        # An expired rule can still be edited; only a new expiry must lie ahead.
        _rule_checked(found, now=timezone.now(), new_expiry=not isinstance(expires_at, Keep))
        if team_rule_words(found) == before:
            return found
        found.updated_by = user
        found.save()
        team_rule_audit(AuditAction.RULE_CHANGED, found, actor=user, via=via, before=before)
    return found


def team_rule_activate(
    *, rule_id: int, user: AbstractBaseUser, via: Via | None = None
) -> TeamRule | None:
    """A shadow rule turned on: from now on it answers the requests it matches."""
    return team_rule_update(rule_id=rule_id, user=user, via=via, mode=RuleMode.ACTIVE)


def team_rule_remove(*, rule_id: int, user: AbstractBaseUser, via: Via | None = None) -> bool:
    """Requests it decided keep its text in their decision record."""
    found = TeamRule.objects.select_for_update().filter(pk=rule_id).first()
    if found is None:
        return False
    team_rule_audit(AuditAction.RULE_REMOVED, found, actor=user, via=via)
    found.delete()
    return True


def team_rule_words(rule: TeamRule) -> str:
    """The rule in words, through the redaction step: "allow Bash(npm test *) for project
    shop"."""
    where = f"project {rule.project}" if rule.project else "every project"
    said = [f"{rule.behavior} {rule.rule} for {where}"]
    if rule.mode == RuleMode.SHADOW:
        said.append("in shadow (deciding nothing)")
    if rule.expires_at is not None:
        said.append(f"until {rule.expires_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC")
    if rule.allows_dangerous:
        try:
            shapes = rules.named_shapes(rules.parse_rule(rule.rule))
        except ValueError:
            shapes = ()
        said.append(f"confirmed to allow {', '.join(shapes) or 'what it names'}")
    if rule.message:
        said.append(f"telling the agent: {rule.message[:200]}")
    return redact(", ".join(said))


def team_rule_audit(
    action: str, rule: TeamRule, *, actor: Any, via: Via | None, before: str = ""
) -> None:
    """A change to a team rule, for the reviewers of the project it names (the team rules
    page's, or the admin's)."""
    project = Project.objects.filter(name=rule.project).first() if rule.project else None
    summary = team_rule_words(rule)
    audit(
        action, actor=actor, via=via, project=project, about=f"rule:{rule.pk}",
        summary=f"{before} → {summary}" if before else summary,
    )  # fmt: skip
