"""`POST /hooks/opencode`: the events the Agentboard plugin for opencode forwards.

Sessions, subagents and todo lists show on the board like Claude Code's. Two events are held
like Claude Code's hooks: `session.idle` while the continuation countdown runs (the answer
says whether to continue, and with which prompt), and `permission.asked` until someone decides
on the inbox (the answer is opencode's own reply: once, always or reject with a message).

A subagent (opencode's task tool) runs in a session of its own whose `parentID` names the
session that started it: on the board it is an agent of that session.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.utils import timezone

from dashboard.activity.summaries import StepDraft, step_draft
from dashboard.core.changes import Changes, Outcome
from dashboard.core.gates import tool_refusal
from dashboard.core.origin import origin_note
from dashboard.core.services import (
    KNOWN_AGENTS_SIZE,
    ResolvedAgent,
    agent_resolve_for_update,
    agent_touch,
    known_agent,
    session_describe,
)
from dashboard.core.writer import write, write_behind
from dashboard.integrations.claude_code.hooks import (
    agent_endpoint,
    held,
    hold_permission,
    read_payload,
    validate,
)
from dashboard.integrations.opencode.schemas import (
    HANDLED,
    ActivityEvent,
    Envelope,
    ErrorEvent,
    EventType,
    GateEvent,
    GateProperties,
    IdleEvent,
    OtherEnforcerEvent,
    PermissionEvent,
    PermissionProperties,
    SessionEvent,
    TodoEvent,
    ToolEvent,
    ToolProperties,
)
from dashboard.live.waiting import hold_for, stop_hook_answer
from dashboard.models import Agent, Client
from planmode.permissions import permission_expire, permission_request_open, permission_state
from todos import enforcer
from todos.models import TodoRevision
from todos.selectors import current_todos
from todos.services import check_strict_policy, todo_items_redacted, todo_list_store

# opencode's titles before it has named a session; the board waits for the real one.
PLACEHOLDER_TITLE = re.compile(r"^(New|Child) session - ")
# A subagent's session is titled "<task> (@<agent> subagent)".
SUBAGENT_TITLE = re.compile(r"\(@([\w.-]{1,100}) subagent\)\s*$")
# opencode's permission names for the tools the inbox knows how to show.
TOOL_NAMES = {"bash": "Bash", "edit": "Edit", "write": "Write", "webfetch": "WebFetch"}

# A subagent's opencode session id -> the board session it is an agent of, once placed there:
# its steps then cost no query, like a main agent's (`known_agent`). A subagent never moves.
_subagent_sessions: dict[str, str] = {}


@agent_endpoint("Send opencode events with POST.")
async def opencode_hook(request: HttpRequest, owner: AbstractBaseUser) -> JsonResponse:
    payload = read_payload(
        request,
        what="opencode event",
        shape="Send each opencode event as a JSON object with a 'type' and 'properties'.",
    )
    if validate(EventType, payload).type not in HANDLED:
        return JsonResponse({})
    event = validate(Envelope, {"event": payload}).event
    output = await _handle(owner, event)
    # A session of its own (not a subagent's child session) is where its project is noted.
    if isinstance(event, SessionEvent) and not event.properties.info.parentID:
        await origin_note(
            owner=owner,
            session_id=event.properties.info.id,
            headers=request.headers,
            where="opencode plugin",
        )
    return JsonResponse(output)


async def _handle(owner: AbstractBaseUser, event: Any) -> dict[str, Any]:
    if isinstance(event, SessionEvent):
        await write(_session_event, owner=owner, event=event)
    elif isinstance(event, TodoEvent):
        await write(_todos_replace, owner=owner, event=event)
    elif isinstance(event, IdleEvent):
        return await _idle(owner, event)
    elif isinstance(event, PermissionEvent):
        return await _permission(owner, event.properties)
    elif isinstance(event, ToolEvent):
        await _tool(owner, event.properties)
    elif isinstance(event, GateEvent):
        return (await write(_gate, owner=owner, call=event.properties)).value
    elif isinstance(event, ErrorEvent | ActivityEvent | OtherEnforcerEvent):
        await write(_enforcer_event, owner=owner, event=event)
    return {}


# --- sessions and subagents ------------------------------------------------------------------


def _place(owner: AbstractBaseUser, opencode_id: str) -> tuple[str, str]:
    """(board session id, agent id) of an opencode session: a subagent's own session is an
    agent of the session that started it; any other is a session with its main agent."""
    started_by = (
        Agent.objects.filter(agent_id=opencode_id, session__owner=owner)
        .exclude(session__session_id=opencode_id)
        .values_list("session__session_id", flat=True)
        .first()
    )
    return (started_by or opencode_id, opencode_id)


def _observe(
    *,
    owner: AbstractBaseUser,
    opencode_id: str,
    parent_id: str | None = None,
    cwd: str = "",
    title: str = "",
    notify: bool = False,
    turn_ended: bool | None = None,
) -> tuple[ResolvedAgent, Changes]:
    """Any event's news about its session and agent (inside the writer's transaction);
    `turn_ended` as `agent_touch` takes it."""
    assert transaction.get_connection().in_atomic_block
    if parent_id:
        session_id, agent_id = _place(owner, parent_id)[0], opencode_id
    else:
        session_id, agent_id = _place(owner, opencode_id)
    subagent = SUBAGENT_TITLE.search(title) if agent_id != session_id else None
    resolved = agent_resolve_for_update(
        owner=owner,
        session_id=session_id,
        agent_id=agent_id,
        # opencode's agents are lower case ("explore"); the board's read-only types are not.
        agent_type=subagent.group(1).capitalize() if subagent else "",
        cwd=cwd,
        client=Client.OPENCODE,
    )
    agent = resolved.agent
    session = agent.session
    if agent_id != session_id:
        if len(_subagent_sessions) >= KNOWN_AGENTS_SIZE:
            _subagent_sessions.clear()
        _subagent_sessions[agent_id] = session_id
    fields = []
    if session.ended_at is not None:
        fields.append("ended_at")  # any later event brings it back (`agent_touch` saves it)
    if (
        agent_id == session_id
        and title
        and not PLACEHOLDER_TITLE.match(title)
        and session_describe(session=session, title=title)
    ):
        fields.append("title")
    if agent.status == Agent.Status.STOPPED:
        agent.status, agent.stopped_at = Agent.Status.RUNNING, None
        agent.save(update_fields=["status", "stopped_at"])
        fields.append("status")
    agent_touch(agent=agent, turn_ended=turn_ended)
    changes = Changes()
    if (
        notify
        or fields
        or turn_ended is not None
        or resolved.agent_created
        or resolved.session_created
    ):
        changes = resolved.changes()
    if "title" in fields:
        changes.sessions.add(session.pk)  # its header, row and search entry name it anew
    return resolved, changes


def _session_event(*, owner: AbstractBaseUser, event: SessionEvent) -> Outcome[None]:
    info = event.properties.info
    resolved, changes = _observe(
        owner=owner,
        opencode_id=info.id,
        parent_id=info.parentID,
        cwd=info.directory,
        title=info.title,
    )
    if event.type == "session.deleted":
        changes.merge(_end(resolved.agent))
    return Outcome(None, changes)


def _end(agent: Agent) -> Changes:
    """A deleted session ends (with every agent of it); a deleted subagent session stops."""
    now = timezone.now()
    session = agent.session
    ending = [agent]
    if agent.agent_id == session.session_id:
        session.ended_at, session.ended_quietly = now, False
        session.save(update_fields=["ended_at", "ended_quietly"])
        ending += list(session.agents.exclude(pk=agent.pk).filter(status=Agent.Status.RUNNING))
    changes = Changes(sessions={session.pk})
    for each in ending:
        changes.merge(enforcer.on_activity(agent=each))
        if each.status != Agent.Status.STOPPED:
            each.status, each.stopped_at = Agent.Status.STOPPED, now
            each.save(update_fields=["status", "stopped_at"])
        changes.agent(each.pk, session.pk)
    return changes


# --- todo lists ------------------------------------------------------------------------------


def _todos_replace(*, owner: AbstractBaseUser, event: TodoEvent) -> Outcome[None]:
    """opencode's todowrite: the complete new list, stored as a revision when it changed."""
    resolved, changes = _observe(owner=owner, opencode_id=event.properties.sessionID)
    # Compared as stored: redacted.
    new = todo_items_redacted([item.as_wire() for item in event.properties.todos])
    current = current_todos(resolved.agent)
    if new == current:
        return Outcome(None, changes)
    if settings.AGENTBOARD_TODO_POLICY == "strict":
        check_strict_policy(event.properties.todos)
    written = todo_list_store(
        resolved=resolved, old_items=current, new_items=new, source=TodoRevision.Source.HOOK
    )
    return Outcome(None, changes.merge(written.changes))


