"""Read models for the overview and the session board, each in a bounded number of queries."""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import F, Q, QuerySet
from django.utils.dateparse import parse_datetime
from django.utils.safestring import SafeString
from django.utils.text import Truncator

from dashboard.activity.selectors import (
    NowLine,
    latest_steps_by_agent,
    latest_steps_by_session,
    now_line,
)
from dashboard.board.todo_html import todo_items
from dashboard.core.keyset import Page, page_of
from dashboard.core.sql import PreparedQuery, aware, rows_in
from dashboard.core.visibility import EVERYONE, Audience
from dashboard.models import Agent, Session
from dashboard.steering.models import Pause
from dashboard.steering.selectors import AgentSteering, paused_by_session, steering_by_agent
from planmode.inbox import (
    InboxItem,
    Waiting,
    by_agent,
    waiting,
    waiting_by_agent,
    waiting_by_session,
)
from todos.models import Continuation, EnforcerEvent, Todo, TodoRevision, TodoStatus
from todos.services import FLAG_MESSAGES, progress_of

HISTORY_LENGTH = 30
OVERVIEW_LIMIT = 200
# Ended sessions the overview lists, the latest first; older ones are on the pages of ended
# sessions (`ended_sessions`), so the overview costs the same after a year.
OVERVIEW_ENDED = 50
ENDED_PAGE = 50

# What capabilities above this floor add to every session's summary, by name: each reads its
# part for many sessions in one go (session pks -> the part of each; sessions left out have
# none), and templates find it as `summary.parts.<name>` (the costs app's "usage").
SummaryPart = Callable[[list[int]], Mapping[int, object]]
SUMMARY_PARTS: dict[str, SummaryPart] = {}
# The same for every agent's card: each reads its part for many agents in one go (agent pks ->
# the part of each; agents left out have none), found as `card.parts.<name>`.
CardPart = Callable[[list[int]], Mapping[int, object]]
CARD_PARTS: dict[str, CardPart] = {}

# What one card shows of a list, so that its fragment stays small however long the list is
# (a fragment over the socket's message limit would close every board watching): at most
# CARD_ITEMS items, from a few just finished before the current one on; the others are only
# counted. Progress and counts always cover the whole list. (The card also cuts each text.)
CARD_ITEMS = 30
CARD_ITEMS_BEFORE_CURRENT = 3
# Longest text of a todo quoted in a session's activity or history line.
QUOTED_CHARS = 120
# A history line names at most this many of a write's changes and counts the rest.
HISTORY_CHANGES_NAMED = 5


@dataclass(frozen=True)
class Tally:
    """Progress as the board shows it: cancelled items leave the denominator."""

    completed: int = 0
    in_progress: int = 0
    pending: int = 0
    cancelled: int = 0

    @property
    def of(self) -> int:
        return self.completed + self.in_progress + self.pending

    @property
    def percent(self) -> int:
        return round(100 * self.completed / self.of) if self.of else 0

    @property
    def unfinished(self) -> int:
        return self.in_progress + self.pending


@dataclass(frozen=True)
class AgentCard:
    agent: Agent
    todos: list[Todo]
    tally: Tally
    flags: list[tuple[str, str]]
    all_done: bool
    countdown: Continuation | None = None
    flag_history: list[EnforcerEvent] = field(default_factory=list)
    # The part of the list the card shows, and how many items it leaves out before and after.
    shown: list[Todo] = field(default_factory=list)
    hidden_before: int = 0
    hidden_after: int = 0
    # What of this agent waits on a person (a plan, a permission request, …): the card says so.
    waits: list[InboxItem] = field(default_factory=list)
    # What it is doing this second: its running step, thinking between steps, or idle.
    now: NowLine | None = None
    # What capabilities add (`CARD_PARTS`), by name.
    parts: dict[str, object] = field(default_factory=dict)
    # Its open pause and what a lead said to it lately (`dashboard.steering`).
    steering: AgentSteering = field(default_factory=AgentSteering)

    @property
    def shown_html(self) -> SafeString:
        """The `<li>` of each item the card shows (`dashboard.board.todo_html`)."""
        return todo_items(self.shown)

    @property
    def next_pending(self) -> Todo | None:
        return next((t for t in self.todos if t.status == TodoStatus.PENDING), None)

    @property
    def current(self) -> Todo | None:
        return next((t for t in self.todos if t.status == TodoStatus.IN_PROGRESS), None)


