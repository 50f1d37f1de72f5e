"""Read models for the inbox: everything waiting on a person, across all sessions one sees.

Plans waiting for review, permission requests, running continuation countdowns and agents
waiting for input in their own terminal, oldest first. What waits on whom is the one rule of
`dashboard.core.visibility` (`Audience.waits_on`): a session's reviewers, and its owner.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import F, QuerySet, Value

from dashboard.activity.models import Concern, ConcernKind
from dashboard.core.keyset import Page, page_of
from dashboard.core.sql import PreparedRows
from dashboard.core.visibility import EVERYONE, Audience
from dashboard.models import Agent, Session
from planmode import rules
from planmode.models import (
    PermissionRequest,
    Plan,
    PlanStatus,
    RequestStatus,
    TerminalWait,
)
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
    kind: str  # "plan", "permission", "countdown", "terminal" or "look"
    pk: int
    since: datetime
    session: Session
    agent: Agent
    plan: Plan | None = None
    request: PermissionRequest | None = None
    view: RequestView | None = None
    countdown: Continuation | None = None
    wait: TerminalWait | None = None
    concern: Concern | None = None
    identical: int = 1  # pending requests with the same tool and input, this one included
    suggestions: tuple[Suggestion, ...] = ()
    pattern: str = ""  # the editable "always allow" pattern, this request and no wider

    @property
    def staged(self) -> dict[str, Any] | None:
        """The decision made but not sent yet (the undo window), if any."""
        row = self.plan or self.request
        return row.staged_answer if row is not None and row.is_staged else None

    @property
    def sends_at(self) -> datetime | None:
        row = self.plan or self.request
        return row.sends_at if row is not None else None

    @property
    def dom_id(self) -> str:
        return f"inbox-{self.kind}-{self.pk}"

    @property
    def what(self) -> str:
        """What waits, in a word or two, as a row leads with it: "Plan", "Bash", "MCP …"."""
        if self.kind == "permission":
            assert self.view is not None
            return self.view.tool
        if self.kind == "look":
            assert self.concern is not None
            return CONCERN_WORDS[self.concern.kind]
        return {"plan": "Plan", "countdown": "Continuation", "terminal": "Terminal"}[self.kind]

    @property
    def summary(self) -> str:
        """The plain text that says what the person is asked: the plan's title, the command."""
        if self.kind == "plan":
            assert self.plan is not None
            return self.plan.title
        if self.kind == "permission":
            assert self.view is not None
            return self.view.headline
        if self.kind == "countdown":
            assert self.countdown is not None
            left = self.countdown.unfinished
            return f"{left} task{'' if left == 1 else 's'} left"
        if self.kind == "look":
            assert self.concern is not None
            return self.concern.detail
        return self.terminal_words

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
    looks: int = 0

    @property
    def total(self) -> int:
        return self.plans + self.permissions + self.countdowns + self.terminals + self.looks

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
            (self.looks, "agent needs a look", "agents need a look"),
        ]
        return ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in named if n)


def _pending_plans(audience: Audience):
    """Plans waiting for a decision; one decided and about to be sent (undo window) is not."""
    return Plan.objects.filter(
        audience.waits_on("session__"), status=PlanStatus.PENDING, sends_at__isnull=True
    )


def _pending_requests(audience: Audience):
    """Requests waiting for an answer; one answered and about to be sent is not."""
    return PermissionRequest.objects.filter(
        audience.waits_on("session__"), status=RequestStatus.PENDING, sends_at__isnull=True
    )


def _staged_plans(audience: Audience):
    return Plan.objects.filter(
        audience.waits_on("session__"), status=PlanStatus.PENDING, sends_at__isnull=False
    )


def _staged_requests(audience: Audience):
    return PermissionRequest.objects.filter(
        audience.waits_on("session__"), status=RequestStatus.PENDING, sends_at__isnull=False
    )


def _countdowns(audience: Audience):
    return Continuation.objects.filter(
        audience.waits_on("agent__session__"),
        status=Continuation.Status.COUNTING,
    )


