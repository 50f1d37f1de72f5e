"""Keeping agents on track: todo reminders, the continuation enforcer and discipline flags.

Everything here is driven by hooks (and socket frames) through the functions below; state lives
in the database (AgentTracking, Continuation, EnforcerEvent) so that a countdown started by a
Stop hook in one server process can be cancelled by a click that lands on another.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from dashboard.core.audit import Via, audit
from dashboard.core.changes import Changes
from dashboard.core.sql import aware
from dashboard.models import Agent, AuditAction, PermissionMode, Session
from todos.models import AgentTracking, Continuation, EnforcerEvent, TodoStatus
from todos.selectors import current_todos

logger = logging.getLogger(__name__)

FLAGS = {
    "multiple_in_progress": "More than one task is in progress at once.",
    "no_in_progress": "Nothing is in progress while tasks are still pending.",
    "batch_completion": "Several tasks were marked completed in a single write.",
    "stale_list": "The list has not been updated for a while.",
    "stopped_unfinished": "Stopped with unfinished tasks.",
}
STEP_KEYS_KEPT = 50


@dataclass
class Injection:
    """Text for the model (a reminder, the list after compaction), if any, and what changed."""

    text: str | None = None
    changes: Changes = field(default_factory=Changes)
    # A stop sent from the board that this hook's answer carries: the agent's turn ends.
    stop: str | None = None


@dataclass
class ContinuationChange:
    continuation: Continuation
    changes: Changes = field(default_factory=Changes)


@dataclass
class CancelResult:
    cancelled: bool
    changes: Changes = field(default_factory=Changes)


# --- wording (our own) -------------------------------------------------------------------------


def numbered_list(items: Sequence[Mapping[str, str]]) -> str:
    return "\n".join(
        f"{number}. [{item['status']}] {item['content']}" for number, item in enumerate(items, 1)
    )


def reminder_text(items: Sequence[Mapping[str, str]], *, steps: int) -> str:
    if not items:
        return (
            "A note from Agentboard: you are not tracking this work in a todo list. If the task "
            "has several steps, write one now so you and the team lead can follow along; if it "
            "is a quick single step, carry on. Do not mention this note to the user."
        )
    return (
        f"A note from Agentboard: your todo list has not changed in your last {steps} steps. "
        "Keep it current: mark finished items completed right away, keep exactly one item "
        "in_progress, and drop or rewrite items that no longer apply if the list has gone "
        "stale. Your list as it stands:\n"
        f"{numbered_list(items)}\n"
        "Do not mention this note to the user."
    )


def compaction_text(items: Sequence[Mapping[str, str]]) -> str:
    if not items:
        return "Agentboard: your context was compacted; you had no open todo list."
    return (
        "Agentboard: your context was just compacted. This is your todo list from before, so "
        "you can pick up where you left off:\n"
        f"{numbered_list(items)}"
    )


def continuation_prompt(items: Sequence[Mapping[str, str]]) -> str:
    completed = sum(1 for i in items if i["status"] == TodoStatus.COMPLETED)
    open_items = [i for i in items if i["status"] in (TodoStatus.PENDING, TodoStatus.IN_PROGRESS)]
    counted = completed + len(open_items)
    upcoming = next((i for i in items if i["status"] == TodoStatus.IN_PROGRESS), None) or (
        open_items[0] if open_items else None
    )
    lines = [
        "Agentboard: your todo list still has unfinished tasks, so keep going.",
        "- Carry on with the next pending task right away; there is no need to ask for permission.",
        "- Mark each task completed the moment it is done.",
        "- Do not stop until every task is completed.",
        "",
        f"Status: {completed}/{counted} completed, {len(open_items)} remaining",
    ]
    if upcoming is not None:
        lines.append(f"Next: {upcoming['content']}")
    return "\n".join(lines)


# --- state --------------------------------------------------------------------------------------


def tracking_for(agent: Agent) -> AgentTracking:
    """The agent's tracking row, locked for the caller's transaction (the agent's own row lock,
    taken when it was loaded for this write, already keeps other writers out)."""
    if Agent.tracking.is_cached(agent):
        tracking = getattr(agent, "tracking", None)
        if tracking is not None:
            return tracking
    return AgentTracking.objects.select_for_update().get_or_create(agent=agent)[0]


def session_note(*, agent: Agent, text: str, code: str) -> EnforcerEvent:
    """A line of the session history about the session itself, not the enforcer (`code` says
    which: "auto_refused", "cwd", "mode", "teammate_idle"); `text` is already redacted."""
    return _record(agent, EnforcerEvent.Kind.SESSION, text, code)


def _record(agent: Agent, kind: str, text: str, code: str = "") -> EnforcerEvent:
    """A line of the agent's history. Plain SQL: reminders come due every few tool uses, and
    compiling the ORM's INSERT costs more than running it."""
    connection = transaction.get_connection()
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO todos_enforcerevent (agent_id, kind, code, text, created_at) "
            "VALUES (%s, %s, %s, %s, %s) RETURNING id",
            [agent.pk, kind, code, text, connection.ops.adapt_datetimefield_value(now)],
        )
        (pk,) = cursor.fetchone()
    return EnforcerEvent(pk=pk, agent=agent, kind=kind, code=code, text=text, created_at=now)


