"""What a write changed, as domain services report it to the layer above them.

Services in `todos` and `planmode` validate, store and return a `Changes`; they never render or
publish. The writer (`dashboard.core.writer`) hands the changes of each committed write to the
publisher (`dashboard.live.publisher`), which wakes waiting agents at once and re-renders
what browsers show, coalesced per short frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class StepReport:
    """One tool call of an agent as a hook reported it: its start, its end, or both (a report
    of its end alone). The app that keeps activity stores every report of a batch at once."""

    agent: int
    session: int
    tool_use_id: str
    tool_name: str
    # Already bounded and made plain text by whoever reports it.
    summary: str
    detail: str
    input_hash: str
    at: datetime
    # "running" for a start; "ok", "failed" or "denied" for an end.
    outcome: str
    error: str = ""


@dataclass
class Changes:
    # Cards to re-render: agent pk -> its session's pk.
    agents: dict[int, int] = field(default_factory=dict)
    # Cards that are new on their board, and sessions that are new on the overview.
    created_agents: set[int] = field(default_factory=set)
    created_sessions: set[int] = field(default_factory=set)
    # Session headers and overview rows to re-render (besides those of changed agents).
    sessions: set[int] = field(default_factory=set)
    # New lines of the session history.
    revisions: list[int] = field(default_factory=list)
    # Revisions whose newest list was completed in place (`todo_list_amend`): no new line of
    # history, but search reads their list again.
    amended_revisions: set[int] = field(default_factory=set)
    enforcer_events: list[int] = field(default_factory=list)
    # Plans submitted, decided, withdrawn or expired: queue, boards and review pages.
    plans: set[int] = field(default_factory=set)
    # Plans whose annotations changed: their review pages' lists.
    annotated_plans: set[int] = field(default_factory=set)
    # Plans that left pending, with the state their waiting agents are told.
    decided_plans: dict[int, dict[str, Any]] = field(default_factory=dict)
    # Continuation countdowns that ended: their held Stop hooks wake up.
    resolved_continuations: set[int] = field(default_factory=set)
    # Permission requests that arrived or were decided: the inbox and its counts.
    permission_requests: set[int] = field(default_factory=set)
    # Permission requests that left pending, with the state their held hooks are told.
    decided_permissions: dict[int, dict[str, Any]] = field(default_factory=dict)
    # Sessions whose waits on a person changed (a request arrived or was answered, a countdown
    # began or ended, an agent began or stopped waiting in its terminal): the inbox, its counts
    # and the board's banner.
    inbox_sessions: set[int] = field(default_factory=set)
    # For notifications (they re-render nothing themselves): continuation countdowns that
    # began, continuations that let an agent stop with unfinished tasks, sessions that ended.
    begun_continuations: set[int] = field(default_factory=set)
    stopped_unfinished: set[int] = field(default_factory=set)
    ended_sessions: set[int] = field(default_factory=set)
    # Tool calls that started or ended, stored once per batch (their cards re-render too), and
    # agents that stopped or took a new prompt: their steps still running were interrupted.
    steps: list[StepReport] = field(default_factory=list)
    interrupted_agents: dict[int, datetime] = field(default_factory=dict)
    # For notifications: episodes of an agent needing a look (a loop) that began.
    opened_concerns: set[int] = field(default_factory=set)
    # Agents resumed from a pause: their held tool calls run at once, in whichever process.
    resumed_agents: set[int] = field(default_factory=set)
    # Agents a message was queued for: a socket watching one pushes it (any process).
    messaged_agents: set[int] = field(default_factory=set)
    # Who sees what changed (a team's members, a project's team): every browser reconnects,
    # and on reconnecting reads what it may see now.
    audiences_changed: bool = False

    def __bool__(self) -> bool:
        return any(
            (
                self.agents,
                self.sessions,
                self.revisions,
                self.enforcer_events,
                self.plans,
                self.annotated_plans,
                self.decided_plans,
                self.resolved_continuations,
                self.permission_requests,
                self.decided_permissions,
                self.inbox_sessions,
                self.resumed_agents,
                self.messaged_agents,
                self.audiences_changed,
            )
        )

    def agent(self, agent_pk: int, session_pk: int) -> Changes:
        self.agents[agent_pk] = session_pk
        return self

    def merge(self, other: Changes | None) -> Changes:
        """Add `other` into this one (in place) and return it."""
        if other is None:
            return self
        self.agents.update(other.agents)
        self.created_agents |= other.created_agents
        self.created_sessions |= other.created_sessions
        self.sessions |= other.sessions
        self.revisions += [pk for pk in other.revisions if pk not in self.revisions]
        self.amended_revisions |= other.amended_revisions
        self.enforcer_events += [
            pk for pk in other.enforcer_events if pk not in self.enforcer_events
        ]
        self.plans |= other.plans
        self.annotated_plans |= other.annotated_plans
        self.decided_plans.update(other.decided_plans)
        self.resolved_continuations |= other.resolved_continuations
        self.permission_requests |= other.permission_requests
        self.decided_permissions.update(other.decided_permissions)
        self.inbox_sessions |= other.inbox_sessions
        self.begun_continuations |= other.begun_continuations
        self.stopped_unfinished |= other.stopped_unfinished
        self.ended_sessions |= other.ended_sessions
        self.steps += other.steps
        self.interrupted_agents.update(other.interrupted_agents)
        self.opened_concerns |= other.opened_concerns
        self.resumed_agents |= other.resumed_agents
        self.messaged_agents |= other.messaged_agents
        self.audiences_changed |= other.audiences_changed
        return self

    def step(self, report: StepReport) -> Changes:
        """Record a step, and re-render its agent's card and session row."""
        self.steps.append(report)
        return self.agent(report.agent, report.session)


@dataclass
class Outcome(Generic[T]):
    """A write's result for its caller, with what it changed for the publisher."""

    value: T
    changes: Changes = field(default_factory=Changes)