def _terminal_waits(audience: Audience):
    """Open terminal waits, except of agents whose plan or request already shows: Claude Code
    notifies about the very prompt that the held hook put on the board."""
    waits = TerminalWait.objects.filter(
        audience.waits_on("agent__session__"),
        ended_at__isnull=True,
        agent__session__ended_at__isnull=True,
    )
    return waits.exclude(agent__plans__status=PlanStatus.PENDING).exclude(
        agent__permission_requests__status=RequestStatus.PENDING
    )


def _concerns(audience: Audience):
    """Open episodes of agents that need a look (stuck, looping), in running sessions."""
    return Concern.objects.filter(
        audience.waits_on("session__"),
        ended_at__isnull=True,
        session__ended_at__isnull=True,
    )


CONCERN_WORDS = {
    ConcernKind.LOOPING: "Looping",
    ConcernKind.STUCK: "Stuck",
    ConcernKind.OVERLONG: "Running long",
    ConcernKind.BUDGET_WARNING: "Budget 80% spent",
    ConcernKind.OVER_BUDGET: "Over budget",
}


# --- the one definition of "waiting on a person" ------------------------------------------------
#
# Every surface that says what waits (the header count and the tab title, the overview's pinned
# rows and its filter, the board's banner, the agent's card, the inbox, notifications) reads it
# from `waiting()`: one query, whichever kinds there are. A new kind of waiting is added there.

KINDS = ("plan", "permission", "countdown", "terminal", "look")


@dataclass(frozen=True)
class Waiting:
    """One thing that waits on a person, as the one query finds it (nothing loaded)."""

    kind: str  # one of KINDS
    pk: int
    since: datetime
    session_id: int
    agent_id: int


def _as_waiting(queryset: QuerySet, kind: str, since: str, session: str) -> QuerySet:
    return (
        queryset.order_by()
        .annotate(w_kind=Value(kind), w_since=F(since), w_session=F(session), w_agent=F("agent_id"))
        .values_list("w_kind", "pk", "w_since", "w_session", "w_agent")
    )


def _sources(audience: Audience) -> list[QuerySet]:
    return [
        _as_waiting(_pending_plans(audience), "plan", "submitted_at", "session_id"),
        _as_waiting(_pending_requests(audience), "permission", "requested_at", "session_id"),
        _as_waiting(_countdowns(audience), "countdown", "created_at", "agent__session_id"),
        _as_waiting(_terminal_waits(audience), "terminal", "since", "agent__session_id"),
        _as_waiting(_concerns(audience), "look", "since", "session_id"),
    ]


def waiting(
    audience: Audience = EVERYONE,
    *,
    sessions: Sequence[int] | None = None,
    agents: Sequence[int] | None = None,
) -> list[Waiting]:
    """Everything waiting on the audience (EVERYONE: on anyone at all), oldest first; only in these
    sessions, or of these agents, when given. One query."""
    if (sessions is not None and not sessions) or (agents is not None and not agents):
        return []
    if sessions is not None and agents is not None:  # no caller asks both: run as it is
        rows = _union(audience, {"sessions": list(sessions), "agents": list(agents)})
    else:
        by = "sessions" if sessions is not None else "agents" if agents is not None else None
        ids = sessions if sessions is not None else agents
        rows = _waiting_rows.rows((audience, by), None if ids is None else sorted(set(ids)))
    found = [Waiting(*row) for row in rows]
    return sorted(found, key=lambda w: (w.since, KINDS.index(w.kind), w.pk))


# What `waiting()` may be narrowed to: the column each kind of id is matched on.
_NARROWED_BY = {"sessions": "w_session__in", "agents": "agent_id__in"}


def _union(audience: Audience, narrowed: dict[str, list[int]]) -> QuerySet:
    """The one query: each kind's waits, narrowed to these sessions or agents when given."""
    condition = {_NARROWED_BY[by]: ids for by, ids in narrowed.items()}
    parts = [source.filter(**condition) for source in _sources(audience)]
    return parts[0].union(*parts[1:], all=True)