def _save_step_counters(tracking: AgentTracking) -> None:
    """What a step changes on the tracking row (plain SQL, as for `_record`)."""
    connection = transaction.get_connection()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE todos_agenttracking SET steps_since_write = %s, steps_since_reminder = %s, "
            "current_flags = %s, seen_step_keys = %s WHERE id = %s",
            [
                tracking.steps_since_write,
                tracking.steps_since_reminder,
                connection.ops.adapt_json_value(tracking.current_flags, None),
                connection.ops.adapt_json_value(tracking.seen_step_keys, None),
                tracking.pk,
            ],
        )


def _set_flags(agent: Agent, tracking: AgentTracking, flags: list[str]) -> list[EnforcerEvent]:
    """Store the flags that hold now; each newly raised one goes into the agent's history."""
    raised = [f for f in flags if f not in tracking.current_flags]
    tracking.current_flags = flags
    return [_record(agent, EnforcerEvent.Kind.FLAG, FLAGS[f], code=f) for f in raised]


def _changed(agent: Agent, events: Sequence[EnforcerEvent] = ()) -> Changes:
    """The agent's card and these new history lines."""
    changes = Changes().agent(agent.pk, agent.session_id)
    changes.enforcer_events += [event.pk for event in events]
    return changes


# Judged on a settled list: a burst of todo calls passes through these states (Task tools create
# items one at a time, all pending; concurrent hooks of one turn arrive in any order), so they
# are flagged only when the agent takes a step of other work while the list is so.
SETTLED_FLAGS = ("multiple_in_progress", "no_in_progress")


def list_conditions(items: Sequence[Mapping[str, str]]) -> list[str]:
    """The settled-list problems of these items (flagged at the agent's next other step)."""
    statuses = [item["status"] for item in items]
    conditions = []
    if statuses.count(TodoStatus.IN_PROGRESS) > 1:
        conditions.append("multiple_in_progress")
    if TodoStatus.IN_PROGRESS not in statuses and TodoStatus.PENDING in statuses:
        conditions.append("no_in_progress")
    return conditions


def write_flags(old: Sequence[Mapping[str, str]], new: Sequence[Mapping[str, str]]) -> list[str]:
    """Problems of the write itself, flagged at once."""
    done_before = {i["content"] for i in old if i["status"] == TodoStatus.COMPLETED}
    newly_done = [
        i for i in new if i["status"] == TodoStatus.COMPLETED and i["content"] not in done_before
    ]
    if len(newly_done) > 1 and any(i["status"] != TodoStatus.COMPLETED for i in old):
        return ["batch_completion"]
    return []


def list_flags(old: Sequence[Mapping[str, str]], new: Sequence[Mapping[str, str]]) -> list[str]:
    """Every problem of this write and its list, however long the list stays so."""
    return list_conditions(new) + write_flags(old, new)