# --- tool calls: the agent's steps ------------------------------------------------------------

STEP_OUTCOMES = {"running": "running", "completed": "ok", "error": "failed"}


async def _tool(owner: AbstractBaseUser, call: ToolProperties) -> None:
    outcome, error = STEP_OUTCOMES[call.status], call.error
    if outcome == "ok" and call.exit:
        # A command that exited non-zero failed (the same one again and again is a loop).
        outcome, error = "failed", f"Exit code {call.exit}"
    step = step_draft(
        tool_use_id=call.callID,
        tool_name=call.tool,
        tool_input=call.input,
        at=timezone.now(),
        outcome=outcome,
        error=error,
    )
    if step is not None:
        await write(_step_record, owner=owner, opencode_id=call.sessionID, step=step)


def _agent_place(*, owner: AbstractBaseUser, opencode_id: str) -> tuple[int, int, Changes]:
    """(agent pk, session pk) of an opencode session's agent, main or subagent, and what
    placing it changed: no query for one this process knows; a subagent's session is placed
    first."""
    session_id = _subagent_sessions.get(opencode_id, opencode_id)
    known = known_agent(owner=owner, session_id=session_id, agent_id=opencode_id)
    if known is not None:
        return known[0], known[1], Changes()
    resolved, changes = _observe(owner=owner, opencode_id=opencode_id)
    return resolved.agent.pk, resolved.agent.session_id, changes