def _union_of(key: tuple[Audience, str | None], ids: list[int] | None) -> QuerySet:
    audience, by = key
    return _union(audience, {} if by is None else {by: ids or []})


# The header asks `waiting()` on every page and the overview again: building and compiling the
# five-way union cost more than PostgreSQL or SQLite take to answer it (5 to 8 ms a call on the
# year), so it is compiled once per viewer (and per number of sessions or agents asked about).
_waiting_rows = PreparedRows(_union_of)


def count_of(waits: Sequence[Waiting]) -> InboxCount:
    kinds = Counter(w.kind for w in waits)
    return InboxCount(
        plans=kinds["plan"],
        permissions=kinds["permission"],
        countdowns=kinds["countdown"],
        terminals=kinds["terminal"],
        looks=kinds["look"],
    )


def inbox_count(audience: Audience) -> InboxCount:
    return count_of(waiting(audience))


def inbox_items(audience: Audience) -> list[InboxItem]:
    """Oldest first: whoever has waited longest is served first, after what the viewer is
    asked first about (the projects that name them as reviewers); decisions in their undo
    window are listed too, where they waited."""
    items = items_of(waiting(audience)) + _staged_items(audience)

    def asked_first(item: InboxItem) -> bool:
        """A plan or request of a project that names the viewer as its reviewer comes first."""
        return item.kind in {"plan", "permission"} and (
            item.session.project_record_id in audience.named
        )

    return sorted(
        items,
        key=lambda item: (not asked_first(item), item.since, KINDS.index(item.kind), item.pk),
    )


_RELATED = ("session", "session__owner", "agent", "agent__session")
_AGENT_RELATED = ("agent", "agent__session", "agent__session__owner")


def items_of(waits: Sequence[Waiting]) -> list[InboxItem]:
    """What `waits` are, loaded for a page (at most one query per kind present), in their order.
    A thing that stopped waiting between the two reads is left out."""
    pks: dict[str, list[int]] = {kind: [] for kind in KINDS}
    for wait in waits:
        pks[wait.kind].append(wait.pk)
    plans = _load(Plan.objects.select_related(*_RELATED), pks["plan"])
    requests = _load(PermissionRequest.objects.select_related(*_RELATED), pks["permission"])
    countdowns = _load(Continuation.objects.select_related(*_AGENT_RELATED), pks["countdown"])
    terminals = _load(TerminalWait.objects.select_related(*_AGENT_RELATED), pks["terminal"])
    concerns = _load(Concern.objects.select_related(*_RELATED), pks["look"])
    identical = Counter(request.input_key for request in requests.values())
    items = []
    for wait in waits:
        if (plan := plans.get(wait.pk)) and wait.kind == "plan":
            items.append(
                InboxItem("plan", plan.pk, wait.since, plan.session, plan.agent, plan=plan)
            )
        elif (request := requests.get(wait.pk)) and wait.kind == "permission":
            items.append(_request_item(request, identical[request.input_key]))
        elif (countdown := countdowns.get(wait.pk)) and wait.kind == "countdown":
            agent = countdown.agent
            items.append(
                InboxItem(
                    "countdown", wait.pk, wait.since, agent.session, agent, countdown=countdown
                )
            )
        elif (terminal := terminals.get(wait.pk)) and wait.kind == "terminal":
            agent = terminal.agent
            items.append(
                InboxItem("terminal", wait.pk, wait.since, agent.session, agent, wait=terminal)
            )
        elif (concern := concerns.get(wait.pk)) and wait.kind == "look":
            items.append(
                InboxItem(
                    "look", wait.pk, wait.since, concern.session, concern.agent, concern=concern
                )
            )
    return items


def _load(queryset: QuerySet, pks: list[int]) -> dict[int, Any]:
    return {row.pk: row for row in queryset.filter(pk__in=pks)} if pks else {}