def on_todo_write(
    *, agent: Agent, old: Sequence[Mapping[str, str]], new: Sequence[Mapping[str, str]]
) -> Changes:
    """A write resets the step counter, re-evaluates the flags and cancels any countdown.

    A settled-list flag already raised stays while its condition holds; a new condition waits
    for the agent's next step of other work (`on_step`). Runs inside the write's transaction.
    """
    tracking = tracking_for(agent)
    tracking.steps_since_write = 0
    tracking.held_flags = list_conditions(new)
    kept = [flag for flag in tracking.current_flags if flag in tracking.held_flags]
    events = _set_flags(agent, tracking, kept + write_flags(old, new))
    connection = transaction.get_connection()
    with connection.cursor() as cursor:
        # On every write: plain SQL, as compiling the ORM's UPDATE costs more than running it.
        cursor.execute(
            "UPDATE todos_agenttracking SET steps_since_write = 0, current_flags = %s, "
            "held_flags = %s WHERE id = %s",
            [
                connection.ops.adapt_json_value(tracking.current_flags, None),
                connection.ops.adapt_json_value(tracking.held_flags, None),
                tracking.pk,
            ],
        )
    return _changed(agent, events).merge(
        _cancel_counting(agent, reason="the agent updated its todo list")
    )


def on_activity(*, agent: Agent) -> Changes:
    """Any sign of life from the agent (a prompt, a tool use) cancels a running countdown."""
    with transaction.atomic(savepoint=False):
        changes = _cancel_counting(agent, reason="the agent became active again")
        if not changes:
            return changes
        tracking = tracking_for(agent)
        if "stopped_unfinished" in tracking.current_flags:
            _set_flags(
                agent, tracking, [f for f in tracking.current_flags if f != "stopped_unfinished"]
            )
            tracking.save()
        return changes


def on_step(*, agent: Agent, key: str | None = None, deliver: bool = True) -> Injection:
    """An assistant step (a tool use). Returns a reminder to inject when one is due and this
    step's answer can carry it (`deliver`); otherwise it stays due for the next one that can."""
    with transaction.atomic(savepoint=False):
        tracking = tracking_for(agent)
        if key:
            if key in tracking.seen_step_keys:
                return Injection()  # the same hook delivered twice counts once
            tracking.seen_step_keys = [*tracking.seen_step_keys, key][-STEP_KEYS_KEPT:]
        tracking.steps_since_write += 1
        tracking.steps_since_reminder += 1
        changes = _cancel_counting(agent, reason="the agent became active again")
        # Other work while the list is in a doubtful state: now it is worth a flag.
        due = [flag for flag in tracking.held_flags if flag not in tracking.current_flags]
        settled = _set_flags(agent, tracking, [*tracking.current_flags, *due]) if due else []
        if deliver:
            reminder, recorded = _take_reminder_if_due(agent, tracking)
        else:
            reminder, recorded = None, _mark_stale(agent, tracking)
        recorded = [*settled, *recorded]
        _save_step_counters(tracking)
        if recorded:
            changes.merge(_changed(agent, recorded))
    return Injection(reminder, changes)


_QUIET_STEP_STATE = """
    SELECT a.status, a.agent_type, a.last_seen_at, a.awaiting_plan, s.id, s.owner_id,
           s.permission_mode, s.ended_at, s.cwd, s.last_seen_at, t.id, t.steps_since_write,
           t.steps_since_reminder, t.current_flags, t.seen_step_keys, t.held_flags,
           EXISTS (
               SELECT 1 FROM todos_continuation c WHERE c.agent_id = a.id AND c.status = %s
           )
    FROM dashboard_agent a
    JOIN dashboard_session s ON s.id = a.session_id
    LEFT JOIN todos_agenttracking t ON t.agent_id = a.id
    WHERE a.id = %s
"""


_QUIET_STEP_COUNT = """
    UPDATE todos_agenttracking
    SET steps_since_write = steps_since_write + 1,
        steps_since_reminder = steps_since_reminder + 1,
        seen_step_keys = %s
    WHERE id = %s
"""
_QUIET_STEP_COUNT_JSONB = _QUIET_STEP_COUNT.replace(
    "seen_step_keys = %s", "seen_step_keys = %s::jsonb"
)


