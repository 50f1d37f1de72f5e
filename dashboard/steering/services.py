"""Messages, stops, pauses and resumes: checked, stored and audited here; carried to each
agent by its own kind of hook (`dashboard.integrations`), which claims what is queued.

Who may: the session's reviewers and its owner (`Audience.is_waited_on_in`, the one
visibility rule); anyone else is told there is no such agent (404) when they cannot see it,
or that they may not (403) when they can. Only running agents of running sessions are steered.

A hook asks `agent_steering(agent_pk)` first: a set this process reads at most once per
`STEERING_TTL` (one indexed query for every agent at once), so a hook with nothing to carry
pays no query of its own; a write in this process refreshes it at once, another process's within
the TTL.
"""

from __future__ import annotations

import threading
import time as clock
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q
from django.utils import timezone

from dashboard.core.audit import Via, audit
from dashboard.core.changes import Changes, Outcome
from dashboard.core.edge import text_problem
from dashboard.core.errors import ServiceError
from dashboard.core.redaction import redact
from dashboard.core.visibility import audience_of
from dashboard.models import Agent, AuditAction, Session
from dashboard.steering.models import MAX_TEXT_CHARS, Directive, Pause

# How stale this process's view of what is queued and paused may be (other processes' writes).
STEERING_TTL = 1.0
# At most this many agents are steered by one action (a team's every running agent).
MAX_AGENTS = 500