@dataclass(frozen=True)
class SessionSummary:
    session: Session
    agent_count: int
    tally: Tally
    current_activity: str = ""
    flag_count: int = 0
    # What waits on a person in this session, oldest first (`planmode.inbox.waiting`).
    waits: list[InboxItem] = field(default_factory=list)
    # What its agents are doing this second (the latest step of any of them).
    now: NowLine | None = None
    # What capabilities add (`SUMMARY_PARTS`), by name.
    parts: dict[str, object] = field(default_factory=dict)
    # How many of its agents a lead paused, and the latest of those pauses.
    paused: int = 0
    pause: Pause | None = None

    @property
    def first_wait(self) -> InboxItem | None:
        """What the row names: what has waited longest."""
        return self.waits[0] if self.waits else None

    @property
    def only_looks(self) -> bool:
        """Nothing waits but agents that need a look (a loop, stuck, running long)."""
        return bool(self.waits) and all(item.kind == "look" for item in self.waits)

    @property
    def group(self) -> str:
        """Where the overview lists it: what waits on the lead first, ended sessions last."""
        if self.waits:
            return "waiting"
        return "active" if self.session.is_active else "ended"

    @property
    def search_text(self) -> str:
        """What the overview's filter box matches a row by, lower-cased: its project, person,
        machine, repository, title, branch and id, what it is doing and what waits in it."""
        session, owner = self.session, self.session.owner
        words = [
            session.project,
            owner.get_username(),
            owner.get_full_name(),
            session.host,
            session.repository,
            session.title,
            session.branch,
            session.session_id,
            self.current_activity,
            self.now.text if self.now else "",
            *(item.summary for item in self.waits),
        ]
        return " ".join(words).lower()

    @property
    def change_key(self) -> str:
        """What a reader would notice changing (not the clock): the row flashes when it does."""
        t = self.tally
        waits = ",".join(item.dom_id for item in self.waits)
        return (
            f"{self.group}|{waits}|{t.completed}/{t.of}|{self.current_activity}|{self.agent_count}"
            f"|{self.paused}"
        )


def card_window(todos: Sequence[Todo]) -> tuple[int, int]:
    """The slice of a list its card shows: all of a short list; of a long one CARD_ITEMS items
    starting a few before the first item in progress (else the first pending one)."""
    if len(todos) <= CARD_ITEMS:
        return 0, len(todos)
    statuses = [todo.status for todo in todos]
    if TodoStatus.IN_PROGRESS in statuses:
        focus = statuses.index(TodoStatus.IN_PROGRESS)
    elif TodoStatus.PENDING in statuses:
        focus = statuses.index(TodoStatus.PENDING)
    else:
        focus = len(todos)
    start = max(0, min(focus - CARD_ITEMS_BEFORE_CURRENT, len(todos) - CARD_ITEMS))
    return start, start + CARD_ITEMS


@dataclass
class _CardParts:
    """What a card shows besides its agent, read for many agents at once."""

    todos: list[Todo] = field(default_factory=list)
    counting: list[Continuation] = field(default_factory=list)
    recent_flags: list[EnforcerEvent] = field(default_factory=list)
    waits: list[InboxItem] = field(default_factory=list)
    now: NowLine | None = None
    added: dict[str, object] = field(default_factory=dict)
    steering: AgentSteering = field(default_factory=AgentSteering)


def _card(agent: Agent, parts: _CardParts) -> AgentCard:
    todos = parts.todos
    wire = [{"status": t.status} for t in todos]
    progress = progress_of(wire)
    all_done = not todos and agent.cleared_total > 0
    if all_done:
        tally = Tally(completed=agent.cleared_total)
    else:
        tally = Tally(
            completed=progress.completed,
            in_progress=progress.in_progress,
            pending=progress.pending,
            cancelled=progress.cancelled,
        )
    tracking = getattr(agent, "tracking", None)
    current = tracking.current_flags if tracking else []
    flags = [(flag, FLAG_MESSAGES[flag]) for flag in current if flag in FLAG_MESSAGES]
    start, end = card_window(todos)
    return AgentCard(
        agent=agent,
        todos=todos,
        tally=tally,
        flags=flags,
        all_done=all_done,
        countdown=parts.counting[0] if parts.counting else None,
        flag_history=parts.recent_flags,
        now=parts.now,
        shown=todos[start:end],
        hidden_before=start,
        hidden_after=len(todos) - end,
        waits=parts.waits,
        parts=parts.added,
        steering=parts.steering,
    )


