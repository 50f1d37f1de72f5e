"""Reads of activity: what each agent (and each session) is doing now, and a session's steps."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from dashboard.activity.models import Step, StepOutcome
from dashboard.activity.summaries import tool_kind
from dashboard.core.sql import PreparedQuery
from dashboard.models import Agent, Session

# No event for this long and an agent is idle, no longer thinking between two steps.
IDLE_AFTER = timedelta(minutes=5)
PAGE_SIZE = 100
MAX_PAGE_SIZE = 500

# A page's cursor: its last step's start in microseconds since 1970 and its id, so that any
# text the pattern matches is a place in the list and the API's schema says exactly that.
CURSOR_PATTERN = r"^-?[0-9]{1,17}\.[0-9]{1,18}$"
CURSOR_MAX_LENGTH = 37
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
CURSOR_MIN_MICROS = (datetime.min.replace(tzinfo=UTC) - EPOCH) // MICROSECOND
CURSOR_MAX_MICROS = (datetime.max.replace(tzinfo=UTC) - EPOCH) // MICROSECOND

VERBS = {
    "bash": "Running",
    "edit": "Editing",
    "multiedit": "Editing",
    "notebookedit": "Editing",
    "write": "Writing",
    "read": "Reading",
    "grep": "Searching",
    "glob": "Finding",
    "webfetch": "Fetching",
    "websearch": "Searching the web for",
    "task": "Delegating",
    "agent": "Delegating",
    "todowrite": "Updating its todo list",
    "update_plan": "Updating its plan",
}


@dataclass(frozen=True)
class NowLine:
    """The activity line of a card or row: a step running, thinking between steps, or idle."""

    state: str  # "running", "thinking" or "idle"
    since: datetime
    verb: str = ""
    subject: str = ""
    detail: str = ""
    # When a line that reads "thinking" turns into "idle" unless something happens first.
    idle_at: datetime | None = None
    # Idle because its turn ended (`since` is then that moment), not for want of news.
    turn_ended: bool = False

    # What the line shows, made here once rather than by template filters: a board re-renders
    # every card of a busy session many times a second.
    @property
    def since_iso(self) -> str:
        return self.since.isoformat()

    @property
    def since_title(self) -> str:
        words = "Its turn ended" if self.turn_ended else "Since"
        return f"{words} {timezone.localtime(self.since):%Y-%m-%d %H:%M:%S %Z}"

    @property
    def idle_at_iso(self) -> str:
        return self.idle_at.isoformat() if self.idle_at else ""

    @property
    def elapsed(self) -> str:
        """ "12 s", "4 min", "2 h" (as the browser ticks it on)."""
        seconds = max(0, round((timezone.now() - self.since).total_seconds()))
        if seconds < 60:
            return f"{seconds} s"
        minutes = round(seconds / 60)
        if minutes < 60:
            return f"{minutes} min"
        hours = round(minutes / 60)
        return f"{hours} h" if hours < 48 else f"{round(hours / 24)} days"

    @property
    def subject_short(self) -> str:
        return self.subject if len(self.subject) <= 120 else self.subject[:119] + "…"

    @property
    def text(self) -> str:
        """The line as plain words (the overview's filter searches it)."""
        if self.state != "running":
            return "Thinking" if self.state == "thinking" else "Idle"
        return f"{self.verb} {self.subject}".strip()


def step_verb(tool_name: str) -> str:
    if tool_name.startswith("mcp__"):
        return "Calling"
    return VERBS.get(tool_kind(tool_name), f"Using {tool_name}")


def now_line(
    step: Step | None,
    *,
    last_event: datetime,
    running: bool,
    turn_ended_at: datetime | None = None,
    now: datetime | None = None,
) -> NowLine | None:
    """What the agent (or session) whose latest step is `step` is doing at `now`. None once it
    stopped, or before its first step unless its turn ended (an idle teammate).

    Between two steps it is thinking, since the later of the step's end and its last event (a
    new prompt); idle once its turn ended (`turn_ended_at`, unless a step ended since: a new
    turn), or after IDLE_AFTER without news."""
    if not running or (step is None and turn_ended_at is None):
        return None
    if step is None:
        return NowLine(state="idle", since=turn_ended_at, turn_ended=True)
    now = now or timezone.now()
    if step.outcome == StepOutcome.RUNNING:
        return NowLine(
            state="running",
            since=step.started_at,
            verb=step_verb(step.tool_name),
            subject=step.summary,
            detail=step.detail,
        )
    ended = step.ended_at or step.started_at
    if turn_ended_at is not None and turn_ended_at >= ended:
        return NowLine(state="idle", since=turn_ended_at, turn_ended=True)
    last = max(last_event, ended)
    if now - last >= IDLE_AFTER:
        return NowLine(state="idle", since=last)
    return NowLine(state="thinking", since=last, idle_at=last + IDLE_AFTER)


def _latest_of(owner_field: str) -> Subquery:
    return Subquery(
        Step.objects.filter(**{owner_field: OuterRef("pk")})
        .order_by("-started_at", "-pk")
        .values("pk")[:1]
    )


# Every card and every session's row reads these, and a live update renders some: compiled
# once per number of agents or sessions asked about (`PreparedQuery`), not on every render.
_latest_of_agents = PreparedQuery(
    Step,
    lambda pks: Step.objects.filter(
        pk__in=Agent.objects.filter(pk__in=pks).values(latest=_latest_of("agent_id"))
    ),
)
_latest_in_sessions = PreparedQuery(
    Step,
    lambda pks: Step.objects.filter(
        pk__in=Agent.objects.filter(session_id__in=pks).values(latest=_latest_of("agent_id"))
    ),
)


def latest_steps_by_agent(agent_pks: list[int]) -> dict[int, Step]:
    """Each agent's latest step, in one query: one index seek per agent, however many steps."""
    return {step.agent_id: step for step in _latest_of_agents.rows(agent_pks)}


def latest_steps_by_session(session_pks: list[int]) -> dict[int, Step]:
    """What each session is doing, in one query: of the latest step of each of its agents,
    the one running that started last, else the one that started last (a subagent still
    editing outweighs its main agent's command that just ended)."""
    chosen: dict[int, Step] = {}
    for step in _latest_in_sessions.rows(session_pks):
        known = chosen.get(step.session_id)
        if known is None or _weight(step) > _weight(known):
            chosen[step.session_id] = step
    return chosen


def _weight(step: Step) -> tuple[bool, datetime, int]:
    return (step.outcome == StepOutcome.RUNNING, step.started_at, step.pk)


@dataclass(frozen=True)
class StepPage:
    steps: list[Step]
    next_cursor: str | None


def filtered_steps(
    session: Session, *, agent_id: str | None, tool: str | None, failures_only: bool
) -> QuerySet[Step]:
    """A session's steps, of one agent, of one tool, failed only, as asked."""
    steps = Step.objects.filter(session=session)
    if agent_id:
        steps = steps.filter(agent__agent_id=agent_id)
    if tool:
        steps = steps.filter(tool_name=tool)
    if failures_only:
        steps = steps.filter(outcome=StepOutcome.FAILED)
    return steps


def session_steps(
    *,
    session: Session,
    after: str | None = None,
    agent_id: str | None = None,
    tool: str | None = None,
    failures_only: bool = False,
    limit: int = PAGE_SIZE,
    newest_first: bool = False,
) -> StepPage:
    """A session's steps in the order they started (or the newest first), a page at a time
    (keyset: the cursor is the last step's start and id, so a page costs the same on the first
    day and after a year)."""
    limit = max(1, min(limit, MAX_PAGE_SIZE))
    steps = filtered_steps(session, agent_id=agent_id, tool=tool, failures_only=failures_only)
    steps = steps.select_related("agent")
    if after:
        started_at, pk = decode_cursor(after)
        if newest_first:
            steps = steps.filter(Q(started_at__lt=started_at) | Q(started_at=started_at, pk__lt=pk))
        else:
            steps = steps.filter(Q(started_at__gt=started_at) | Q(started_at=started_at, pk__gt=pk))
    order = ("-started_at", "-pk") if newest_first else ("started_at", "pk")
    page = list(steps.order_by(*order)[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return StepPage(page, encode_cursor(page[-1]) if more else None)


def encode_cursor(step: Step) -> str:
    return f"{(step.started_at - EPOCH) // MICROSECOND}.{step.pk}"


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """Raises ValueError for a cursor this server did not hand out. Every text CURSOR_PATTERN
    matches is a place in the list (the API publishes the pattern)."""
    if not re.fullmatch(CURSOR_PATTERN, cursor):
        raise ValueError("not a cursor of this list")
    micros, _, pk = cursor.partition(".")
    # A moment beyond what a datetime holds is before (or after) every step.
    micros_held = min(max(int(micros), CURSOR_MIN_MICROS), CURSOR_MAX_MICROS)
    return EPOCH + micros_held * MICROSECOND, int(pk)


def agents_in_tool_call(*, owner: AbstractBaseUser, session_id: str, tool: str) -> set[str]:
    """The ids of the session's agents inside a call of `tool` now: its start reported (a
    PreToolUse), its end not."""
    return set(
        Step.objects.filter(
            session__session_id=session_id,
            session__owner=owner,
            tool_name=tool,
            outcome=StepOutcome.RUNNING,
        ).values_list("agent__agent_id", flat=True)
    )