# --- who is steered --------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One agent (`session_id` and `agent_id`), every running agent of a session
    (`session_id`), of a project (`project_pk`) or of a team (`team_pk`)."""

    session_id: str = ""
    agent_id: str = ""
    project_pk: int | None = None
    team_pk: int | None = None

    @property
    def one_agent(self) -> bool:
        return bool(self.session_id and self.agent_id)


def _nobody_to_steer(what: str) -> ServiceError:
    return ServiceError(
        "nothing_running",
        f"{what} has no running agent, so nothing was sent; agents can be steered only while "
        "their session runs.",
        status=409,
    )


def _may_not() -> ServiceError:
    return ServiceError(
        "not_allowed",
        "Only the session's reviewers and its owner can message, pause or stop its agents.",
        status=403,
    )


def targets_resolve(*, user: AbstractBaseUser, target: Target) -> list[Agent]:
    """The running agents `target` names that `user` may steer; refused with one sentence when
    there are none (404 unknown or unseen, 403 not theirs to steer, 409 none running)."""
    audience = audience_of(user)
    running = Agent.objects.select_related("session").filter(
        status=Agent.Status.RUNNING, session__ended_at__isnull=True
    )
    if target.session_id:
        session = Session.objects.filter(session_id=target.session_id).first()
        if session is None or not audience.may_see(session):
            raise ServiceError(
                "session_not_found",
                f"There is no session {target.session_id} that you can see.",
                status=404,
            )
        if not audience.is_waited_on_in(session):
            raise _may_not()
        if target.agent_id:
            agent = Agent.objects.filter(session=session, agent_id=target.agent_id).first()
            if agent is None:
                raise ServiceError(
                    "agent_not_found",
                    f"There is no agent {target.agent_id} in session {target.session_id}.",
                    status=404,
                )
            if session.ended_at is not None or agent.status != Agent.Status.RUNNING:
                raise _nobody_to_steer("That agent")
            agent.session = session
            return [agent]
        agents = list(running.filter(session=session)[:MAX_AGENTS])
        if not agents:
            raise _nobody_to_steer("That session")
        return agents
    if target.project_pk is not None:
        scope, what = Q(session__project_record_id=target.project_pk), "That project"
    elif target.team_pk is not None:
        scope, what = Q(session__team_id=target.team_pk), "That team"
    else:
        raise ServiceError("no_target", "Choose an agent, a session, a project or a team.")
    agents = list(running.filter(scope).filter(audience.waits_on("session__"))[:MAX_AGENTS])
    if not agents:
        if not running.filter(scope).filter(audience.sees("session__")).exists():
            raise _nobody_to_steer(what)
        raise _may_not()
    return agents


def steerable_count(*, user: AbstractBaseUser, target: Target) -> int:
    """How many agents an action on `target` would reach (the form says so before sending)."""
    try:
        return len(targets_resolve(user=user, target=target))
    except ServiceError:
        return 0


# --- what is said ----------------------------------------------------------------------------


def checked_text(text: object, *, what: str, required: bool) -> str:
    """The text of a message or a reason, stripped and redacted; refused with one sentence."""
    if not isinstance(text, str):
        raise ServiceError("invalid_text", f"The {what} must be text.", status=422)
    text = text.strip()
    if required and not text:
        raise ServiceError(
            "text_required", f"Write the {what} first; an empty one is not sent.", status=422
        )
    if len(text) > MAX_TEXT_CHARS:
        raise ServiceError(
            "text_too_long",
            f"The {what} has {len(text):,} characters; keep it to {MAX_TEXT_CHARS:,}.",
            status=422,
        )
    problem = text_problem(text)
    if problem is None and any(
        ord(character) < 32 and character not in "\n\t" for character in text
    ):
        problem = "must not contain control characters other than line breaks and tabs"
    if problem:
        raise ServiceError("invalid_text", f"The {what} {problem}.", status=422)
    return redact(text)


@dataclass
class Steered:
    """What an action reached: how many agents, and what changed for the board."""

    agents: int
    # Agents it left as they were (already paused, not paused), each once.
    unchanged: int = 0
    changes: Changes = field(default_factory=Changes)


def _changes_for(agents: Sequence[Agent]) -> Changes:
    changes = Changes()
    for agent in agents:
        changes.agent(agent.pk, agent.session_id)
        changes.sessions.add(agent.session_id)
    return changes


def _pause_changes(agents: Sequence[Agent]) -> Changes:
    """A pause or a resume: each agent's card and row, and the banner of its session, whose
    "needs a look" lines offer Pause or Resume."""
    changes = _changes_for(agents)
    changes.inbox_sessions |= {agent.session_id for agent in agents}
    return changes


def _audit_each_session(
    action: str, agents: Sequence[Agent], *, user: AbstractBaseUser, via: Via | None, said: str
) -> None:
    """One entry per session reached: who, what, and which of its agents."""
    by_session: dict[int, list[Agent]] = {}
    for agent in agents:
        by_session.setdefault(agent.session_id, []).append(agent)
    for session_agents in by_session.values():
        session = session_agents[0].session
        names = ", ".join(
            "main agent" if agent.is_main else agent.agent_id for agent in session_agents[:10]
        )
        more = f" and {len(session_agents) - 10} more" if len(session_agents) > 10 else ""
        summary = f"To {names}{more}" + (f":\n{said}" if said else "")
        audit(
            action,
            actor=user,
            via=via,
            session=session,
            about=f"agent:{session_agents[0].pk}",
            summary=summary,
        )


def message_send(
    *, user: AbstractBaseUser, target: Target, text: str, via: Via | None = None
) -> Steered:
    """Queue a message for each agent `target` names: its model reads it at its next hook."""
    text = checked_text(text, what="message", required=True)
    agents = targets_resolve(user=user, target=target)
    _queue(agents, kind=Directive.Kind.MESSAGE, text=text, user=user)
    _audit_each_session(AuditAction.AGENT_MESSAGED, agents, user=user, via=via, said=text)
    steered = Steered(len(agents), changes=_changes_for(agents))
    steered.changes.messaged_agents |= {agent.pk for agent in agents}
    return steered


def stop_send(
    *, user: AbstractBaseUser, target: Target, reason: str = "", via: Via | None = None
) -> Steered:
    """End each agent's turn at its next hook; its developer's next prompt runs normally."""
    reason = checked_text(reason, what="reason", required=False)
    agents = targets_resolve(user=user, target=target)
    _queue(agents, kind=Directive.Kind.STOP, text=reason, user=user)
    _audit_each_session(AuditAction.AGENT_STOPPED, agents, user=user, via=via, said=reason)
    return Steered(len(agents), changes=_changes_for(agents))


def _queue(agents: Sequence[Agent], *, kind: str, text: str, user: AbstractBaseUser) -> None:
    """One statement for every agent reached."""
    name = user.get_username()
    now = timezone.now()
    Directive.objects.bulk_create(
        Directive(
            agent=agent,
            session_id=agent.session_id,
            kind=kind,
            text=text,
            created_by=user,
            created_by_name=name,
            created_at=now,
        )
        for agent in agents
    )
    forget()


def pause(
    *, user: AbstractBaseUser, target: Target, reason: str = "", via: Via | None = None
) -> Steered:
    """Hold each agent's tool calls until a resume (those already paused stay as they are)."""
    reason = checked_text(reason, what="reason", required=False)
    agents = targets_resolve(user=user, target=target)
    already = set(
        Pause.objects.filter(agent__in=agents, resumed_at__isnull=True).values_list(
            "agent_id", flat=True
        )
    )
    paused = [agent for agent in agents if agent.pk not in already]
    now = timezone.now()
    Pause.objects.bulk_create(
        Pause(
            agent=agent,
            session_id=agent.session_id,
            reason=reason,
            paused_by=user,
            paused_by_name=user.get_username(),
            paused_at=now,
        )
        for agent in paused
    )
    forget()
    if paused:
        _audit_each_session(AuditAction.AGENT_PAUSED, paused, user=user, via=via, said=reason)
    return Steered(len(paused), unchanged=len(already), changes=_pause_changes(paused))