def quiet_step(
    *,
    agent_pk: int,
    owner_pk: int,
    key: str,
    permission_mode: str | None,
    agent_type: str,
    cwd: str,
) -> bool:
    """The common case of a tool use, in two statements: a known, running agent takes one more
    step and nothing else happens (no countdown to cancel, no flag, no reminder due, nothing new
    about its session). True when it was handled; False leaves it to the full path
    (`hook_observe` and `on_step`), which has already been told nothing here.

    An agent busy with many tool calls a second costs its writer two statements per call; the
    rules are the same as `on_step`'s, only the checks are made on one row.
    """
    assert transaction.get_connection().in_atomic_block
    connection = transaction.get_connection()
    lock = " FOR UPDATE OF a" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(_QUIET_STEP_STATE + lock, [Continuation.Status.COUNTING, agent_pk])
        row = cursor.fetchone()
        if row is None:
            return False
        (
            status,
            known_type,
            agent_seen,
            awaiting_plan,
            session_pk,
            session_owner,
            mode,
            ended_at,
            known_cwd,
            session_seen,
            tracking_pk,
            steps_since_write,
            steps_since_reminder,
            flags,
            seen_keys,
            held,
            counting,
        ) = row
        if tracking_pk is None:
            return False
        seen_keys = json.loads(seen_keys) if isinstance(seen_keys, str) else seen_keys
        flags = json.loads(flags) if isinstance(flags, str) else flags
        held = json.loads(held) if isinstance(held, str) else held
        # Once stale, the flag is up already; only a reminder coming due needs the full path.
        stale_next = steps_since_write + 1 >= settings.AGENTBOARD_REMINDER_STEPS_SINCE_WRITE
        reminder_due = steps_since_reminder + 1 >= settings.AGENTBOARD_REMINDER_STEPS_BETWEEN
        news = stale_next and ("stale_list" not in flags or reminder_due)
        news = news or any(flag not in flags for flag in held)
        if (
            session_owner != owner_pk
            or status != Agent.Status.RUNNING
            or ended_at is not None
            or (permission_mode in PermissionMode.values and permission_mode != mode)
            or (agent_type and not known_type)
            or (cwd and not known_cwd)
            or counting
            or news
            or awaiting_plan
        ):
            return False
        if key in seen_keys:
            return True  # the same hook delivered twice counts once
        keys = json.dumps([*seen_keys, key][-STEP_KEYS_KEPT:])
        cursor.execute(
            _QUIET_STEP_COUNT_JSONB if connection.vendor == "postgresql" else _QUIET_STEP_COUNT,
            [keys, tracking_pk],
        )
        now = timezone.now()
        last_seen = min(aware(agent_seen), aware(session_seen))
        if now - last_seen >= timedelta(seconds=1):
            Agent.objects.filter(pk=agent_pk).update(last_seen_at=now)
            Session.objects.filter(pk=session_pk).update(last_seen_at=now)
    return True


def on_user_prompt(*, agent: Agent) -> Injection:
    """A new prompt clears the error cooldown and cancels a countdown; may carry a reminder."""
    with transaction.atomic(savepoint=False):
        tracking = tracking_for(agent)
        tracking.last_error_at = None
        tracking.consecutive_continuations = 0
        changes = _cancel_counting(agent, reason="the user sent a new prompt")
        text, recorded = _compaction_if_pending(agent, tracking)
        if text is None:
            text, recorded = _take_reminder_if_due(agent, tracking)
        tracking.save()
        if recorded:
            changes.merge(_changed(agent, recorded))
    return Injection(text, changes)


def on_pre_compact(*, agent: Agent) -> Changes:
    with transaction.atomic(savepoint=False):
        tracking = tracking_for(agent)
        tracking.compaction_pending = True
        tracking.save(update_fields=["compaction_pending"])
    return Changes()


def on_session_start(*, agent: Agent, source: str) -> Injection:
    """After compaction (SessionStart with source "compact") the list is injected again."""
    with transaction.atomic(savepoint=False):
        tracking = tracking_for(agent)
        if source == "compact":
            tracking.compaction_pending = True
        text, recorded = _compaction_if_pending(agent, tracking)
        tracking.save()
    return Injection(text, _changed(agent, recorded) if recorded else Changes())


def on_error(*, agent: Agent) -> Changes:
    with transaction.atomic(savepoint=False):
        tracking = tracking_for(agent)
        tracking.last_error_at = timezone.now()
        tracking.save(update_fields=["last_error_at"])
    return Changes()


