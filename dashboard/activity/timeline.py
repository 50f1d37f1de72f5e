"""A session's timeline: every agent a lane (subagents under their parent), every step a mark
placed on a time axis, for the range and filters a lead picks.

Bounded on a year of history: one query for the agents, one for the tools used, one for at
most MAX_MARKS steps read backwards from the end of the range on the session's time index.
Positions are percentages of the axis, so the page draws them without measuring anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.utils import timezone

from dashboard.activity.models import Step, StepOutcome
from dashboard.activity.selectors import filtered_steps
from dashboard.models import Agent, Session

# The most marks one timeline draws; older ones are in the list view and the export.
MAX_MARKS = 600
# The ranges a lead picks from; None is the whole session (its latest MAX_MARKS steps).
RANGES: dict[str, timedelta | None] = {
    "15m": timedelta(minutes=15),
    "1h": timedelta(hours=1),
    "6h": timedelta(hours=6),
    "all": None,
}
RANGE_LABELS = {
    "15m": "Last 15 min",
    "1h": "Last hour",
    "6h": "Last 6 hours",
    "all": "Whole session",
}
DEFAULT_RANGE = "all"
# A step that started this long before the range may still run into it (read, then dropped
# when it ended before the range): keeps the query on the index, however old the session.
LOOKBACK = timedelta(hours=1)
# The narrowest axis, and the narrowest mark (percent of the axis), so a 50 ms Read shows.
MIN_SPAN = timedelta(seconds=30)
MIN_MARK_WIDTH = 0.4
# Tick spacings, in seconds: the smallest that gives at most MAX_TICKS ticks is used.
TICK_STEPS = (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
MAX_TICKS = 6
MAX_TOOLS = 60


def step_words(step: Step, now: datetime | None = None) -> str:
    """The step in one plain sentence, for a mark's tooltip and its name to a screen reader:
    "Bash npm test: failed after 12 s, at 10:42:13 (exit 1)"."""
    what = f"{step.tool_name} {step.summary}".strip()
    took = step.took_at(now or timezone.now())
    if step.outcome == StepOutcome.RUNNING:
        how = f"running for {took}"
    else:
        how = f"{step.outcome_words} after {took}"
    at = timezone.localtime(step.started_at).strftime("%H:%M:%S")
    words = f"{what}: {how}, at {at}"
    if step.error:
        words += f" ({step.error})"
    return words


# Steps of one agent that overlap on the axis (tool calls run side by side, or marks too
# close to tell apart) go on rows of their own within its lane, up to this many.
MAX_ROWS = 4
ROW_HEIGHT = 22
MARK_HEIGHT = 18
LANE_PADDING = 5


@dataclass(frozen=True)
class Mark:
    step: Step
    left: float
    width: float
    words: str
    row: int = 0

    @property
    def y(self) -> int:
        return LANE_PADDING + self.row * ROW_HEIGHT

    @property
    def left_pct(self) -> str:
        return f"{self.left:.3f}%"

    @property
    def width_pct(self) -> str:
        return f"{self.width:.3f}%"


@dataclass(frozen=True)
class Lane:
    agent: Agent
    depth: int
    marks: list[Mark]
    rows: int = 1

    @property
    def height(self) -> int:
        return 2 * LANE_PADDING + (self.rows - 1) * ROW_HEIGHT + MARK_HEIGHT

    @property
    def failures(self) -> int:
        return sum(1 for mark in self.marks if mark.step.outcome == StepOutcome.FAILED)


@dataclass(frozen=True)
class Tick:
    left: float
    at: datetime
    label: str

    @property
    def anchor(self) -> str:
        """Labels near an edge hang inward, so none is cut off."""
        if self.left < 6:
            return "start"
        return "end" if self.left > 94 else "middle"

    @property
    def left_pct(self) -> str:
        return f"{self.left:.3f}%"


@dataclass(frozen=True)
class Timeline:
    start: datetime
    end: datetime
    lanes: list[Lane]
    ticks: list[Tick]
    # Every agent of the session and every tool it used: the filters' choices.
    agents: list[Agent]
    tools: list[str]
    # Steps drawn, and whether older ones in the range were left out (MAX_MARKS).
    shown: int
    capped: bool
    # The marks of a step running now reach the end of the axis, which is now.
    live: bool
    # Lanes of agents with no step in the range (not drawn).
    quiet_agents: int = 0


def agents_in_tree_order(agents: list[Agent]) -> list[tuple[Agent, int]]:
    """Each agent with its depth, every subagent right under the agent that started it."""
    known = {agent.pk for agent in agents}
    children: dict[int | None, list[Agent]] = {}
    for agent in agents:
        parent = agent.parent_id if agent.parent_id in known else None
        children.setdefault(parent, []).append(agent)
    ordered: list[tuple[Agent, int]] = []

    def visit(parent: int | None, depth: int) -> None:
        for agent in sorted(
            children.get(parent, []), key=lambda a: (not a.is_main, a.started_at, a.pk)
        ):
            ordered.append((agent, depth))
            visit(agent.pk, depth + 1)

    visit(None, 0)
    return ordered


def session_timeline(
    session: Session,
    *,
    range_key: str = DEFAULT_RANGE,
    agent_id: str = "",
    tool: str = "",
    failures_only: bool = False,
    now: datetime | None = None,
) -> Timeline:
    now = now or timezone.now()
    span = RANGES.get(range_key, RANGES[DEFAULT_RANGE])
    agents = list(Agent.objects.filter(session=session).order_by("started_at", "pk"))
    for agent in agents:
        agent.session = session  # its label reads it: no query per lane
    tools = list(
        Step.objects.filter(session=session)
        .order_by("tool_name")
        .values_list("tool_name", flat=True)
        .distinct()[:MAX_TOOLS]
    )
    steps = filtered_steps(session, agent_id=agent_id, tool=tool, failures_only=failures_only)
    live = session.is_active
    end = now if live else _last_moment(session)
    range_start = end - span if span is not None else None
    if range_start is not None:
        steps = steps.filter(started_at__gte=range_start - LOOKBACK)
    read = list(steps.order_by("-started_at", "-pk")[: MAX_MARKS + 1])
    capped = len(read) > MAX_MARKS
    read = read[:MAX_MARKS]
    if range_start is not None:
        read = [step for step in read if _step_end(step, now) >= range_start]
    read.reverse()
    if range_start is not None:
        start = range_start
    elif read:
        start = read[0].started_at if capped else min(read[0].started_at, session.started_at)
    else:
        start = session.started_at
    if read and not live:
        end = max(end, max(_step_end(step, end) for step in read))
    if end - start < MIN_SPAN:
        end = start + MIN_SPAN
    by_agent: dict[int, list[Mark]] = {}
    for step in read:
        by_agent.setdefault(step.agent_id, []).append(_mark(step, start, end, now))
    lanes = [
        Lane(agent=agent, depth=depth, marks=marks, rows=max(mark.row for mark in marks) + 1)
        for agent, depth in agents_in_tree_order(agents)
        if agent.pk in by_agent
        for marks in [in_rows(by_agent[agent.pk])]
    ]
    listed = [agent for agent in agents if not agent_id or agent.agent_id == agent_id]
    return Timeline(
        start=start,
        end=end,
        lanes=lanes,
        ticks=ticks(start, end),
        agents=[agent for agent, _ in agents_in_tree_order(agents)],
        tools=tools,
        shown=len(read),
        capped=capped,
        live=live,
        quiet_agents=len(listed) - len(lanes),
    )


def _last_moment(session: Session) -> datetime:
    return session.ended_at or session.last_seen_at


def _step_end(step: Step, now: datetime) -> datetime:
    if step.ended_at is not None:
        return step.ended_at
    return now if step.outcome == StepOutcome.RUNNING else step.started_at


def _percent(moment: datetime, start: datetime, end: datetime) -> float:
    fraction = (moment - start) / (end - start)
    return min(100.0, max(0.0, fraction * 100))


def _mark(step: Step, start: datetime, end: datetime, now: datetime) -> Mark:
    left = _percent(max(step.started_at, start), start, end)
    right = _percent(min(_step_end(step, now), end), start, end)
    width = max(MIN_MARK_WIDTH, right - left)
    # A mark at the very end stays inside the axis.
    left = min(left, 100.0 - width)
    return Mark(step=step, left=left, width=width, words=step_words(step, now))


def in_rows(marks: list[Mark]) -> list[Mark]:
    """The marks of one lane (in the order they start), each on the first row where it
    overlaps nothing; past MAX_ROWS, on the row that frees up first."""
    ends: list[float] = []
    placed = []
    for mark in marks:
        row = next((n for n, end in enumerate(ends) if end <= mark.left), None)
        if row is None and len(ends) < MAX_ROWS:
            row = len(ends)
            ends.append(0.0)
        elif row is None:
            row = min(range(len(ends)), key=ends.__getitem__)
        ends[row] = mark.left + mark.width
        placed.append(replace(mark, row=row))
    return placed


def ticks(start: datetime, end: datetime) -> list[Tick]:
    """Round times across the axis ("10:40", "10:45" …), at most MAX_TICKS of them."""
    seconds = (end - start).total_seconds()
    step = next((s for s in TICK_STEPS if seconds / s <= MAX_TICKS), None)
    if step is None:
        step = math.ceil(seconds / MAX_TICKS / 86400) * 86400
    local_start = timezone.localtime(start)
    # Round in local time, so hour and day ticks fall on the lead's own hours.
    offset = local_start.utcoffset() or timedelta()
    first = math.ceil((start + offset).timestamp() / step) * step
    moment = datetime.fromtimestamp(first, tz=start.tzinfo) - offset
    if step < 60:
        pattern = "%H:%M:%S"
    elif seconds > 86400:
        pattern = "%d %b %H:%M"
    else:
        pattern = "%H:%M"
    found: list[Tick] = []
    while moment <= end:
        label = timezone.localtime(moment).strftime(pattern)
        found.append(Tick(left=_percent(moment, start, end), at=moment, label=label))
        moment += timedelta(seconds=step)
    return found


def step_in_session(session: Session, step_pk: int) -> Step | None:
    """One step of the session, with its agent; None for any other id."""
    step = Step.objects.select_related("agent").filter(session=session, pk=step_pk).first()
    if step is not None:
        step.agent.session = session
    return step


def waited_on(step: Step) -> tuple[str, int] | None:
    """("plan", 12) or ("permission", 40) for a step that waited on a person."""
    kind, _, pk = step.waited_on.partition(":")
    if kind in {"plan", "permission"} and pk.isdigit():
        return kind, int(pk)
    return None