def waiting_by_session(
    session_pks: Sequence[int], *, among: Sequence[Waiting] | None = None
) -> dict[int, list[InboxItem]]:
    """What waits on a person in each of these sessions (on any reviewer: a board and an
    overview row show everything of their session), oldest first. `among`: everything that
    waits on anyone, already read (`waiting()`), to take them from instead of asking again."""
    if among is None:
        waits = waiting(sessions=session_pks)
    else:
        wanted = set(session_pks)
        waits = [wait for wait in among if wait.session_id in wanted]
    found: dict[int, list[InboxItem]] = {}
    for item in items_of(waits):
        found.setdefault(item.session.pk, []).append(item)
    return found


def waiting_by_agent(agent_pks: Sequence[int]) -> dict[int, list[InboxItem]]:
    return by_agent(items_of(waiting(agents=agent_pks)))


def by_agent(items: Iterable[InboxItem]) -> dict[int, list[InboxItem]]:
    """The items of each agent, in their order."""
    found: dict[int, list[InboxItem]] = {}
    for item in items:
        found.setdefault(item.agent.pk, []).append(item)
    return found


def staged_in_session(session_pk: int) -> list[InboxItem]:
    """The session's decisions in their undo window: its board shows them with an Undo."""
    items = [
        InboxItem("plan", plan.pk, plan.submitted_at, plan.session, plan.agent, plan=plan)
        for plan in _staged_plans(EVERYONE).filter(session_id=session_pk).select_related(*_RELATED)
    ]
    requests = _staged_requests(EVERYONE).filter(session_id=session_pk).select_related(*_RELATED)
    return items + [_request_item(request) for request in requests]


def _staged_items(audience: Audience) -> list[InboxItem]:
    """Decided, not sent yet (the undo window): shown where they waited, with an Undo, but
    not waiting on anyone."""
    items = [
        InboxItem("plan", plan.pk, plan.submitted_at, plan.session, plan.agent, plan=plan)
        for plan in _staged_plans(audience).select_related(*_RELATED)
    ]
    items += [
        _request_item(request) for request in _staged_requests(audience).select_related(*_RELATED)
    ]
    return items


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


def request_item(request_id: int, audience: Audience) -> InboxItem | None:
    """One request as the inbox shows it (decided or not), if the audience may see it."""
    request = (
        PermissionRequest.objects.filter(audience.waits_on("session__"), pk=request_id)
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


def _decided(audience: Audience) -> QuerySet[PermissionRequest]:
    return (
        PermissionRequest.objects.filter(audience.waits_on("session__"))
        .exclude(status=RequestStatus.PENDING)
        .select_related("session", "agent", "agent__session", "decided_by", "decision")
    )


def recently_decided(audience: Audience, limit: int = RECENT_DECIDED) -> list[DecidedRequest]:
    requests = _decided(audience).order_by("-decided_at", "-pk")[:limit]
    return [DecidedRequest(r, describe(r.tool_name, r.tool_input)) for r in requests]


def decided_requests(
    audience: Audience, *, before: str | None = None, after: str | None = None
) -> Page[DecidedRequest]:
    """A page of the requests decided that the audience sees, the latest decision first
    (keyset on its time). Raises ValueError for a cursor this list did not hand out."""
    found = page_of(
        _decided(audience).filter(decided_at__isnull=False),
        at="decided_at",
        before=before,
        after=after,
    )
    rows = [DecidedRequest(r, describe(r.tool_name, r.tool_input)) for r in found.rows]
    return Page(rows, found.older, found.newer)


def inbox_context(audience: Audience, **extra: Any) -> dict[str, Any]:
    items = inbox_items(audience)
    return {
        "items": items,
        "count": count_of([item for item in items if not item.staged]),
        "staged_count": sum(1 for item in items if item.staged),
        "decided": recently_decided(audience),
        "can_steer": audience.reviews_anything,
        **extra,
    }