Recorded = tuple[str | None, list[EnforcerEvent]]


def _compaction_if_pending(agent: Agent, tracking: AgentTracking) -> Recorded:
    if not tracking.compaction_pending:
        return None, []
    tracking.compaction_pending = False
    text = compaction_text(current_todos(agent))
    event = _record(
        agent, EnforcerEvent.Kind.REMINDER, "Re-injected the todo list after compaction."
    )
    return text, [event]


def _is_stale(tracking: AgentTracking) -> bool:
    return tracking.steps_since_write >= settings.AGENTBOARD_REMINDER_STEPS_SINCE_WRITE


def _mark_stale(agent: Agent, tracking: AgentTracking) -> list[EnforcerEvent]:
    """Raise the stale-list flag once the reminder threshold is reached."""
    if _is_stale(tracking) and "stale_list" not in tracking.current_flags:
        return _set_flags(agent, tracking, [*tracking.current_flags, "stale_list"])
    return []


def _take_reminder_if_due(agent: Agent, tracking: AgentTracking) -> Recorded:
    events = _mark_stale(agent, tracking)
    due = tracking.steps_since_reminder >= settings.AGENTBOARD_REMINDER_STEPS_BETWEEN
    if not _is_stale(tracking) or not due:
        return None, events
    tracking.steps_since_reminder = 0
    items = current_todos(agent)
    event = _record(
        agent,
        EnforcerEvent.Kind.REMINDER,
        f"Reminded the agent to update its list "
        f"({tracking.steps_since_write} steps without a write)."
        if items
        else "Suggested starting a todo list.",
    )
    return reminder_text(items, steps=tracking.steps_since_write), [*events, event]


def session_enforcer_switch(*, session: Session, enabled: bool, by: str) -> Changes:
    with transaction.atomic(savepoint=False):
        Session.objects.filter(pk=session.pk).update(enforcer_enabled=enabled)
        changes = Changes(sessions={session.pk})
        main = session.agents.filter(agent_id=session.session_id).first()
        if main is None:
            return changes
        event = _record(
            main,
            EnforcerEvent.Kind.CONTINUATION,
            f"{by} switched the continuation enforcer {'on' if enabled else 'off'}.",
        )
        changes.merge(_changed(main, [event]))
        if not enabled:
            for agent in session.agents.all():
                changes.merge(_cancel_counting(agent, reason=f"{by} switched the enforcer off"))
    return changes


def other_enforcer_found(*, agent: Agent, name: str) -> Changes:
    """The agent's own continuation enforcer (e.g. oh-my-opencode's) runs in this session:
    Agentboard stops any countdown of its own there and never starts another, and says so."""
    with transaction.atomic(savepoint=False):
        session = agent.session
        if session.other_enforcer == name:
            return Changes()
        session.other_enforcer = name
        Session.objects.filter(pk=session.pk).update(other_enforcer=name)
        event = _record(
            agent,
            EnforcerEvent.Kind.CONTINUATION,
            f"{name}'s own enforcer runs in this session, so Agentboard will not continue it.",
        )
        changes = _changed(agent, [event])
        changes.sessions.add(session.pk)
        for other in session.agents.all():
            changes.merge(_cancel_counting(other, reason=f"{name}'s own enforcer runs here"))
    return changes


# --- the continuation enforcer ------------------------------------------------------------------


def _cancel_counting(agent: Agent, *, reason: str) -> Changes:
    """Cancel the agent's running countdown, if any; its held Stop hook is woken."""
    with transaction.get_connection().cursor() as cursor:
        # Asked on every write and prompt: plain SQL, as compiling it costs more than running it.
        cursor.execute(
            "SELECT id FROM todos_continuation WHERE agent_id = %s AND status = %s",
            [agent.pk, Continuation.Status.COUNTING],
        )
        pks = [pk for (pk,) in cursor.fetchall()]
    if not pks:
        return Changes()
    cancelled = Continuation.objects.filter(pk__in=pks, status=Continuation.Status.COUNTING).update(
        status=Continuation.Status.CANCELLED, reason=reason, resolved_at=timezone.now()
    )
    if not cancelled:
        return Changes()
    event = _record(agent, EnforcerEvent.Kind.CONTINUATION, f"Countdown cancelled: {reason}.")
    changes = _changed(agent, [event])
    changes.resolved_continuations |= set(pks)
    changes.inbox_sessions.add(agent.session_id)
    return changes