FLAG_HISTORY_LENGTH = 5

# Cards are rendered on every live update of an agent: their reads are compiled once.
_agents = PreparedQuery(
    Agent,
    lambda pks: (
        Agent.objects.filter(pk__in=pks)
        .select_related("session", "session__owner", "tracking")
        .order_by("pk")
    ),
)
_todos = PreparedQuery(
    Todo, lambda pks: Todo.objects.filter(agent_id__in=pks).order_by("agent_id", "position")
)
_counting = PreparedQuery(
    Continuation,
    lambda pks: Continuation.objects.filter(
        agent_id__in=pks, status=Continuation.Status.COUNTING
    ).order_by("pk"),
)
_events = PreparedQuery(
    EnforcerEvent,
    lambda pks: EnforcerEvent.objects.filter(pk__in=pks).order_by("-created_at", "-pk"),
)
# The newest few flags of each agent (its kind and how many are parameters).
_RECENT_FLAGS = """
    SELECT id FROM (
        SELECT id, ROW_NUMBER() OVER (
            PARTITION BY agent_id ORDER BY created_at DESC, id DESC
        ) AS newness
        FROM todos_enforcerevent WHERE agent_id IN ({ids}) AND kind = %s
    ) ranked WHERE newness <= %s
"""


def _cards(agents: list[Agent], *, waits: Sequence[InboxItem] | None = None) -> list[AgentCard]:
    """The cards of these agents (their session and tracking rows loaded), in eight queries
    (two of them steering's), one per part a capability adds (`CARD_PARTS`), and one more per
    kind of thing that waits on a person, if any does. `waits`: what waits on a person in their
    session, already read, to take each card's from instead of asking again."""
    parts = {agent.pk: _CardParts() for agent in agents}
    pks = list(parts)
    for todo in _todos.rows(pks):
        parts[todo.agent_id].todos.append(todo)
    for continuation in _counting.rows(pks):
        parts[continuation.agent_id].counting.append(continuation)
    for agent_pk, its_waits in (
        waiting_by_agent(pks) if waits is None else by_agent(waits)
    ).items():
        parts[agent_pk].waits = its_waits
    recent = (EnforcerEvent.Kind.FLAG.value, FLAG_HISTORY_LENGTH)
    flag_pks = [pk for (pk,) in rows_in(_RECENT_FLAGS, pks, recent)] if pks else []
    for event in _events.rows(flag_pks):
        parts[event.agent_id].recent_flags.append(event)
    for name, read in CARD_PARTS.items():
        for agent_pk, part in read(pks).items():
            parts[agent_pk].added[name] = part
    for agent_pk, steering in steering_by_agent(pks).items():
        parts[agent_pk].steering = steering
    latest = latest_steps_by_agent(pks)
    for agent in agents:
        parts[agent.pk].now = now_line(
            latest.get(agent.pk),
            last_event=agent.last_seen_at,
            running=agent.status == Agent.Status.RUNNING,
            turn_ended_at=agent.turn_ended_at,
        )
    return [_card(agent, parts[agent.pk]) for agent in agents]


def board_cards(session: Session, *, waits: Sequence[InboxItem] | None = None) -> list[AgentCard]:
    """Main agent first, then subagents in start order. `waits`: what waits on a person in
    the session, if already read (the board's summary has it)."""
    agents = list(session.agents.select_related("tracking").order_by("started_at", "pk"))
    for agent in agents:
        agent.session = session
    agents.sort(key=lambda a: not a.is_main)
    return _cards(agents, waits=waits)


def agent_card(agent_pk: int) -> AgentCard:
    return agent_cards([agent_pk])[0]


