"""Read models for the inbox: everything waiting on a person, across all sessions one sees.

Plans waiting for review, permission requests, running continuation countdowns and agents
waiting for input in their own terminal, oldest first. A reviewer sees every session; anyone
else only the sessions their own tokens report (`audience`: None, or that user's pk).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q

from dashboard.models import Agent, Session
from planmode import rules
from planmode.models import (
    PermissionRequest,
    Plan,
    PlanStatus,
    RequestStatus,
    TeamRule,
    TerminalWait,
)
from planmode.permissions import visible_sessions
from planmode.tool_display import RequestView, describe, describe_suggestion
from todos.models import Continuation

RECENT_DECIDED = 20
NOTIFICATION_WORDS = {
    "idle_prompt": "waiting for your input in its terminal",
    "permission_prompt": "waiting for a permission answer in its terminal",
    "elicitation_dialog": "waiting for an answer to a question in its terminal",
}


@dataclass(frozen=True)
class Suggestion:
    value: str  # "suggestion:N"
    text: str


@dataclass
class InboxItem:
    kind: str  # "plan", "permission", "countdown" or "terminal"
    pk: int
    since: datetime
    session: Session
    agent: Agent
    plan: Plan | None = None
    request: PermissionRequest | None = None
    view: RequestView | None = None
    countdown: Continuation | None = None
    wait: TerminalWait | None = None
    identical: int = 1  # pending requests with the same tool and input, this one included
    suggestions: tuple[Suggestion, ...] = ()
    pattern: str = ""  # the editable "always allow" pattern, this request and no wider

    @property
    def dom_id(self) -> str:
        return f"inbox-{self.kind}-{self.pk}"

    @property
    def terminal_words(self) -> str:
        assert self.wait is not None
        return NOTIFICATION_WORDS.get(
            self.wait.notification_type, "waiting for its developer in its terminal"
        )


@dataclass(frozen=True)
class InboxCount:
    plans: int = 0
    permissions: int = 0
    countdowns: int = 0
    terminals: int = 0

    @property
    def total(self) -> int:
        return self.plans + self.permissions + self.countdowns + self.terminals

    @property
    def label(self) -> str:
        """The header's words: as before for plans alone, else everything together."""
        if self.total == self.plans:
            return f"{self.plans} plan{'' if self.plans == 1 else 's'} waiting"
        return f"{self.total} waiting on you"

    @property
    def parts(self) -> str:
        named = [
            (self.plans, "plan", "plans"),
            (self.permissions, "permission request", "permission requests"),
            (self.countdowns, "countdown", "countdowns"),
            (self.terminals, "agent waiting in its terminal", "agents waiting in their terminal"),
        ]
        return ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in named if n)


def _pending_plans(audience: int | None):
    return Plan.objects.filter(visible_sessions(audience), status=PlanStatus.PENDING)


def _pending_requests(audience: int | None):
    return PermissionRequest.objects.filter(
        visible_sessions(audience), status=RequestStatus.PENDING
    )


def _countdowns(audience: int | None):
    return Continuation.objects.filter(
        Q() if audience is None else Q(agent__session__owner_id=audience),
        status=Continuation.Status.COUNTING,
    )


def _terminal_waits(audience: int | None):
    """Open terminal waits, except of agents whose plan or request already shows: Claude Code
    notifies about the very prompt that the held hook put on the board."""
    waits = TerminalWait.objects.filter(
        Q() if audience is None else Q(agent__session__owner_id=audience),
        ended_at__isnull=True,
        agent__session__ended_at__isnull=True,
    )
    return waits.exclude(agent__plans__status=PlanStatus.PENDING).exclude(
        agent__permission_requests__status=RequestStatus.PENDING
    )


def inbox_count(audience: int | None) -> InboxCount:
    return InboxCount(
        plans=_pending_plans(audience).count(),
        permissions=_pending_requests(audience).count(),
        countdowns=_countdowns(audience).count(),
        terminals=_terminal_waits(audience).distinct().count(),
    )