def _skip_reason(
    agent: Agent,
    tracking: AgentTracking,
    items: list[dict],
    stop_hook_active: bool,
    background_tasks: int = 0,
) -> str | None:
    session = agent.session
    unfinished = [i for i in items if i["status"] in (TodoStatus.PENDING, TodoStatus.IN_PROGRESS)]
    if not settings.AGENTBOARD_ENFORCER_ENABLED:
        return "the enforcer is switched off on this server"
    if not session.enforcer_enabled:
        return "the enforcer is switched off for this session"
    if session.other_enforcer:
        # Two enforcers must never both continue an agent: the one inside it goes first.
        return f"{session.other_enforcer}'s own enforcer looks after this session"
    if not unfinished:
        return "every task is done" if items else "there is no todo list"
    if session.permission_mode == PermissionMode.PLAN:
        return "the session is in plan mode"
    if agent.agent_type in settings.AGENTBOARD_READ_ONLY_AGENT_TYPES:
        return f"a {agent.agent_type} agent cannot edit files"
    if (
        stop_hook_active
        and tracking.consecutive_continuations >= settings.AGENTBOARD_CONTINUATION_LIMIT
    ):
        return f"it was already continued {tracking.consecutive_continuations} times in a row"
    if tracking.last_error_at and timezone.now() - tracking.last_error_at < timedelta(
        seconds=settings.AGENTBOARD_ERROR_COOLDOWN_SECONDS
    ):
        return "an error was reported moments ago"
    if background_tasks:
        return "its background tasks are still running"
    if agent.children.filter(status=Agent.Status.RUNNING).exists():
        return "its subagents are still running"
    if tracking.continued_at_revision == agent.todo_revision and stop_hook_active:
        return "it was already asked to continue and has not updated its list since"
    return None


def continuation_begin(
    *,
    agent_pk: int,
    stop_hook_active: bool,
    background_tasks: int = 0,
    countdown: float | None = None,
) -> ContinuationChange:
    """A Stop arrived: start a countdown (status counting) or record why the agent may stop.
    `countdown`: its seconds, when the hook cannot wait the server's whole countdown."""
    with transaction.atomic(savepoint=False):
        agent = Agent.objects.select_for_update().select_related("session").get(pk=agent_pk)
        tracking = tracking_for(agent)
        if not stop_hook_active:
            tracking.consecutive_continuations = 0
        changes = _cancel_counting(agent, reason="a newer stop arrived")
        items = current_todos(agent)
        unfinished = sum(
            1 for i in items if i["status"] in (TodoStatus.PENDING, TodoStatus.IN_PROGRESS)
        )
        events = []
        if unfinished:
            events += _set_flags(
                agent, tracking, [*{*tracking.current_flags, "stopped_unfinished"}]
            )
        reason = _skip_reason(agent, tracking, items, stop_hook_active, background_tasks)
        now = timezone.now()
        if reason is None:
            continuation = Continuation.objects.create(
                agent=agent,
                status=Continuation.Status.COUNTING,
                unfinished=unfinished,
                todo_revision=agent.todo_revision,
                deadline=now
                + timedelta(
                    seconds=settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS
                    if countdown is None
                    else countdown
                ),
            )
            changes.inbox_sessions.add(agent.session_id)
            changes.begun_continuations.add(continuation.pk)
        else:
            continuation = Continuation.objects.create(
                agent=agent,
                status=Continuation.Status.SKIPPED,
                reason=reason,
                unfinished=unfinished,
                todo_revision=agent.todo_revision,
                resolved_at=now,
            )
            if unfinished:
                events.append(
                    _record(agent, EnforcerEvent.Kind.CONTINUATION, f"Let it stop: {reason}.")
                )
                changes.stopped_unfinished.add(continuation.pk)
                # The header's count is re-rendered: open pages look for what now waits.
                changes.inbox_sessions.add(agent.session_id)
        tracking.save()
    return ContinuationChange(continuation, changes.merge(_changed(agent, events)))