def agent_cards(agent_pks: list[int]) -> list[AgentCard]:
    """The cards of these agents (of any sessions) in a fixed number of queries."""
    return _cards(_agents.rows(agent_pks))


# A session's summary is read on every live update of it: its aggregates are plain SQL.
# (The main agent is the one without a parent: its turn ended is the session's.)
_AGENT_TOTALS = """
    SELECT session_id, COUNT(*), SUM(cleared_total),
        MAX(CASE WHEN parent_id IS NULL THEN turn_ended_at END)
    FROM dashboard_agent WHERE session_id IN ({ids}) GROUP BY session_id
"""
_TODO_COUNTS = """
    SELECT a.session_id, t.status, COUNT(*) FROM todos_todo t
    JOIN dashboard_agent a ON t.agent_id = a.id
    WHERE a.session_id IN ({ids}) GROUP BY a.session_id, t.status
"""
_FLAGS = """
    SELECT a.session_id, k.current_flags FROM todos_agenttracking k
    JOIN dashboard_agent a ON k.agent_id = a.id WHERE a.session_id IN ({ids})
"""
# The main agent's current task when it has one, else the earliest subagent's.
_ACTIVITY = """
    SELECT a.session_id, a.agent_id = s.session_id, t.active_form, t.content FROM todos_todo t
    JOIN dashboard_agent a ON t.agent_id = a.id JOIN dashboard_session s ON a.session_id = s.id
    WHERE a.session_id IN ({ids}) AND t.status = 'in_progress'
    ORDER BY a.started_at, a.id, t.position
"""


def session_summaries(
    sessions: list[Session], *, waits_among: Sequence[Waiting] | None = None
) -> list[SessionSummary]:
    """One summary per session in a fixed number of queries, whatever the number of agents and
    todos. `waits_among`: everything waiting on anyone, when the caller has read it already."""
    if not sessions:
        return []
    ids = [s.pk for s in sessions]
    agent_counts: dict[int, int] = defaultdict(int)
    cleared: dict[int, int] = defaultdict(int)
    turns_ended: dict[int, datetime] = {}
    for session_pk, agents, cleared_total, turn_ended in rows_in(_AGENT_TOTALS, ids):
        agent_counts[session_pk], cleared[session_pk] = agents, cleared_total or 0
        if turn_ended is not None:
            turns_ended[session_pk] = aware(turn_ended)
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for session_pk, status, n in rows_in(_TODO_COUNTS, ids):
        counts[session_pk][status] += n
    flagged: dict[int, int] = defaultdict(int)
    for session_pk, flags in rows_in(_FLAGS, ids):
        if json.loads(flags) if isinstance(flags, str) else flags:
            flagged[session_pk] += 1
    activity: dict[int, tuple[bool, str]] = {}
    for session_pk, is_main, active_form, content in rows_in(_ACTIVITY, ids):
        known = activity.get(session_pk)
        if known is None or (is_main and not known[0]):
            text = Truncator(active_form or content).chars(QUOTED_CHARS)
            activity[session_pk] = (bool(is_main), text)
    waits = waiting_by_session(ids, among=waits_among)
    latest = latest_steps_by_session(ids)
    parts = {name: read(ids) for name, read in SUMMARY_PARTS.items()}
    paused = paused_by_session(ids)
    summaries = []
    for session in sessions:
        c = counts[session.pk]
        tally = Tally(
            completed=c["completed"] + cleared[session.pk],
            in_progress=c["in_progress"],
            pending=c["pending"],
            cancelled=c["cancelled"],
        )
        summaries.append(
            SessionSummary(
                session=session,
                agent_count=agent_counts[session.pk],
                tally=tally,
                current_activity=activity.get(session.pk, (False, ""))[1],
                flag_count=flagged[session.pk],
                waits=waits.get(session.pk, []),
                now=now_line(
                    latest.get(session.pk),
                    last_event=session.last_seen_at,
                    running=session.is_active,
                    turn_ended_at=turns_ended.get(session.pk),
                ),
                parts={
                    name: found[session.pk] for name, found in parts.items() if session.pk in found
                },
                paused=paused[session.pk][0] if session.pk in paused else 0,
                pause=paused[session.pk][1] if session.pk in paused else None,
            )
        )
    return summaries