def inbox_items(audience: int | None) -> list[InboxItem]:
    """Oldest first: whoever has waited longest is served first."""
    related = ("session", "session__owner", "agent", "agent__session")
    items = [
        InboxItem("plan", plan.pk, plan.submitted_at, plan.session, plan.agent, plan=plan)
        for plan in _pending_plans(audience).select_related(*related)
    ]
    requests = list(_pending_requests(audience).select_related(*related))
    identical = Counter(request.input_key for request in requests)
    items += [_request_item(request, identical[request.input_key]) for request in requests]
    agent_related = ("agent", "agent__session", "agent__session__owner")
    items += [
        InboxItem(
            "countdown",
            countdown.pk,
            countdown.created_at,
            countdown.agent.session,
            countdown.agent,
            countdown=countdown,
        )
        for countdown in _countdowns(audience).select_related(*agent_related)
    ]
    items += [
        InboxItem("terminal", wait.pk, wait.since, wait.agent.session, wait.agent, wait=wait)
        for wait in _terminal_waits(audience).select_related(*agent_related).distinct()
    ]
    return sorted(items, key=lambda item: (item.since, item.kind, item.pk))


def _request_item(request: PermissionRequest, identical: int = 1) -> InboxItem:
    suggestions = tuple(
        Suggestion(f"suggestion:{index}", text)
        for index, suggestion in enumerate(request.suggestions or [])
        if (text := describe_suggestion(suggestion))
    )
    return InboxItem(
        "permission",
        request.pk,
        request.requested_at,
        request.session,
        request.agent,
        request=request,
        view=describe(request.tool_name, request.tool_input),
        identical=identical,
        suggestions=suggestions,
        pattern=rules.suggested_content(request.tool_name, request.tool_input),
    )


def request_item(request_id: int, audience: int | None) -> InboxItem | None:
    """One request as the inbox shows it (decided or not), if the audience may see it."""
    request = (
        PermissionRequest.objects.filter(visible_sessions(audience), pk=request_id)
        .select_related("session", "session__owner", "agent", "agent__session", "decided_by")
        .select_related("rule", "decision")
        .first()
    )
    return _request_item(request) if request is not None else None


@dataclass(frozen=True)
class DecidedRequest:
    request: PermissionRequest
    view: RequestView

    @property
    def by(self) -> str:
        request = self.request
        if request.decided_by is not None:
            return f"by {request.decided_by.get_username()}"
        record = getattr(request, "decision", None)
        if record is not None and record.rule_text:
            return f"by the team rule {record.rule_text}"
        if request.status == RequestStatus.ANSWERED_IN_TERMINAL:
            return "in the agent's terminal"
        if request.status == RequestStatus.EXPIRED and request.end_reason:
            return f"{request.end_reason}; the terminal asked"
        if request.status == RequestStatus.EXPIRED and self.closed_by_the_agent:
            return "by the agent before anyone decided"
        if request.status == RequestStatus.EXPIRED:
            return "as nobody decided in time; the terminal asked"
        return ""

    @property
    def outcome(self) -> str:
        """The status word the row leads with."""
        if self.closed_by_the_agent:
            return "Closed"
        return self.request.get_status_display().capitalize()

    @property
    def closed_by_the_agent(self) -> bool:
        """Whether the agent let go of its held hook well before the hold ran out: nobody here
        was too slow, the agent went on."""
        request = self.request
        if request.status != RequestStatus.EXPIRED or request.end_reason:
            return False
        if request.held_until is None or request.decided_at is None:
            return False
        return request.decided_at < request.held_until - timedelta(seconds=2)


def recently_decided(audience: int | None, limit: int = RECENT_DECIDED) -> list[DecidedRequest]:
    requests = (
        PermissionRequest.objects.filter(visible_sessions(audience))
        .exclude(status=RequestStatus.PENDING)
        .select_related("session", "agent", "agent__session", "decided_by", "decision")
        .order_by("-decided_at", "-pk")[:limit]
    )
    return [DecidedRequest(r, describe(r.tool_name, r.tool_input)) for r in requests]


def inbox_context(audience: int | None, **extra: Any) -> dict[str, Any]:
    items = inbox_items(audience)
    return {
        "items": items,
        "count": InboxCount(
            plans=sum(1 for i in items if i.kind == "plan"),
            permissions=sum(1 for i in items if i.kind == "permission"),
            countdowns=sum(1 for i in items if i.kind == "countdown"),
            terminals=sum(1 for i in items if i.kind == "terminal"),
        ),
        "decided": recently_decided(audience),
        "can_steer": audience is None,
        **extra,
    }


def team_rules() -> list[TeamRule]:
    return list(TeamRule.objects.select_related("created_by"))