def _step_record(*, owner: AbstractBaseUser, opencode_id: str, step: StepDraft) -> Outcome[None]:
    """The writer stores the batch's steps together."""
    agent_pk, session_pk, changes = _agent_place(owner=owner, opencode_id=opencode_id)
    return Outcome(None, changes.step(step.report(agent=agent_pk, session=session_pk)))


def _gate(*, owner: AbstractBaseUser, call: GateProperties) -> Outcome[dict[str, Any]]:
    """Whether a tool call of a gated session runs: `{"refuse": <sentence>}` for the model to
    read as the call's error (recorded), or `{}` once the session runs again (a reviewer raised
    its budget or let it continue), and the plugin stops asking."""
    _, session_pk, changes = _agent_place(owner=owner, opencode_id=call.sessionID)
    refusal = tool_refusal(session_pk, owner=owner)
    return Outcome({"refuse": refusal} if refusal else {}, changes)


# --- the continuation enforcer ---------------------------------------------------------------


def _idle_seen(*, owner: AbstractBaseUser, event: IdleEvent) -> Outcome[tuple[int, bool] | None]:
    """The agent's pk and whether it is in a streak of continuations, or None for a
    subagent's session (a prompt there would not reach the session that waits for it)."""
    resolved, changes = _observe(
        owner=owner, opencode_id=event.properties.sessionID, turn_ended=True
    )
    agent = resolved.agent
    if agent.agent_id != agent.session.session_id:
        return Outcome(None, changes)
    streak = enforcer.tracking_for(agent).consecutive_continuations > 0
    return Outcome((agent.pk, streak), changes)


async def _idle(owner: AbstractBaseUser, event: IdleEvent) -> dict[str, Any]:
    """Held for the countdown: `{"continue": <prompt>}` when it ran out, `{}` when the agent
    may stop (a skip rule, a cancel, activity in the session)."""
    seen = (await write(_idle_seen, owner=owner, event=event)).value
    if seen is None:
        return {}
    agent_pk, streak = seen
    answer = await stop_hook_answer(agent_pk=agent_pk, stop_hook_active=streak)
    if answer.get("decision") == "block":
        return {"continue": answer["reason"]}
    return {}