GROUP_ORDER = {"waiting": 0, "active": 1, "ended": 2}


@dataclass(frozen=True)
class OverviewFilter:
    """What the overview shows, from its address: one kind of agent, one project, one
    person's sessions, one machine's (each empty: all)."""

    client: str = ""
    project: int | None = None
    person: str = ""
    machine: str = ""

    def sessions(self) -> QuerySet[Session]:
        chosen = Session.objects.select_related("owner")
        if self.client:
            chosen = chosen.filter(client=self.client)
        if self.project is not None:
            chosen = chosen.filter(project_record_id=self.project)
        if self.person:
            chosen = chosen.filter(owner__username=self.person)
        if self.machine:
            chosen = chosen.filter(host=self.machine)
        return chosen


def overview(
    limit: int = OVERVIEW_LIMIT,
    client: str = "",
    audience: Audience = EVERYONE,
    only: OverviewFilter | None = None,
) -> list[SessionSummary]:
    """The sessions the audience sees: what waits on them first (longest waiting first: on a
    session's reviewers and its owner, `Audience.waits_on`), then running sessions and then
    the OVERVIEW_ENDED latest ended ones, each newest activity first. A waiting session is
    listed however old it is. `client` (or `only`) keeps only the sessions of one kind of
    agent, project, person or machine."""
    chosen = (only or OverviewFilter(client=client)).sessions().filter(audience.sees())
    running = chosen.filter(ended_at__isnull=True).order_by("-last_seen_at")[:limit]
    ended = chosen.filter(ended_at__isnull=False).order_by("-last_seen_at")[:OVERVIEW_ENDED]
    sessions = [*running, *ended]
    listed = {session.pk for session in sessions}
    # What waits on anyone, read once: which sessions must be listed, and what each row says.
    waits = waiting()
    missing = sorted({wait.session_id for wait in waits} - listed)
    if missing:
        sessions += chosen.filter(pk__in=missing)
    summaries = session_summaries(sessions, waits_among=waits)

    def place(summary: SessionSummary) -> tuple:
        since = summary.first_wait.since if summary.first_wait else None
        group = summary.group
        if group == "waiting" and not audience.is_waited_on_in(summary.session):
            group, since = "active" if summary.session.is_active else "ended", None
        return (
            GROUP_ORDER[group],
            since.timestamp() if since else 0.0,
            -summary.session.last_seen_at.timestamp(),
        )

    return sorted(summaries, key=place)


GROUPINGS = ("project", "person")


@dataclass
class SessionGroup:
    """The overview's rows of one project or one person, what waits on the viewer first."""

    key: str
    name: str
    # Beside the name: the repository of a project, the user name of a person.
    detail: str = ""
    summaries: list[SessionSummary] = field(default_factory=list)
    waiting: int = 0
    running: int = 0
    ended: int = 0


def ended_sessions(
    only: OverviewFilter,
    *,
    audience: Audience,
    before: str | None = None,
    after: str | None = None,
) -> Page[Session]:
    """A page of the ended sessions the audience sees (of one kind, project, person or
    machine), the latest ended first (keyset on the end). Raises ValueError for a cursor this
    list did not hand out."""
    ended = only.sessions().filter(audience.sees(), ended_at__isnull=False)
    return page_of(ended, at="ended_at", before=before, after=after, size=ENDED_PAGE)


def overview_groups(
    summaries: list[SessionSummary], *, by: str, audience: Audience
) -> list[SessionGroup]:
    """The rows (already in the overview's order) in groups of a project or of a person: the
    groups with the most waiting on the audience first, then the busiest, then by name."""
    groups: dict[str, SessionGroup] = {}
    for summary in summaries:
        session = summary.session
        if by == "person":
            owner = session.owner
            key = f"person-{owner.pk}"
            name = owner.get_full_name() or owner.get_username()
            detail = owner.get_username() if name != owner.get_username() else ""
        else:
            key = f"project-{session.project_record_id or 'none'}"
            name = session.project if session.project_record_id else "No project yet"
            detail = session.repository
        group = groups.setdefault(key, SessionGroup(key=key, name=name, detail=detail))
        group.summaries.append(summary)
        waits_on_audience = summary.group == "waiting" and audience.is_waited_on_in(session)
        if waits_on_audience:
            group.waiting += len(summary.waits)
        if session.is_active:
            group.running += 1
        else:
            group.ended += 1
    return sorted(
        groups.values(), key=lambda group: (-group.waiting, -group.running, group.name.lower())
    )