def resume(*, user: AbstractBaseUser, target: Target, via: Via | None = None) -> Steered:
    """Let each paused agent's held and next tool calls run."""
    agents = targets_resolve(user=user, target=target)
    open_pauses = Pause.objects.filter(agent__in=agents, resumed_at__isnull=True)
    resumed_pks = set(open_pauses.values_list("agent_id", flat=True))
    open_pauses.update(resumed_at=timezone.now(), resumed_by_name=user.get_username())
    forget()
    resumed = [agent for agent in agents if agent.pk in resumed_pks]
    if not resumed:
        raise ServiceError(
            "not_paused", "Nothing there is paused, so nothing was resumed.", status=409
        )
    _audit_each_session(AuditAction.AGENT_RESUMED, resumed, user=user, via=via, said="")
    changes = _pause_changes(resumed)
    changes.resumed_agents |= {agent.pk for agent in resumed}
    return Steered(len(resumed), unchanged=len(agents) - len(resumed), changes=changes)


# --- what a hook carries ---------------------------------------------------------------------


@dataclass(frozen=True)
class Said:
    """What one hook answer carries to an agent: the messages its model reads (each once), and
    a stop with its sentence."""

    messages: tuple[str, ...] = ()
    stop: str | None = None

    def __bool__(self) -> bool:
        return bool(self.messages) or self.stop is not None

    @property
    def context(self) -> str:
        """The messages as the model reads them."""
        return "\n\n".join(self.messages)


def message_words(directive: Directive) -> str:
    return (
        f"Message from {directive.created_by_name}, who oversees this session on Agentboard:\n"
        f"{directive.text}"
    )


def stop_words(directive: Directive) -> str:
    reason = f": {directive.text}" if directive.text else ""
    return f"Stopped by {directive.created_by_name} from Agentboard{reason}"


def pause_words(paused: Pause) -> str:
    reason = f": {paused.reason}" if paused.reason else ""
    return f"Paused by {paused.paused_by_name}{reason}; wait for a resume before going on."


def directives_claim(
    *, agent_pk: int, via: str, messages: bool = True, stops: bool = True, key: str = ""
) -> Outcome[Said]:
    """Claim what is queued for the agent (inside the writer), each exactly once: of two hooks
    of two processes claiming together, a directive goes to the one whose conditional update
    matched it. `messages`/`stops` False leave those queued for a hook that can carry them.
    With a `key`, what an earlier claim with the same key took is said again first: a client
    that lost an answer on the way asks again with the same key and loses nothing."""
    claimed = _claimed_again_and_now(
        agent_pk=agent_pk, via=via, kinds=_kinds(messages, stops), key=key
    )
    if not claimed:
        return Outcome(Said())
    return Outcome(said_of(claimed), _claimed_changes(claimed))