def _enforcer_event(
    *, owner: AbstractBaseUser, event: ErrorEvent | ActivityEvent | OtherEnforcerEvent
) -> Outcome[None]:
    session_id = event.properties.sessionID
    if session_id is None:
        return Outcome(None)
    prompt = isinstance(event, ActivityEvent) and event.properties.kind == "prompt"
    resolved, changes = _observe(
        owner=owner, opencode_id=session_id, turn_ended=False if prompt else None
    )
    agent = resolved.agent
    if isinstance(event, ErrorEvent):
        changes.merge(enforcer.on_error(agent=agent))
    elif isinstance(event, OtherEnforcerEvent):
        changes.merge(enforcer.other_enforcer_found(agent=agent, name=event.properties.name))
    elif prompt:
        changes.merge(enforcer.on_user_prompt(agent=agent).changes)
    else:
        changes.merge(enforcer.on_activity(agent=agent))
    return Outcome(None, changes)


# --- permission requests ---------------------------------------------------------------------


def tool_request(asked: PermissionProperties) -> tuple[str, dict[str, Any], list[Any]]:
    """opencode's request as the inbox shows it: a tool name, its input, and the "always"
    choice opencode offers, as a rule the inbox can show."""
    tool_name = TOOL_NAMES.get(asked.permission, asked.permission)
    command = asked.metadata.get("command")
    if tool_name == "Bash" and isinstance(command, str):
        tool_input: dict[str, Any] = {"command": command}
        description = asked.metadata.get("description")
        if isinstance(description, str):
            tool_input["description"] = description
    else:
        tool_input = {"patterns": asked.patterns, **asked.metadata}
    suggestions: list[Any] = []
    if asked.always:
        rules = [{"toolName": tool_name, "ruleContent": pattern} for pattern in asked.always]
        suggestions = [
            {"type": "addRules", "rules": rules, "behavior": "allow", "destination": "session"}
        ]
    return tool_name, tool_input, suggestions


def _permission_open(
    *, owner: AbstractBaseUser, asked: PermissionProperties, held_for: float
) -> Outcome[dict[str, Any]]:
    resolved, changes = _observe(owner=owner, opencode_id=asked.sessionID)
    tool_name, tool_input, suggestions = tool_request(asked)
    opened = permission_request_open(
        agent=resolved.agent,
        tool_name=tool_name,
        tool_input=tool_input,
        suggestions=suggestions,
        held_for=held_for,
    )
    return Outcome(permission_state(opened.request), changes.merge(opened.changes))


def opencode_reply(state: dict[str, Any]) -> dict[str, Any]:
    """The decision as opencode's permission reply, `{}` when nobody decided in time."""
    if state["status"] == "allowed":
        return {"reply": "always" if state["updated_permissions"] else "once"}
    if state["status"] == "denied":
        return {"reply": "reject", "message": state["message"]}
    return {}


async def _permission(owner: AbstractBaseUser, asked: PermissionProperties) -> dict[str, Any]:
    """Held until someone decides on the inbox (or a team rule does at once). No decision
    within AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS answers `{}`: opencode keeps asking in its
    own window, and the request shows as expired. The plugin drops the request when opencode
    was answered there first, which expires it too."""
    wait = hold_for(settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS)
    state = await held(
        write_behind(_permission_open, owner=owner, asked=asked, held_for=wait),
        hold=functools.partial(hold_permission, wait=wait),
        expire=lambda request_id: write(permission_expire, request_id=request_id),
    )
    return opencode_reply(state)


def opencode_place(*, owner: AbstractBaseUser, opencode_id: str) -> tuple[str, str]:
    """(board session id, agent id) of an opencode session, as its events are placed: a
    subagent's own session is an agent of the session that started it (inside a transaction)."""
    session_id = _subagent_sessions.get(opencode_id)
    if session_id is not None:
        return session_id, opencode_id
    return _place(owner, opencode_id)