def session_summary(session_pk: int) -> SessionSummary:
    return session_summaries_by_pk([session_pk])[0]


_sessions = PreparedQuery(
    Session, lambda pks: Session.objects.select_related("owner").filter(pk__in=pks)
)


def session_summaries_by_pk(session_pks: list[int]) -> list[SessionSummary]:
    return session_summaries(_sessions.rows(session_pks))


@dataclass(frozen=True)
class HistoryEntry:
    """One line of a session's history: a todo write, or something the enforcer did."""

    dom_id: str
    at: datetime
    agent: Agent
    text: str
    meta: str
    kind: str = "revision"


def _quoted(content: str) -> str:
    return f"“{Truncator(content).chars(QUOTED_CHARS)}”"


def describe_revision(old: list[dict], new: list[dict]) -> list[str]:
    """Short sentences for what a write changed, e.g. 'completed “Run tests”'; a write that
    changes many items names the first few and counts the others."""
    before = {item["content"]: item["status"] for item in old}
    changes = []
    verbs = {
        "completed": "completed",
        "in_progress": "started",
        "cancelled": "cancelled",
        "pending": "reopened",
    }
    added = 0
    for item in new:
        previous = before.get(item["content"])
        if previous is None:
            added += 1
        elif previous != item["status"]:
            changes.append(f"{verbs[item['status']]} {_quoted(item['content'])}")
    if len(changes) > HISTORY_CHANGES_NAMED:
        more = len(changes) - HISTORY_CHANGES_NAMED + 1
        changes = [*changes[: HISTORY_CHANGES_NAMED - 1], f"changed {more} more items"]
    if added and not old:
        changes.insert(0, f"wrote a list of {added} item{'s' if added != 1 else ''}")
    elif added:
        changes.append(f"added {added} item{'s' if added != 1 else ''}")
    removed = len(set(before) - {item["content"] for item in new})
    if removed and new:
        changes.append(f"removed {removed} item{'s' if removed != 1 else ''}")
    if not new:
        changes.append("cleared the list")
    if new and all(item["status"] == "completed" for item in new):
        changes.append("all done")
    return changes or ["rewrote the list unchanged"]


def history_entry(revision: TodoRevision) -> HistoryEntry:
    source = revision.get_source_display()
    if revision.source == TodoRevision.Source.HOOK:
        # Hooks of any agent: named by the session's client (loaded with the revision).
        source = f"{revision.agent.session.get_client_display()} hook"
    return HistoryEntry(
        dom_id=f"revision-{revision.pk}",
        at=revision.received_at,
        agent=revision.agent,
        text="; ".join(describe_revision(revision.old_todos, revision.new_todos)),
        meta=f"rev {revision.number} · {source}",
    )


def enforcer_history_entry(event: EnforcerEvent) -> HistoryEntry:
    return HistoryEntry(
        dom_id=f"enforcer-{event.pk}",
        at=event.created_at,
        agent=event.agent,
        text=event.text,
        meta=event.get_kind_display(),
        kind=event.kind,
    )


_revisions = PreparedQuery(
    TodoRevision,
    lambda pks: TodoRevision.objects.filter(pk__in=pks).select_related("agent", "agent__session"),
)
_history_events = PreparedQuery(
    EnforcerEvent,
    lambda pks: EnforcerEvent.objects.filter(pk__in=pks).select_related("agent", "agent__session"),
)


def history_entries(*, revision_pks: list[int], event_pks: list[int]) -> list[HistoryEntry]:
    """History lines for these todo revisions and enforcer events, in two queries at most."""
    return [history_entry(revision) for revision in _revisions.rows(revision_pks)] + [
        enforcer_history_entry(event) for event in _history_events.rows(event_pks)
    ]


