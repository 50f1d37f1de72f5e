"""What the board shows of steering: each agent's open pause and its latest messages and stops
with their states, read for every card of a board at once (two queries), and which sessions
have a paused agent (one)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import F, Window
from django.db.models.functions import RowNumber

from dashboard.models import Session
from dashboard.steering.models import Directive, Pause

# A card shows this many of its agent's latest messages and stops.
RECENT_DIRECTIVES = 3


@dataclass(frozen=True)
class AgentSteering:
    """An agent's open pause, if any, and its latest directives, newest first."""

    pause: Pause | None = None
    recent: list[Directive] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.pause is not None or bool(self.recent)


def steering_by_agent(agent_pks: Sequence[int]) -> dict[int, AgentSteering]:
    """Agents with a pause open or something said to them; the others are left out."""
    if not agent_pks:
        return {}
    pauses = {
        pause.agent_id: pause
        for pause in Pause.objects.filter(agent_id__in=agent_pks, resumed_at__isnull=True)
    }
    recent: dict[int, list[Directive]] = {}
    ranked = (
        Directive.objects.filter(agent_id__in=agent_pks)
        .annotate(
            newness=Window(
                RowNumber(),
                partition_by=[F("agent_id")],
                order_by=[F("created_at").desc(), F("pk").desc()],
            )
        )
        .filter(newness__lte=RECENT_DIRECTIVES)
        .order_by("agent_id", "newness")
    )
    for directive in ranked:
        recent.setdefault(directive.agent_id, []).append(directive)
    return {
        pk: AgentSteering(pause=pauses.get(pk), recent=recent.get(pk, []))
        for pk in sorted(set(pauses) | set(recent))
    }


def paused_by_session(session_pks: Sequence[int]) -> dict[int, tuple[int, Pause]]:
    """How many agents of each session are paused, and the latest pause of them (sessions with
    none are left out). Open pauses are of running agents, a few per session."""
    if not session_pks:
        return {}
    found: dict[int, tuple[int, Pause]] = {}
    for pause in Pause.objects.filter(session_id__in=session_pks, resumed_at__isnull=True).order_by(
        "paused_at", "pk"
    ):
        count = found[pause.session_id][0] if pause.session_id in found else 0
        found[pause.session_id] = (count + 1, pause)
    return found


# The timeline lists this many of a session's latest messages, stops, pauses and resumes.
EVENTS_SHOWN = 50


@dataclass(frozen=True)
class SteeringEvent:
    """One thing a lead did to an agent, for the timeline: who, when, what, to which agent."""

    at: datetime
    kind: str  # "message", "stop", "pause" or "resume"
    by: str
    agent_pk: int
    text: str = ""
    # A message's or a stop's state ("queued", "delivered", "undelivered") and how.
    directive: Directive | None = None


def steering_events(session: Session, limit: int = EVENTS_SHOWN) -> list[SteeringEvent]:
    """The session's latest messages, stops, pauses and resumes, newest first (two queries)."""
    events = [
        SteeringEvent(d.created_at, d.kind, d.created_by_name, d.agent_id, text=d.text, directive=d)
        for d in Directive.objects.filter(session=session).order_by("-created_at", "-pk")[:limit]
    ]
    for pause in Pause.objects.filter(session=session).order_by("-paused_at", "-pk")[:limit]:
        events.append(
            SteeringEvent(
                pause.paused_at, "pause", pause.paused_by_name, pause.agent_id, pause.reason
            )
        )
        if pause.resumed_at is not None:
            events.append(
                SteeringEvent(pause.resumed_at, "resume", pause.resumed_by_name, pause.agent_id)
            )
    events.sort(key=lambda event: event.at, reverse=True)
    return events[:limit]