def said_of(directives: Sequence[Directive]) -> Said:
    """The messages and the (first) stop of these directives, as a hook answer says them."""
    stops = [d for d in directives if d.kind == Directive.Kind.STOP]
    return Said(
        messages=tuple(message_words(d) for d in directives if d.kind == Directive.Kind.MESSAGE),
        stop=stop_words(stops[0]) if stops else None,
    )


def _kinds(messages: bool, stops: bool) -> list[str]:
    return [
        kind
        for kind, wanted in ((Directive.Kind.MESSAGE, messages), (Directive.Kind.STOP, stops))
        if wanted
    ]


def claimed_before(*, agent_pk: int, key: str, kinds: Sequence[str]) -> list[Directive]:
    """What a claim with this key took already (a read: for a client's retry)."""
    return list(
        Directive.objects.filter(
            agent_id=agent_pk, claim_key=key, kind__in=kinds, state=Directive.State.DELIVERED
        ).order_by("created_at", "pk")
    )


def messages_take(*, agent_pk: int, via: str, key: str = "") -> Outcome[list[Directive]]:
    """The messages queued for the agent, claimed (an agent of your own reads them); with a
    `key`, those an earlier read with the same key took come first, again."""
    claimed = _claimed_again_and_now(
        agent_pk=agent_pk, via=via, kinds=[Directive.Kind.MESSAGE], key=key, cached=False
    )
    return Outcome(claimed, _claimed_changes(claimed) if claimed else Changes())


def _claimed_again_and_now(
    *, agent_pk: int, via: str, kinds: list[str], key: str, cached: bool = True
) -> list[Directive]:
    """What an earlier claim with `key` took (a retry's), then what is queued now."""
    before = claimed_before(agent_pk=agent_pk, key=key, kinds=kinds) if key else []
    return before + _claim(agent_pk=agent_pk, via=via, kinds=kinds, cached=cached, key=key)


def _claimed_changes(claimed: list[Directive]) -> Changes:
    session_pk = claimed[0].session_id
    return Changes(sessions={session_pk}).agent(claimed[0].agent_id, session_pk)


def _claim(
    *, agent_pk: int, via: str, kinds: list[str], cached: bool = True, key: str = ""
) -> list[Directive]:
    if cached and agent_pk not in _state().queued:
        return []
    queued = list(
        Directive.objects.filter(
            agent_id=agent_pk, state=Directive.State.QUEUED, kind__in=kinds
        ).order_by("created_at", "pk")
    )
    now = timezone.now()
    claimed = [
        directive
        for directive in queued
        if Directive.objects.filter(pk=directive.pk, state=Directive.State.QUEUED).update(
            state=Directive.State.DELIVERED, delivered_at=now, delivered_via=via[:80], claim_key=key
        )
    ]
    if claimed:
        forget()
    return claimed


def is_paused(agent_pk: int) -> bool:
    """From this process's view (at most `STEERING_TTL` old): for a hook's fast path."""
    return agent_pk in _state().paused


def has_queued(agent_pk: int) -> bool:
    return agent_pk in _state().queued


def queued_and_paused(agent_pk: int) -> tuple[bool, bool]:
    """Whether something is queued for the agent, and whether it is paused (this process's
    view); may read the database, so not on the event loop."""
    view = _state()
    return agent_pk in view.queued, agent_pk in view.paused


def pause_open_now(agent_pk: int) -> Pause | None:
    """Read from the database itself (a held call checks again after each wake)."""
    return Pause.objects.filter(agent_id=agent_pk, resumed_at__isnull=True).first()


def _holding_stops():
    return Directive.objects.filter(
        kind=Directive.Kind.STOP, state=Directive.State.DELIVERED, turn_ended_at__isnull=True
    )


def stop_holding(agent_pk: int) -> str | None:
    """The sentence of a stop delivered to the agent in this turn, which still refuses its tool
    calls (a version of Claude Code lets the model go on for one more request after the stop);
    None, with no query, for an agent this process knows of no such stop."""
    if agent_pk not in _state().stopping:
        return None
    held = _holding_stops().filter(agent_id=agent_pk).order_by("-delivered_at").first()
    return stop_words(held) if held is not None else None