def session_history(session: Session, limit: int = HISTORY_LENGTH) -> list[HistoryEntry]:
    """The newest writes and enforcer actions of a session, newest first."""
    revisions = (
        TodoRevision.objects.filter(agent__session=session)
        .select_related("agent", "agent__session")
        .order_by("-received_at", "-pk")[:limit]
    )
    events = (
        EnforcerEvent.objects.filter(agent__session=session)
        .select_related("agent", "agent__session")
        .order_by("-created_at", "-pk")[:limit]
    )
    entries = [history_entry(r) for r in revisions] + [enforcer_history_entry(e) for e in events]
    entries.sort(key=lambda entry: entry.at, reverse=True)
    return entries[:limit]


@dataclass(frozen=True)
class HistoryPage:
    """A page of a session's history, newest first, with the cursors of the pages beside it
    (None at either end)."""

    entries: list[HistoryEntry]
    older: str | None
    newer: str | None

    @property
    def first(self) -> bool:
        return self.newer is None


# A history line's place, newest first: its time, then its source (a todo write before an
# enforcer line of the same moment), then its row's id.
HistoryKey = tuple[datetime, int, int]
_REVISION, _ENFORCER = 1, 0


def _history_cursor(key: HistoryKey) -> str:
    raw = f"{key[0].isoformat()}|{key[1]}|{key[2]}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _history_key(cursor: str) -> HistoryKey:
    """Raises ValueError for a cursor this list did not hand out."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        moment, rank, pk = raw.split("|")
        at = parse_datetime(moment)
        if at is None or rank not in {"0", "1"} or not pk.isdigit():
            raise ValueError
        return at, int(rank), int(pk)
    except (ValueError, UnicodeDecodeError):
        raise ValueError("not a cursor of this list") from None


def _beyond(column: str, rank: int, key: HistoryKey, *, older: bool) -> Q:
    """The rows of one source (all of one rank) past `key`, older or newer."""
    at, key_rank, pk = key
    past = "lt" if older else "gt"
    if rank == key_rank:
        return Q(**{f"{column}__{past}": at}) | Q(**{column: at, f"pk__{past}": pk})
    # Another source's rows at the same moment are past the key when their rank is.
    past_at_same_time = rank < key_rank if older else rank > key_rank
    return Q(**{f"{column}__{past}{'e' if past_at_same_time else ''}": at})


def session_history_page(
    session: Session,
    *,
    before: str | None = None,
    after: str | None = None,
    size: int = HISTORY_LENGTH,
) -> HistoryPage:
    """A page of the session's todo writes and enforcer actions, newest first, by keyset: the
    newest, those older than the cursor `before`, or those newer than `after`. Two queries,
    however long the history. Raises ValueError for a cursor this list did not hand out."""
    cursor = _history_key(after or before or "") if (after or before) else None
    older = after is None
    sources = (
        (TodoRevision.objects.filter(agent__session=session), "received_at", _REVISION,
         history_entry),
        (EnforcerEvent.objects.filter(agent__session=session), "created_at", _ENFORCER,
         enforcer_history_entry),
    )  # fmt: skip
    found: list[tuple[HistoryKey, HistoryEntry]] = []
    for rows, column, rank, make in sources:
        if cursor is not None:
            rows = rows.filter(_beyond(column, rank, cursor, older=older))
        elif rank == _REVISION:
            # The newest page: only each agent's latest writes can be on it (numbers follow
            # time per agent), read on the (agent, number) index, not every write of a year.
            rows = rows.filter(number__gt=F("agent__todo_revision") - (size + 1))
        order = (f"-{column}", "-pk") if older else (column, "pk")
        for row in rows.select_related("agent", "agent__session").order_by(*order)[: size + 1]:
            found.append(((getattr(row, column), rank, row.pk), make(row)))
    found.sort(key=lambda pair: pair[0], reverse=older)
    more = len(found) > size
    chosen = found[:size]
    if not older:
        if not chosen:
            return session_history_page(session, size=size)
        chosen.reverse()
    entries = [entry for _, entry in chosen]
    if not chosen:
        return HistoryPage(entries, None, None)
    first, last = _history_cursor(chosen[0][0]), _history_cursor(chosen[-1][0])
    if older:
        return HistoryPage(entries, last if more else None, first if before else None)
    return HistoryPage(entries, last, first if more else None)