def continuation_finish(*, continuation_pk: int) -> ContinuationChange:
    """The countdown ran out: continue the agent, exactly once, unless it was cancelled."""
    with transaction.atomic(savepoint=False):
        continuation = Continuation.objects.select_related("agent", "agent__session").get(
            pk=continuation_pk
        )
        agent = continuation.agent
        prompt = continuation_prompt(current_todos(agent))
        sent = Continuation.objects.filter(
            pk=continuation_pk, status=Continuation.Status.COUNTING
        ).update(status=Continuation.Status.SENT, prompt=prompt, resolved_at=timezone.now())
        changes = Changes()
        if sent:
            # Continued: its turn goes on (its line says "Thinking" again, not "Idle").
            Agent.objects.filter(pk=agent.pk).update(turn_ended_at=None)
            tracking = tracking_for(agent)
            tracking.consecutive_continuations += 1
            tracking.continued_at_revision = continuation.todo_revision
            tracking.save()
            event = _record(
                agent,
                EnforcerEvent.Kind.CONTINUATION,
                f"Continued the agent ({continuation.unfinished} task"
                f"{'s' if continuation.unfinished != 1 else ''} left).",
            )
            changes = _changed(agent, [event])
            changes.inbox_sessions.add(agent.session_id)
        continuation.refresh_from_db()
    return ContinuationChange(continuation, changes)


def continuation_cancel(
    *, continuation_pk: int, by: str, actor: Any = None, via: Via | None = None
) -> CancelResult:
    """The lead clicked Cancel (from any server process); its held Stop hook is woken."""
    with transaction.atomic(savepoint=False):
        continuation = Continuation.objects.select_related("agent", "agent__session").get(
            pk=continuation_pk
        )
        cancelled = Continuation.objects.filter(
            pk=continuation_pk, status=Continuation.Status.COUNTING
        ).update(
            status=Continuation.Status.CANCELLED,
            reason=f"cancelled by {by}",
            resolved_at=timezone.now(),
        )
        if not cancelled:
            return CancelResult(cancelled=False)
        event = _record(
            continuation.agent, EnforcerEvent.Kind.CONTINUATION, f"Countdown cancelled by {by}."
        )
        changes = _changed(continuation.agent, [event])
        changes.resolved_continuations.add(continuation_pk)
        changes.inbox_sessions.add(continuation.agent.session_id)
        if actor is not None:
            audit(
                AuditAction.COUNTDOWN_CANCELLED, actor=actor, via=via,
                session=continuation.agent.session, about=f"countdown:{continuation_pk}",
                summary=continuation.reason,
            )  # fmt: skip
    return CancelResult(cancelled=True, changes=changes)


# --- hooks ---------------------------------------------------------------------------------------

TODO_TOOLS = frozenset({"TodoWrite", "TaskCreate", "TaskUpdate"})
CONTEXT_EVENTS = frozenset({"PostToolUse", "UserPromptSubmit", "SessionStart"})


def additional_context(event: str, text: str | None) -> dict:
    """Hook output that hands `text` to the model, for the events that can carry it."""
    if not text or event not in CONTEXT_EVENTS:
        return {}
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def on_hook(
    *, agent: Agent, event: str, tool_name: str = "", tool_use_id: str = "", source: str = ""
) -> Injection:
    """What a Claude Code hook means for the enforcer; returns context for the model, if any.

    Tool uses are the steps counted for reminders (a todo tool resets the count through its
    write instead); every sign of activity cancels a running countdown.
    """
    if event in {"PostToolUse", "PostToolUseFailure"}:
        if tool_name in TODO_TOOLS:
            return Injection(changes=on_activity(agent=agent))
        return on_step(agent=agent, key=tool_use_id or None, deliver=event in CONTEXT_EVENTS)
    if event == "UserPromptSubmit":
        return on_user_prompt(agent=agent)
    if event == "SessionStart":
        return on_session_start(agent=agent, source=source)
    if event == "PreCompact":
        return Injection(changes=on_pre_compact(agent=agent))
    if event == "StopFailure":
        return Injection(changes=on_error(agent=agent))
    if event in {"PreToolUse", "Notification", "SubagentStart"}:
        return Injection(changes=on_activity(agent=agent))
    return Injection()