def turn_over(*, agent_pk: int) -> Outcome[None]:
    """The agent's turn ended (it stopped, or its developer typed a new prompt): a stop
    delivered before holds no more, and a stop still queued (the turn ended without a hook that
    could carry it: the developer interrupted it) is not carried into the next turn, whose
    prompt runs normally. One indexed query, once a turn."""
    now = timezone.now()
    holding = 0
    if agent_pk in _state().stopping:
        holding = _holding_stops().filter(agent_id=agent_pk).update(turn_ended_at=now)
    settled = Directive.objects.filter(
        agent_id=agent_pk, kind=Directive.Kind.STOP, state=Directive.State.QUEUED
    ).update(
        state=Directive.State.UNDELIVERED, delivered_at=now, delivered_via="the turn ended first"
    )
    if holding or settled:
        forget()
    return Outcome(None)


@dataclass(frozen=True)
class Flags:
    queued: bool
    paused: bool
    stopping: bool


def steering_flags(agent_pk: int) -> Flags:
    """What this process knows of the agent: something queued for it, paused, told to stop
    in this turn. May read the database (once per `STEERING_TTL`): not on the event loop."""
    view = _state()
    return Flags(agent_pk in view.queued, agent_pk in view.paused, agent_pk in view.stopping)


def ended_sessions_settle(changes: Changes) -> None:
    """In the write that ended sessions: what was queued for them will not be delivered."""
    if not changes.ended_sessions:
        return
    settled = Directive.objects.filter(
        session_id__in=changes.ended_sessions, state=Directive.State.QUEUED
    ).update(state=Directive.State.UNDELIVERED, delivered_via="the session ended")
    holding = _holding_stops().filter(session_id__in=changes.ended_sessions)
    if holding.update(turn_ended_at=timezone.now()) or settled:
        forget()


# --- this process's view of who has something queued or is paused ----------------------------


@dataclass(frozen=True)
class _View:
    read_at: float = 0.0
    queued: frozenset[int] = frozenset()
    paused: frozenset[int] = frozenset()
    # Agents told to stop whose turn has not ended yet.
    stopping: frozenset[int] = frozenset()


_lock = threading.Lock()
_view = _View()


def forget() -> None:
    """This process queued, claimed, paused or resumed: read again when next asked."""
    global _view
    with _lock:
        _view = _View()


def _state() -> _View:
    global _view
    view = _view
    if clock.monotonic() - view.read_at < STEERING_TTL:
        return view
    queued = Directive.objects.filter(state=Directive.State.QUEUED).values_list(
        "agent_id", flat=True
    )
    paused = Pause.objects.filter(resumed_at__isnull=True).values_list("agent_id", flat=True)
    stopping = _holding_stops().values_list("agent_id", flat=True)
    view = _View(clock.monotonic(), frozenset(queued), frozenset(paused), frozenset(stopping))
    _view = view
    return view


def stop_pending(agent_pk: int) -> str | None:
    """The sentence of a stop queued for the agent, left queued (a client whose tool hook
    cannot end the turn refuses each call with it until the turn's end claims it); None, with
    no query, unless this process's view has something queued for the agent."""
    if agent_pk not in _state().queued:
        return None
    directive = (
        Directive.objects.filter(
            agent_id=agent_pk, state=Directive.State.QUEUED, kind=Directive.Kind.STOP
        )
        .order_by("created_at", "pk")
        .first()
    )
    return stop_words(directive) if directive is not None else None


def stopping_claim(*, agent_pk: int, via: str) -> Outcome[Said]:
    """An agent is stopping: a stop queued for it is delivered now, as its turn ends (the
    messages queued beside it wait for its next turn, where the model reads them); else the
    messages, to continue it with."""
    if stop_pending(agent_pk) is not None:
        claimed = directives_claim(agent_pk=agent_pk, via=via, messages=False)
        Directive.objects.filter(
            agent_id=agent_pk, kind=Directive.Kind.STOP, turn_ended_at__isnull=True
        ).update(turn_ended_at=timezone.now())
        return claimed
    return directives_claim(agent_pk=agent_pk, via=via, stops=False)
