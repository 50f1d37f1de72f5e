"""`POST /hooks/claude-code`: Claude Code's hook input, from native HTTP hooks or `agentboard hook`.

The view is async so that a held PermissionRequest (a plan waiting for a reviewer, up to
minutes) costs an idle coroutine, not a worker thread: hundreds can wait at once. ORM work runs
in short `sync_to_async` calls around the wait.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import RequestDataTooBig
from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, ValidationError

from dashboard.activity.selectors import agents_in_tool_call
from dashboard.activity.services import step_interrupted
from dashboard.activity.summaries import StepDraft, bounded_text, step_draft
from dashboard.core import reader
from dashboard.core.changes import Changes, Outcome
from dashboard.core.edge import load_json
from dashboard.core.errors import (
    ServiceError,
    first_error_sentence,
    internal_error,
    pydantic_detail,
    unauthenticated,
)
from dashboard.core.gates import tool_refusal
from dashboard.core.headers import HOOK_TIMEOUT_HEADER
from dashboard.core.loops import Arrivals, keep
from dashboard.core.origin import OriginNote, held_origin_noted, noted_as_held
from dashboard.core.redaction import redact
from dashboard.core.services import (
    ID_PATTERN,
    ResolvedAgent,
    agent_resolve_for_update,
    agent_touch,
    known_agent,
    session_describe,
    token_owner,
    validate_id,
)
from dashboard.core.visibility import audiences_of
from dashboard.core.waits import client_waits_from
from dashboard.core.writer import write, write_behind
from dashboard.integrations.claude_code.decision import (
    permission_decision,
    refusal_decision,
    tool_permission_decision,
)
from dashboard.integrations.claude_code.schemas import (
    CwdChangedInput,
    ExitPlanModeToolInput,
    HookEvent,
    HookInput,
    PermissionRequestInput,
    TaskCreateToolInput,
    TaskCreateToolResponse,
    TaskEventInput,
    TaskUpdateToolInput,
    TeammateIdleInput,
    TodoWriteToolInput,
    ToolHookInput,
)
from dashboard.live.waiting import (
    client_waits,
    hold_for,
    stop_hook_answer,
    wait_for_decision,
    wait_while_paused,
)
from dashboard.live.watch import PERMISSION
from dashboard.models import Agent, PermissionMode, Session
from dashboard.steering import services as steering
from planmode.allow_once import SESSIONS_TTL, allowance_take
from planmode.models import InboxChoice, Plan, PlanStatus
from planmode.permissions import (
    agent_moved_on,
    permission_expire,
    permission_request_open,
    permission_state,
    stopped_messages_take,
    terminal_wait_record,
)
from planmode.services import (
    PlanChange,
    plan_expire,
    plan_hold,
    plan_state,
    plan_submit,
)
from todos import enforcer
from todos.models import Todo, TodoRevision
from todos.services import (
    check_strict_policy,
    current_todos,
    revision_key_used,
    todo_items_redacted,
    todo_list_amend,
    todo_list_store,
    todo_lists_read_alike,
)

logger = logging.getLogger(__name__)

Model = TypeVar("Model", bound=BaseModel)
Output = dict[str, Any]
Handler = Callable[[AbstractBaseUser, dict[str, Any]], Awaitable[Output]]

LIFECYCLE_EVENTS = frozenset(
    {
        "SessionStart",
        "SessionEnd",
        "SubagentStart",
        "SubagentStop",
        "UserPromptSubmit",
        "Stop",
        "PreCompact",
        "Notification",
    }
)
TODO_TOOLS = frozenset({"TodoWrite", "TaskCreate", "TaskUpdate"})
# Events that do not tell that an agent moved on from a plan or permission request waiting for a
# person: Claude Code sends them while its own prompt and the held hook both wait (or as it
# exits: the held request then closes and the plan or request expires).
# (PreToolUse: the agent's other tool calls, made in parallel, may start while one waits.)
NOT_MOVING_ON = frozenset({"PermissionRequest", "Notification", "SessionEnd", "PreToolUse"})
# Other events that only matter to the continuation enforcer: every tool use is a step for the
# todo reminders, and an API error starts its cooldown.
ENFORCER_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure", "StopFailure"})
# Each tool call is a step of the agent's activity: how each event leaves it.
STEP_OUTCOMES = {
    "PreToolUse": "running",
    "PostToolUse": "ok",
    "PostToolUseFailure": "failed",
    "PermissionDenied": "denied",
}
# Events after which none of the agent's tool calls is still running.
INTERRUPTING = frozenset({"Stop", "SubagentStop", "UserPromptSubmit", "SessionEnd"})
# How an event leaves the agent's turn: ended (it waits for a prompt), or a new one begun.
TURN_ENDED_BY = {
    "Stop": True,
    "SubagentStop": True,
    "StopFailure": True,
    "TeammateIdle": True,
    "UserPromptSubmit": False,
}
# Events that tell where the session works and what its teammates do: a line of its history
# each, and its header or a teammate's card changes.
SESSION_EVENTS = frozenset({"CwdChanged", "TeammateIdle"})
# The permission mode this process last stored for each session (by pk), and when (monotonic):
# a hook that says the same mode needs no write of its own, so the hot path (a known agent's
# step) stays free of queries; one that says another goes the slower way, which stores it.
# Another server process may have stored another mode since (a hook of the session went
# there): so what this process knows holds for MODE_KNOWN_SECONDS, then the next hook stores
# its mode again, and the board is never wrong for longer.
_session_modes: dict[int, tuple[str, float]] = {}
SESSION_MODES_SIZE = 50_000
MODE_KNOWN_SECONDS = 2.0
ALLOWED_ONCE_REASON = "Allowed once from Agentboard after auto mode refused it."
# At most this many people's wish to see refusals is read per refusal.
REFUSAL_WATCHERS = 500
# Hooks held until a person decides arrive in bursts (a team restarting its agents, each
# submitting its plan): this many at a time do their arrival work (validation, redaction, the
# write), so the other agents' hooks pass between them (`Arrivals`).
ARRIVING_AT_ONCE = 4
arrivals = Arrivals(ARRIVING_AT_ONCE)


# --- the view ------------------------------------------------------------------------------

AgentView = Callable[[HttpRequest, AbstractBaseUser], Awaitable[JsonResponse]]


def agent_endpoint(post_only: str) -> Callable[[AgentView], Callable[..., Awaitable[JsonResponse]]]:
    """A hook endpoint of any agent: POST only (`post_only` says so otherwise), authenticated
    by the request's bearer token, the view called with the token's owner and its refusals
    answered as JSON. Exempt from CSRF because it never looks at cookies: a forged cross-site
    request cannot carry the token."""

    def decorate(view: AgentView) -> Callable[..., Awaitable[JsonResponse]]:
        @csrf_exempt
        @functools.wraps(view)
        async def endpoint(request: HttpRequest) -> JsonResponse:
            if request.method != "POST":
                return error_response(ServiceError("method_not_allowed", post_only, status=405))
            owner = await token_owner(bearer_token(request))
            if owner is None:
                return error_response(unauthenticated())
            client_waits.set(client_waits_from(request.headers.get(HOOK_TIMEOUT_HEADER)))
            try:
                return await view(request, owner)
            except ServiceError as error:
                return error_response(error)
            except Exception:
                # A hook client reads JSON, never Django's error page.
                logger.exception("a hook request failed: %s", request.path)
                return error_response(internal_error())

        return endpoint

    return decorate


@agent_endpoint("Send hook input with POST.")
async def claude_code_hook(request: HttpRequest, owner: AbstractBaseUser) -> JsonResponse:
    payload = read_payload(request)
    handler = _handler_for(payload)
    if handler is None:
        return JsonResponse({})
    note = OriginNote(owner, payload.get("session_id"), request.headers, "Claude Code hook")
    if handler in _HOLDING:
        async with arrivals.arriving():
            with noted_as_held(note):
                output = await handler(owner, payload)
    else:
        output = await handler(owner, payload)
    await note()
    return JsonResponse(output)


def bearer_token(request: HttpRequest) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def error_response(error: ServiceError) -> JsonResponse:
    return JsonResponse({"error": error.as_dict()}, status=error.status)


def read_payload(
    request: HttpRequest,
    *,
    what: str = "hook input",
    shape: str = "The hook input must be a JSON object with a 'hook_event_name'.",
) -> dict[str, Any]:
    """The request's JSON object (`what` it is, for the errors; `shape`: what to send instead
    of something else than an object)."""
    limit = settings.AGENTBOARD_MAX_BODY_BYTES
    too_large = ServiceError(
        "payload_too_large",
        f"The {what} is larger than the {limit} bytes this server accepts.",
        status=413,
    )
    try:
        declared = int(request.headers.get("Content-Length") or 0)
        body = b"" if declared > limit else request.body
    except (RequestDataTooBig, ValueError):
        raise too_large from None
    if declared > limit or len(body) > limit:
        raise too_large
    payload = load_json(body, what=what)
    if not isinstance(payload, dict):
        raise ServiceError("malformed_json", shape, status=400)
    return payload


def validate(model: type[Model], data: object, *, loc: tuple[str, ...] = ()) -> Model:
    """`data` as `model`, or a 422 naming the first field at fault. A hook input's session and
    agent ids are checked here too, before any handler looks them up (a NUL in one is a
    query PostgreSQL refuses)."""
    try:
        validated = model.model_validate(data)
    except ValidationError as exc:
        detail = [
            {"loc": ["body", *loc, *item["loc"]], "msg": item["msg"]}
            for item in pydantic_detail(exc.errors())
        ]
        raise ServiceError(
            "validation_error", first_error_sentence(detail), detail=detail
        ) from None
    if isinstance(validated, HookInput):
        validate_id(validated.session_id, name="session_id")
        if validated.agent_id:  # "" is the main agent, as when it is absent
            validate_id(validated.agent_id, name="agent_id")
    return validated


# The handlers that hold their request until a person decides (`holding`).
_HOLDING: set[Handler] = set()


def holding(handler: Handler) -> Handler:
    """Mark a handler that holds its request: its arrival is let in a few at a time."""
    _HOLDING.add(handler)
    return handler


def _handler_for(payload: Mapping[str, Any]) -> Handler | None:
    """The handler for this event and tool, or None for the many Agentboard ignores."""
    picked = validate(HookEvent, payload)
    event, tool = picked.hook_event_name, picked.tool_name
    if event in LIFECYCLE_EVENTS:
        return _lifecycle
    if event in {"TaskCreated", "TaskCompleted"}:
        return _task_event
    if event == "PostToolUse" and tool in TODO_TOOLS:
        return _todo_tool_used
    if event == "PostToolUse" and tool == "ExitPlanMode":
        return _plan_tool_used
    if event == "PermissionRequest" and tool == "ExitPlanMode":
        return _plan_permission_request
    if event == "PermissionRequest":
        return _permission_request
    if event in ENFORCER_EVENTS:
        return _lifecycle
    if event in SESSION_EVENTS:
        return _session_event
    if event == "PermissionDenied":
        return _permission_denied
    if event in STEP_OUTCOMES:
        return tool_step
    return None


# --- lifecycle and activity ------------------------------------------------------------------


async def _lifecycle(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """Lifecycle and activity: update the board, then let the enforcer have its say."""
    hook = validate(HookInput, payload)
    if hook.hook_event_name in {"Stop", "SubagentStop"}:
        observed = await write(record_event, owner=owner, hook=hook)
        if observed.value is None:
            return {}
        steered = await stopping_steered(observed.value, client="Claude Code")
        if steered is not None:
            return steered
        background = payload.get("background_tasks")
        # Held for the continuation countdown; the answer is {} on any failure.
        return await stop_hook_answer(
            agent_pk=observed.value,
            stop_hook_active=payload.get("stop_hook_active") is True,
            background_tasks=len(background) if isinstance(background, list) else 0,
        )
    injection = await write(
        record_and_enforce, owner=owner, hook=hook, payload=payload, step=hook_step(payload)
    )
    answer = enforcer.additional_context(hook.hook_event_name, injection.text)
    if injection.stop is not None:
        answer |= stop_answer(injection.stop)
    return answer


def hook_step(payload: Mapping[str, Any]) -> StepDraft | None:
    """The step a tool event reports (its start or its end), summarised before it reaches the
    writer; None for other events."""
    outcome = STEP_OUTCOMES.get(str(payload.get("hook_event_name")))
    if outcome is None:
        return None
    if outcome == "failed" and payload.get("is_interrupt") is True:
        outcome = "interrupted"
    return step_draft(
        tool_use_id=payload.get("tool_use_id"),
        tool_name=payload.get("tool_name"),
        tool_input=payload.get("tool_input"),
        at=timezone.now(),
        outcome=outcome,
        error=payload.get("error"),
        cwd=str(payload.get("cwd") or ""),
    )


async def tool_step(
    owner: AbstractBaseUser,
    payload: dict[str, Any],
    *,
    client: str = "Claude Code",
    stop_ends_turn: bool = True,
    schema: type[HookInput] = HookInput,
) -> Output:
    """A tool call starts (PreToolUse) or is denied: a step on the board. Nothing to answer,
    unless a gate refuses the call (a budget spent, `dashboard.core.gates`): then the model
    reads why instead of its tool's result; or unless someone let this very call through once
    after auto mode refused it; or unless the board stopped or paused the agent. Another
    client's hook is read with its own `schema`."""
    hook = validate(schema, payload)
    step = hook_step(payload)
    if step is None:
        return {}
    answered = await write(
        step_record,
        owner=owner,
        hook=hook,
        step=step,
        tool_name=str(payload.get("tool_name") or ""),
        tool_input=payload.get("tool_input") or {},
        client=client,
        stop_ends_turn=stop_ends_turn,
    )
    if answered.value.paused_agent is not None:
        return await paused_call_held(
            answered.value.paused_agent, client=client, stop_ends_turn=stop_ends_turn
        )
    return answered.value.output


async def paused_call_held(
    agent_pk: int, *, client: str = "Claude Code", stop_ends_turn: bool = True
) -> Output:
    """A paused agent's tool call waits, holding no thread, for as long as its hook may: let
    go (`{}`, the call runs as it would have) the moment someone resumes the agent, refused
    with who paused it and why when the wait ends first. A stop sent meanwhile ends the turn
    (or, for a client whose tool hook cannot end it, `stop_ends_turn` False, refuses the call
    and stays queued for the turn's end)."""
    wait = hold_for(settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS)
    resumed = await wait_while_paused(agent_pk, wait)
    # One resume lets many held calls go at once: only those with something queued write.
    queued, _ = await reader.read(steering.queued_and_paused, agent_pk)
    if queued and not stop_ends_turn:
        pending = await reader.read(steering.stop_pending, agent_pk)
        if pending is not None:
            return _pre_tool_use_answer("deny", pending)
    elif queued:
        stopped = await write(
            steering.directives_claim, agent_pk=agent_pk, via=f"PreToolUse ({client})",
            messages=False,
        )  # fmt: skip
        if stopped.value.stop is not None:
            return tool_call_stop_answer(stopped.value.stop)
    if resumed:
        return {}
    paused = await reader.read(steering.pause_open_now, agent_pk)
    if paused is None:
        return {}  # resumed just as the wait ended
    return _pre_tool_use_answer("deny", steering.pause_words(paused))


async def stopping_steered(agent_pk: int, *, client: str) -> Output | None:
    """An agent stopping: continued with what someone said to it from the board (not an
    enforcer's continuation), or let stop when it is paused or was told to stop; None when
    the board has nothing to say and the enforcer decides."""
    flags = await reader.read(steering.steering_flags, agent_pk)
    if flags.stopping:
        # Told to stop in this turn: the turn ends here, and the stop with it.
        await write(steering.turn_over, agent_pk=agent_pk)
        return {}
    if flags.queued:
        said = await write(steering.stopping_claim, agent_pk=agent_pk, via=f"Stop ({client})")
        if said.value.stop is not None:
            return {}
        if said.value.messages:
            return {"decision": "block", "reason": said.value.context}
    if flags.paused:
        return {}
    return None


def stop_answer(sentence: str) -> Output:
    """Ends the agent's turn; Claude Code shows the sentence to its developer."""
    return {"continue": False, "stopReason": sentence}


def tool_call_stop_answer(sentence: str) -> Output:
    """Ends the turn at a tool call, which does not run: both pinned versions still run the
    tool of a PreToolUse answered `continue: false` alone, and stop only after it."""
    return stop_answer(sentence) | _pre_tool_use_answer("deny", sentence)


@dataclasses.dataclass(frozen=True)
class StepAnswer:
    """The hook's answer to a step; for a paused agent's tool call, the agent to hold it for."""

    output: Output
    paused_agent: int | None = None


def step_record(
    *,
    owner: AbstractBaseUser,
    hook: HookInput,
    step: StepDraft,
    tool_name: str = "",
    tool_input: object = None,
    client: str = "Claude Code",
    stop_ends_turn: bool = True,
) -> Outcome[StepAnswer]:
    """Record a step of an agent; for a tool call starting (`tool_name` with `tool_input`),
    the hook's answer: refused by a gate, the turn ended by a stop sent from the board (for a
    client whose tool hook cannot end it, `stop_ends_turn` False: the call refused with the
    stop, which stays queued until the turn's end claims it), held for a pause, allowed once
    after auto mode refused it, or `{}`.
    For an agent this process knows, no query at all unless its session has a refusal open:
    the writer stores the batch's steps together, and the gates and the allowances read sets
    this process keeps."""
    known = known_agent(owner=owner, session_id=hook.session_id, agent_id=hook.acting_agent_id)
    if known is not None and mode_stored(session_pk=known[1], mode=hook.permission_mode):
        agent_pk, session_pk = known
        changes = Changes()
    else:
        resolved, changes = hook_observe(owner=owner, hook=hook, notify=False, coarse=True)
        agent_pk, session_pk = resolved.agent.pk, resolved.agent.session_id
    refusal = (
        tool_refusal(session_pk, owner=owner) if hook.hook_event_name == "PreToolUse" else None
    )
    answer: Output = {}
    paused_agent = None
    starting = hook.hook_event_name == "PreToolUse"
    queued = starting and steering.has_queued(agent_pk)
    stopped = (
        steering.directives_claim(agent_pk=agent_pk, via=f"PreToolUse ({client})", messages=False)
        if queued and stop_ends_turn
        else Outcome(steering.Said())
    )
    if starting and stop_ends_turn and stopped.value.stop is None:
        # Told to stop earlier in this turn, and the model tries another call all the same.
        stopped.value = dataclasses.replace(stopped.value, stop=steering.stop_holding(agent_pk))
    pending_stop = steering.stop_pending(agent_pk) if queued and not stop_ends_turn else None
    if refusal:
        # The call never runs: the board shows it refused, not running.
        step = dataclasses.replace(step, outcome="denied", error=refusal)
        answer = _pre_tool_use_answer("deny", refusal)
    elif stopped.value.stop is not None:
        step = dataclasses.replace(step, outcome="denied", error=stopped.value.stop)
        answer = tool_call_stop_answer(stopped.value.stop)
        changes.merge(stopped.changes)
    elif pending_stop is not None:
        step = dataclasses.replace(step, outcome="denied", error=pending_stop)
        answer = _pre_tool_use_answer("deny", pending_stop)
    elif starting and steering.is_paused(agent_pk):
        paused_agent = agent_pk
    elif starting and allowance_take(
        agent_pk=agent_pk, session_pk=session_pk, tool_name=tool_name, tool_input=tool_input or {}
    ):
        answer = _pre_tool_use_answer("allow", ALLOWED_ONCE_REASON)
    return Outcome(
        StepAnswer(answer, paused_agent),
        changes.step(step.report(agent=agent_pk, session=session_pk)),
    )


def _pre_tool_use_answer(decision: str, reason: str) -> Output:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    }


def record_event(*, owner: AbstractBaseUser, hook: HookInput) -> Outcome[int | None]:
    if hook.hook_event_name == "SubagentStop" and not _agent_exists(owner=owner, hook=hook):
        # A subagent the board never saw: `/compact` sends one (agent_type "") for a subagent
        # that never started. Stopping what never ran adds no card.
        return Outcome(None, Changes())
    resolved, changes = hook_observe(owner=owner, hook=hook, notify=True)
    return Outcome(resolved.agent.pk, changes)


def _agent_exists(*, owner: AbstractBaseUser, hook: HookInput) -> bool:
    return Agent.objects.filter(
        session__session_id=hook.session_id,
        session__owner=owner,
        agent_id=hook.acting_agent_id,
    ).exists()


def record_and_enforce(
    *,
    owner: AbstractBaseUser,
    hook: HookInput,
    payload: dict[str, Any],
    step: StepDraft | None = None,
    client: str = "Claude Code",
    stop_ends_turn: bool = True,
) -> enforcer.Injection:
    """Record the event (and the `step` it reports); returns the reminder or re-injected list
    for the model, if any (and, with a prompt, the message of a reviewer who stopped the
    agent); with what was said from the board, and on a PostToolUse a stop it claimed
    (`injection.stop`), or for a client whose tool hook cannot end the turn (`stop_ends_turn`
    False) the stop left queued for the turn's end."""
    event = hook.hook_event_name
    tool_name = str(payload.get("tool_name") or "")
    tool_use_id = str(payload.get("tool_use_id") or "")
    if event == "PostToolUse" and tool_use_id and tool_name not in enforcer.TODO_TOOLS:
        known = known_agent(owner=owner, session_id=hook.session_id, agent_id=hook.acting_agent_id)
        if (
            known is not None
            and not steering.has_queued(known[0])
            and mode_stored(session_pk=known[1], mode=hook.permission_mode)
            # What the board said to the agent rides on this answer: the full path carries it.
            and not steering.has_queued(known[0])
            and enforcer.quiet_step(
                agent_pk=known[0],
                owner_pk=owner.pk,
                key=tool_use_id,
                permission_mode=hook.permission_mode,
                agent_type=hook.agent_type or "",
                cwd=hook.cwd,
            )
        ):
            changes = Changes()
            if step is not None:
                changes.step(step.report(agent=known[0], session=known[1]))
            return enforcer.Injection(changes=changes)
    # A plain tool use changes nothing visible on its own but its step.
    resolved, changes = hook_observe(
        owner=owner,
        hook=hook,
        tool_name=tool_name,
        tool_input=payload.get("tool_input"),
        notify=event in LIFECYCLE_EVENTS,
        # Plain tool uses come many a second: their time on the board needs no finer grain.
        coarse=event in {"PostToolUse", "PostToolUseFailure"},
    )
    if event == "Notification":
        changes.merge(
            terminal_wait_record(
                agent=resolved.agent,
                notification_type=str(payload.get("notification_type") or ""),
                message=str(payload.get("message") or ""),
            )
        )
    if step is not None:
        changes.step(step.report(agent=resolved.agent.pk, session=resolved.agent.session_id))
    injection = enforcer.on_hook(
        agent=resolved.agent,
        event=event,
        tool_name=tool_name,
        tool_use_id=tool_use_id,
        source=str(payload.get("source") or ""),
    )
    if event == "UserPromptSubmit":
        steering.turn_over(agent_pk=resolved.agent.pk)
        # A reviewer's "deny and stop" message, which Claude Code did not hand the model.
        stopped = stopped_messages_take(agent=resolved.agent)
        if stopped:
            injection.text = f"{stopped}\n\n{injection.text}" if injection.text else stopped
    if event in enforcer.CONTEXT_EVENTS and steering.has_queued(resolved.agent.pk):
        # What a person said from the board, each message once. A prompt the developer just
        # typed starts a turn of their own: a stop queued before it is not carried then.
        said = steering.directives_claim(
            agent_pk=resolved.agent.pk,
            via=f"{event} ({client})",
            stops=event == "PostToolUse" and stop_ends_turn,
        )
        changes.merge(said.changes)
        if said.value.messages:
            text = said.value.context
            injection.text = f"{text}\n\n{injection.text}" if injection.text else text
        injection.stop = said.value.stop
        if event == "PostToolUse" and not stop_ends_turn:
            injection.stop = steering.stop_pending(resolved.agent.pk)
    injection.changes = changes.merge(injection.changes)
    return injection


def hook_observe(
    *,
    owner: AbstractBaseUser,
    hook: HookInput,
    notify: bool,
    coarse: bool = False,
    tool_name: str = "",
    tool_input: object = None,
) -> tuple[ResolvedAgent, Changes]:
    """Apply what any hook tells about its session and agent: existence, mode, lifecycle and
    activity, inside the writer's transaction. Returns what the board must show."""
    assert transaction.get_connection().in_atomic_block
    resolved = agent_resolve_for_update(
        owner=owner,
        session_id=hook.session_id,
        agent_id=hook.acting_agent_id,
        agent_type=hook.agent_type or "",
        cwd=hook.cwd,
        client=hook.client,
    )
    agent = resolved.agent
    session = agent.session
    now = timezone.now()
    event = hook.hook_event_name
    session_fields: list[str] = []
    changed_agents = [agent]
    mode = hook.permission_mode
    mode_note = ""
    if mode in PermissionMode.values and session.permission_mode != mode:
        if not resolved.session_created:
            mode_note = f"permission mode {session.permission_mode} → {mode}"
        session.permission_mode = mode
        session_fields.append("permission_mode")
    _mode_stored(session.pk, session.permission_mode)
    if event == "SessionEnd":
        session.ended_at = now
        session.ended_quietly = False
        session_fields += ["ended_at", "ended_quietly"]
        others = list(session.agents.exclude(pk=agent.pk).filter(status=Agent.Status.RUNNING))
        for other in others:
            _agent_stop(other, now)
        changed_agents.extend(others)
    elif session.ended_at is not None:
        # Any later event (a resumed session) brings it back to life (`agent_touch` saves it).
        session_fields.append("ended_at")
    prompt = hook.prompt if event == "UserPromptSubmit" else None
    if session_describe(session=session, title=prompt or "", branch=hook.git_branch or ""):
        session_fields += ["title", "branch"]
    if event in {"SubagentStop", "SessionEnd"}:
        _agent_stop(agent, now)
    elif agent.status == Agent.Status.STOPPED:
        agent.status = Agent.Status.RUNNING
        agent.stopped_at = None
        agent.save(update_fields=["status", "stopped_at"])
    if session_fields:
        session.save(update_fields=session_fields)
    turn_ended = TURN_ENDED_BY.get(event)
    agent_touch(
        agent=agent, coarse=coarse, ending=event == "SessionEnd", turn_ended=turn_ended, now=now
    )
    changes = Changes()
    if (
        notify
        or session_fields
        or turn_ended is not None
        or resolved.agent_created
        or resolved.session_created
    ):
        changes = resolved.changes()
        for other in changed_agents[1:]:
            changes.agent(other.pk, other.session_id)
    if "title" in session_fields:
        changes.sessions.add(session.pk)  # its header, row and search entry name it anew
    if mode_note:
        changes.sessions.add(session.pk)
        changes.enforcer_events.append(
            enforcer.session_note(agent=agent, text=mode_note, code="mode").pk
        )
    if event == "SessionEnd":
        changes.ended_sessions.add(session.pk)
    if event in INTERRUPTING:
        for stopped in changed_agents if event == "SessionEnd" else [agent]:
            step_interrupted(changes, agent_pk=stopped.pk, at=now)
    if agent.awaiting_plan and event != "Notification":
        changes.merge(
            agent_moved_on(
                agent=agent,
                moved_on=event not in NOT_MOVING_ON,
                event=event,
                tool_name=getattr(hook, "tool_name", None) or tool_name,
                tool_input=getattr(hook, "tool_input", None) or tool_input,
            )
        )
    return resolved, changes


def mode_stored(*, session_pk: int, mode: str | None) -> bool:
    """Whether the session's stored permission mode is `mode` as far as this process knows (or
    the hook says none): then the hook has nothing to store about it."""
    if mode not in PermissionMode.values:
        return True
    known, at = _session_modes.get(session_pk, ("", 0.0))
    return known == mode and time.monotonic() - at < MODE_KNOWN_SECONDS


def _mode_stored(session_pk: int, mode: str) -> None:
    if len(_session_modes) >= SESSION_MODES_SIZE:
        _session_modes.clear()
    _session_modes[session_pk] = (mode, time.monotonic())


# --- what newer Claude Code tells of the session: a refusal of auto mode, a new folder, an
# idle teammate ------------------------------------------------------------------------------


@holding
async def _permission_denied(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """Auto mode's classifier refused a tool call: the step ends denied, and the session's
    history says what was refused and why. When someone who decides for the session asked for
    these in their inbox, the hook is held there like a permission request: allowed once, it
    answers `retry` (the model may make the call again) and the call's next PreToolUse is
    allowed, past the classifier, in whichever process it arrives (`planmode.allow_once`);
    kept refused or unanswered, `{}`, the refusal stands."""
    hook = validate(HookInput, payload)
    wanted = await write(
        refusal_record,
        owner=owner,
        hook=hook,
        step=hook_step(payload),
        tool_name=payload.get("tool_name"),
        reason=payload.get("reason"),
    )
    if not wanted.value:
        return {}
    call = validate(ToolHookInput, payload)
    wait = hold_for(settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS)
    known_everywhere_at = 0.0

    async def opened() -> Outcome[dict[str, Any]]:
        nonlocal known_everywhere_at
        stored = await write_behind(refusal_open, owner=owner, hook=call, held_for=wait)
        known_everywhere_at = time.monotonic() + SESSIONS_TTL
        return stored

    state = await held(
        opened(),
        hold=functools.partial(hold_permission, wait=wait),
        expire=lambda request_id: write(permission_expire, request_id=request_id),
    )
    answer = refusal_decision(state)
    if answer:
        # The retried call's PreToolUse may reach another process: not before that process
        # knows the session has a refusal open, or it would not look for the allowance.
        await asyncio.sleep(max(0.0, known_everywhere_at - time.monotonic()))
    return answer


def refusal_record(
    *,
    owner: AbstractBaseUser,
    hook: HookInput,
    step: StepDraft | None,
    tool_name: object = None,
    reason: object = None,
) -> Outcome[bool]:
    """The refusal as a step and a line of history; whether anyone wants it in their inbox."""
    resolved, changes = hook_observe(owner=owner, hook=hook, notify=False, coarse=True)
    agent = resolved.agent
    if step is not None:
        changes.step(step.report(agent=agent.pk, session=agent.session_id))
    what = f"{step.tool_name} {step.summary}".strip() if step else bounded_text(tool_name)
    why = bounded_text(reason, 200)
    text = f"auto mode refused: {what or 'a tool call'}" + (f" ({why})" if why else "")
    changes.enforcer_events.append(
        enforcer.session_note(agent=agent, text=text, code="auto_refused").pk
    )
    wanted = step is not None and refusals_wanted(agent.session)
    return Outcome(wanted, changes.agent(agent.pk, agent.session_id))


def refusals_wanted(session: Session) -> bool:
    """Whether someone who decides for the session asked for auto mode's refusals in their
    inbox (a setting of their own, off unless they turn it on)."""
    asking = InboxChoice.objects.filter(auto_mode_refusals=True).values_list("user_id", flat=True)
    audiences = audiences_of(list(asking[:REFUSAL_WATCHERS]))
    return any(audience.may_decide(session) for audience in audiences.values())


def refusal_open(
    *, owner: AbstractBaseUser, hook: ToolHookInput, held_for: float
) -> Outcome[dict[str, Any]]:
    with transaction.atomic(savepoint=False):
        resolved, changes = hook_observe(owner=owner, hook=hook, notify=False)
        opened = permission_request_open(
            agent=resolved.agent,
            tool_name=hook.tool_name,
            tool_input=hook.tool_input,
            suggestions=[],
            permission_mode=hook.permission_mode or "",
            held_for=held_for,
            refused_by_auto_mode=True,
        )
        return Outcome(permission_state(opened.request), changes.merge(opened.changes))


async def _session_event(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """CwdChanged and TeammateIdle: nothing to answer (CwdChanged could name files to watch)."""
    event = validate(HookEvent, payload).hook_event_name
    hook: HookInput
    if event == "CwdChanged":
        hook = validate(CwdChangedInput, payload)
    else:
        hook = validate(TeammateIdleInput, payload)
    await write(session_event_record, owner=owner, hook=hook)
    return {}


def session_event_record(*, owner: AbstractBaseUser, hook: HookInput) -> Outcome[None]:
    if isinstance(hook, TeammateIdleInput):
        hook = teammate_own(owner=owner, hook=hook)
    resolved, changes = hook_observe(owner=owner, hook=hook, notify=True)
    agent = resolved.agent
    session = agent.session
    if isinstance(hook, CwdChangedInput):
        new = hook.new_cwd or hook.cwd
        if not new or new == session.cwd:
            return Outcome(None, changes)
        old = hook.old_cwd or session.cwd
        session.cwd = new
        session.save(update_fields=["cwd"])
        changes.sessions.add(session.pk)
        text = f"moved from {bounded_text(old, 140)} to {bounded_text(new, 140)}"
        code = "cwd"
    else:
        assert isinstance(hook, TeammateIdleInput)
        name = hook.teammate_name or hook.agent_type or "a teammate"
        named = hook.team_name and not IMPLICIT_TEAM.fullmatch(hook.team_name)
        team = f" of team {hook.team_name}" if named else ""
        text = bounded_text(f"teammate {name}{team} is idle, waiting for work")
        code = "teammate_idle"
    changes.enforcer_events.append(enforcer.session_note(agent=agent, text=text, code=code).pk)
    return Outcome(None, changes)


# The name Claude Code gives a session's one implicit team ("session-" and eight hex digits,
# as its own check reads it): it names nothing a lead chose, so the history leaves it out.
IMPLICIT_TEAM = re.compile(r"session-[0-9a-f]{8}", re.IGNORECASE)


def teammate_own(*, owner: AbstractBaseUser, hook: TeammateIdleInput) -> TeammateIdleInput:
    """The idle hook as the teammate's own, so its card (never the lead's) reads idle.

    2.1.332 sends the teammate's `agent_id` and `agent_type`; 2.1.197 only its name. The
    teammate's own hooks (SubagentStart, its tool calls) came with its agent id and its name as
    the agent type, so the latest agent of the session with that type is the teammate. If none
    is known yet, the card gets the id Claude Code gives the teammate itself, `name@team`."""
    name = hook.teammate_name
    if not name:
        return hook
    if hook.agent_id:
        return hook if hook.agent_type else hook.model_copy(update={"agent_type": name})
    found = (
        Agent.objects.filter(
            session__session_id=hook.session_id, session__owner_id=owner.pk, agent_type=name
        )
        .exclude(agent_id=hook.session_id)
        .order_by("-last_seen_at", "-pk")
        .values_list("agent_id", flat=True)
        .first()
    )
    agent_id = found or f"{name}@{hook.team_name or 'team'}"
    if not ID_PATTERN.fullmatch(agent_id):
        return hook
    return hook.model_copy(update={"agent_id": agent_id, "agent_type": name})


def _agent_stop(agent: Agent, now: Any) -> None:
    if agent.status != Agent.Status.STOPPED:
        agent.status = Agent.Status.STOPPED
        agent.stopped_at = now
        agent.save(update_fields=["status", "stopped_at"])


# --- todo lists: TodoWrite and the Task tools ------------------------------------------------

TodoChange = Callable[[list[dict[str, str]]], list[dict[str, str]]]


async def whole_list_written(
    owner: AbstractBaseUser,
    hook: ToolHookInput,
    items: list[dict[str, str]],
    payload: dict[str, Any],
) -> Output:
    """A checklist tool that sends the agent's whole list each time (Codex's `update_plan`,
    Gemini's `write_todos`) ran: its items replace the list, as a TodoWrite's would."""
    await write(
        todos_change,
        owner=owner,
        hook=hook,
        change=lambda current: items,
        idempotency_key=hook.tool_use_id,
        record_unchanged=True,
        step=hook_step(payload),
    )
    return {}


async def _todo_tool_used(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    hook = validate(ToolHookInput, payload)
    if hook.tool_name == "TodoWrite":
        todos = validate(TodoWriteToolInput, hook.tool_input, loc=("tool_input",)).todos
        change: TodoChange = lambda current: [item.as_wire() for item in todos]  # noqa: E731
    elif hook.tool_name == "TaskCreate":
        change = _task_create(hook)
        await write(
            _subagent_task_created, owner=owner, hook=hook, change=change, step=hook_step(payload)
        )
        return {}
    else:
        change = _task_update(validate(TaskUpdateToolInput, hook.tool_input, loc=("tool_input",)))
    await write(
        todos_change,
        owner=owner,
        hook=hook,
        change=change,
        idempotency_key=hook.tool_use_id,
        # Rewriting a list unchanged is still a TodoWrite worth a revision; a Task tool call
        # that changes nothing a person sees (an unknown task id, a spinner text) is not.
        record_unchanged=hook.tool_name == "TodoWrite",
        step=hook_step(payload),
    )
    return {}


def _task_create(hook: ToolHookInput) -> TodoChange:
    task = validate(TaskCreateToolInput, hook.tool_input, loc=("tool_input",))
    task_id = validate(TaskCreateToolResponse, hook.tool_response, loc=("tool_response",)).task.id
    item = {"content": task.subject, "status": "pending", "id": str(task_id)}
    if task.activeForm:
        item["activeForm"] = task.activeForm

    def add(current: list[dict[str, str]]) -> list[dict[str, str]]:
        for index, existing in enumerate(current):
            if existing.get("id") == item["id"]:
                # TaskCreated arrives first and carries no spinner text: add the model's own.
                if task.activeForm and existing.get("activeForm") != task.activeForm:
                    return [
                        *current[:index],
                        {**existing, "activeForm": task.activeForm},
                        *current[index + 1 :],
                    ]
                return current
        return [*current, item]

    return add


def _task_update(update: TaskUpdateToolInput) -> TodoChange:
    task_id = str(update.taskId)

    def apply(current: list[dict[str, str]]) -> list[dict[str, str]]:
        if update.status == "deleted":
            return [item for item in current if item.get("id") != task_id]
        result = []
        for item in current:
            if item.get("id") == task_id:
                item = dict(item)
                if update.status:
                    item["status"] = update.status
                if update.subject:
                    item["content"] = update.subject
                if update.activeForm:
                    item["activeForm"] = update.activeForm
            result.append(item)
        return result

    return apply


def _subagent_task_created(
    *, owner: AbstractBaseUser, hook: ToolHookInput, change: TodoChange, step: StepDraft | None
) -> Outcome[None]:
    """A TaskCreate's own hook. When a subagent made the task, Claude Code 2.1.19x sent its
    TaskCreated first without an agent_id, so it may be on the main agent's card: it moves."""
    outcome = todos_change(
        owner=owner,
        hook=hook,
        change=change,
        idempotency_key=hook.tool_use_id,
        record_unchanged=False,
        step=step,
    )
    if hook.agent_id is None or hook.agent_id == hook.session_id:
        return outcome
    task_id = str(hook.tool_response["task"]["id"])
    subject = redact(hook.tool_input["subject"])  # as it was stored
    misplaced = Todo.objects.filter(
        agent__session__session_id=hook.session_id,
        agent__session__owner=owner,
        agent__agent_id=hook.session_id,
        external_id=task_id,
        content=subject,
    )
    if not misplaced.exists():
        return outcome
    main = hook.model_copy(update={"agent_id": None, "agent_type": None})
    moved = todos_change(
        owner=owner,
        hook=main,
        change=lambda current: [
            item
            for item in current
            if not (item.get("id") == task_id and item["content"] == subject)
        ],
        idempotency_key=None,
        record_unchanged=False,
    )
    return Outcome(None, outcome.changes.merge(moved.changes))


def _task_event_agent(*, owner: AbstractBaseUser, hook: TaskEventInput, task_id: str) -> str | None:
    """The subagent a TaskCreated or TaskCompleted without an agent_id is about, or None for
    the main agent. A task being created belongs to the one agent inside a TaskCreate call:
    its PreToolUse, which names its agent, was answered before the task was made. Otherwise
    the task belongs to whichever agent's list holds it."""
    if hook.hook_event_name == "TaskCreated":
        creating = agents_in_tool_call(owner=owner, session_id=hook.session_id, tool="TaskCreate")
        if creating:
            # Several at once (subagents in parallel) cannot be told apart: the main card
            # takes the task until its own TaskCreate hook moves it (`_subagent_task_created`).
            only = creating.pop() if len(creating) == 1 else hook.session_id
            return None if only == hook.session_id else only
    return _task_holder(owner=owner, session_id=hook.session_id, task_id=task_id)


def _task_holder(*, owner: AbstractBaseUser, session_id: str, task_id: str) -> str | None:
    """The subagent whose list holds this task, when the session's main agent's does not."""
    holders = set(
        Todo.objects.filter(
            agent__session__session_id=session_id,
            agent__session__owner=owner,
            external_id=task_id,
        ).values_list("agent__agent_id", flat=True)
    )
    if not holders or session_id in holders:
        return None
    return min(holders)


async def _task_event(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """TaskCreated / TaskCompleted keep the checklist in sync when the tool's own
    PostToolUse was missed; both are no-ops when the list already says so."""
    hook = validate(TaskEventInput, payload)
    task_id = str(hook.task_id)

    def apply(current: list[dict[str, str]]) -> list[dict[str, str]]:
        known = any(item.get("id") == task_id for item in current)
        if hook.hook_event_name == "TaskCreated":
            if known or not hook.task_subject:
                return current
            return [*current, {"content": hook.task_subject, "status": "pending", "id": task_id}]
        return [
            {**item, "status": "completed"} if item.get("id") == task_id else item
            for item in current
        ]

    await write(_task_event_change, owner=owner, hook=hook, task_id=task_id, change=apply)
    return {}


def _task_event_change(
    *, owner: AbstractBaseUser, hook: TaskEventInput, task_id: str, change: TodoChange
) -> Outcome[None]:
    # Claude Code 2.1.19x sends these without an agent_id even for a subagent's tasks.
    if hook.agent_id is None:
        owning = _task_event_agent(owner=owner, hook=hook, task_id=task_id)
        if owning is not None:
            hook = hook.model_copy(update={"agent_id": owning})
    return todos_change(
        owner=owner, hook=hook, change=change, idempotency_key=None, record_unchanged=False
    )


def todos_change(
    *,
    owner: AbstractBaseUser,
    hook: HookInput,
    change: TodoChange,
    idempotency_key: str | None,
    record_unchanged: bool,
    step: StepDraft | None = None,
) -> Outcome[None]:
    """Read the agent's list, apply `change` and store the result as a hook revision, all under
    the agent's row lock so concurrent Task tool hooks cannot lose each other's items. The tool
    call is a `step` too. Unless `record_unchanged` (a TodoWrite: whatever the agent sends is a
    write of its own), a change that leaves the list as a person reads it makes no revision:
    nothing when nothing changed, the latest revision amended when only spinner texts did."""
    with transaction.atomic(savepoint=False):
        # The write below records the activity precisely; observing may be coarse.
        resolved, changes = hook_observe(owner=owner, hook=hook, notify=False, coarse=True)
        agent = resolved.agent
        if step is not None:
            changes.step(step.report(agent=agent.pk, session=agent.session_id))
        # A hook delivered twice (retries, or both the HTTP and the command hook installed)
        # must not apply its change again on top of later ones.
        if idempotency_key and revision_key_used(agent=agent, key=idempotency_key):
            return Outcome(None, changes)
        current = current_todos(agent)
        # Compared with the list as stored: redacted.
        new = todo_items_redacted(change(current))
        if new == current and not record_unchanged:
            return Outcome(None, changes)
        # Validated as any write is: a Task tool's subject is a todo's content, and the list
        # it grows must stay within the accepted length.
        validated = validate(TodoWriteToolInput, {"todos": new}, loc=("tool_input",)).todos
        if settings.AGENTBOARD_TODO_POLICY == "strict":
            check_strict_policy(validated)
        new = [item.as_wire() for item in validated]
        if not record_unchanged and current and todo_lists_read_alike(current, new):
            # Only spinner texts changed (TaskCreate's own hook after its TaskCreated): part
            # of the change already recorded, not one a person would see in the history.
            amended = todo_list_amend(
                resolved=resolved, old_items=current, new_items=new, idempotency_key=idempotency_key
            )
            return Outcome(None, changes.merge(amended))
        # Claude Code already ran the tool, so the list changed whatever the mode says.
        written = todo_list_store(
            resolved=resolved,
            old_items=current,
            new_items=new,
            source=TodoRevision.Source.HOOK,
            idempotency_key=idempotency_key,
        )
        return Outcome(None, changes.merge(written.changes))


# --- plans -----------------------------------------------------------------------------------


@holding
async def _plan_permission_request(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """Submit the plan, hold the request until a reviewer decides, answer with the decision.

    No decision within AGENTBOARD_PLAN_HOOK_WAIT_SECONDS answers `{}` (Claude Code then asks in
    its terminal) and the plan shows as expired.
    """
    hook = validate(ToolHookInput, payload)
    plan_text = hook.tool_input.get("plan")
    if not isinstance(plan_text, str) or not plan_text.strip():
        # Claude Code 2.1.3xx sends no plan when the model wrote no plan file: there is
        # nothing to review, so the terminal asks.
        return {}
    plan_input = validate(ExitPlanModeToolInput, hook.tool_input, loc=("tool_input",))
    wait = hold_for(settings.AGENTBOARD_PLAN_HOOK_WAIT_SECONDS)
    state = await held(
        write_behind(_plan_submit, owner=owner, hook=hook, plan_input=plan_input, held_for=wait),
        hold=functools.partial(_hold_until_decided, wait=wait),
        expire=lambda plan_id: write(plan_expire, plan_id=plan_id),
    )
    return permission_decision(state, payload["tool_input"])


async def held(
    submit: Awaitable[Outcome[dict[str, Any]]],
    *,
    hold: Callable[[int], Awaitable[dict[str, Any]]],
    expire: Callable[[int], Awaitable[object]],
) -> dict[str, Any]:
    """Store what the agent asks (`submit`), hold while it is pending, return its final state.
    Where its session runs is noted as the hold begins (`held_origin_noted`).

    If the request goes away meanwhile (the user answered in the terminal, the agent was
    interrupted, the connection dropped) or the wait fails, nobody waits for it any more: it
    expires. The server may cancel this request again at any moment, so the expiry runs on its
    own."""
    submitted = asyncio.ensure_future(submit)
    try:
        state = (await asyncio.shield(submitted)).value
        # Stored: what is left is waiting, which costs the others nothing.
        arrivals.arrived()
        if state["status"] == "pending":
            await held_origin_noted()
            state = await hold(state["id"])
    except BaseException:
        keep(_cleanup_tasks, asyncio.create_task(_expire_abandoned(submitted, expire)))
        raise
    return state


# Strong references: the event loop keeps only weak ones to the tasks it runs.
_cleanup_tasks: set[asyncio.Task[None]] = set()


async def abandoned_requests_expired(timeout: float = 10) -> None:
    """Return once this loop's expiries of requests that went away are done (tests)."""
    loop = asyncio.get_running_loop()
    running = [task for task in _cleanup_tasks if task.get_loop() is loop]
    if running:
        await asyncio.wait(running, timeout=timeout)


async def _expire_abandoned(
    submitted: asyncio.Future[Outcome[dict[str, Any]]],
    expire: Callable[[int], Awaitable[object]],
) -> None:
    try:
        state = (await submitted).value
    except Exception:
        return  # refused (the request got its error): there is nothing to expire
    if state["status"] != "pending":
        return
    try:
        await expire(state["id"])
    except Exception:
        logger.exception("could not expire %s after its hook request went away", state["id"])


def _plan_submit(
    *,
    owner: AbstractBaseUser,
    hook: ToolHookInput,
    plan_input: ExitPlanModeToolInput,
    held_for: float,
) -> Outcome[dict[str, Any]]:
    with transaction.atomic(savepoint=False):
        resolved, changes = hook_observe(owner=owner, hook=hook, notify=False)
        agent = resolved.agent
        # PermissionRequest input has no tool_use_id: the same plan still waiting for this agent
        # is the same request delivered twice (both hook kinds installed), so it joins that wait.
        waiting = (
            agent.plans.filter(
                status=PlanStatus.PENDING,
                markdown=redact(plan_input.plan),
                plan_file_path=plan_input.planFilePath or "",
            )
            .order_by("-pk")
            .first()
        )
        if waiting is not None:
            waiting.agent, waiting.session = agent, agent.session
            plan_hold(plan=waiting, held_for=held_for)
            return Outcome(plan_state(waiting), changes)
        submitted = plan_submit(
            owner=owner,
            session_id=hook.session_id,
            agent_id=hook.acting_agent_id,
            plan=plan_input.plan,
            plan_file_path=plan_input.planFilePath,
            source=Plan.Source.HOOK,
            idempotency_key=hook.tool_use_id,
            agent_type=hook.agent_type or "",
            held_for=held_for,
        )
        return Outcome(plan_state(submitted.plan), changes.merge(submitted.changes))


async def _hold_until_decided(plan_id: int, *, wait: float) -> dict[str, Any]:
    state = await wait_for_decision(plan_id, wait)
    if state is None:
        expired: PlanChange = await write(plan_expire, plan_id=plan_id)
        state = plan_state(expired.plan)
    return state


async def _plan_tool_used(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """After an approved ExitPlanMode: the reviewer's notes reach the model as context (a
    PermissionRequest allow cannot carry them)."""
    hook = validate(ToolHookInput, payload)
    notes = (await write(_approval_notes, owner=owner, hook=hook, step=hook_step(payload))).value
    if not notes:
        return {}
    return {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "additionalContext": (
                f"The reviewer who approved this plan on Agentboard added these notes; "
                f"follow them while you carry out the plan:\n{notes}"
            ),
        }
    }


def _approval_notes(
    *, owner: AbstractBaseUser, hook: ToolHookInput, step: StepDraft | None
) -> Outcome[str]:
    with transaction.atomic(savepoint=False):
        resolved, changes = hook_observe(owner=owner, hook=hook, notify=False)
        agent = resolved.agent
        if step is not None:
            changes.step(step.report(agent=agent.pk, session=agent.session_id))
        approved = agent.plans.filter(status=PlanStatus.APPROVED)
        plan_text = hook.tool_input.get("plan")
        if isinstance(plan_text, str) and plan_text.strip():
            approved = approved.filter(markdown=redact(plan_text))
        plan = approved.order_by("-pk").first()
        return Outcome(plan.notes if plan else "", changes)


# --- permission requests of every other tool ---------------------------------------------------


@holding
async def _permission_request(owner: AbstractBaseUser, payload: dict[str, Any]) -> Output:
    """Store the request (a team rule may answer it at once), hold it until someone decides
    on the inbox, answer with the decision. No decision within
    AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS answers `{}`: the terminal asks, and the request
    shows as expired."""
    hook = validate(PermissionRequestInput, payload)
    wait = hold_for(settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS)
    state = await held(
        write_behind(permission_open, owner=owner, hook=hook, held_for=wait),
        hold=functools.partial(hold_permission, wait=wait),
        expire=lambda request_id: write(permission_expire, request_id=request_id),
    )
    return tool_permission_decision(state, payload["tool_input"])


def permission_open(
    *, owner: AbstractBaseUser, hook: PermissionRequestInput, held_for: float
) -> Outcome[dict[str, Any]]:
    with transaction.atomic(savepoint=False):
        resolved, changes = hook_observe(owner=owner, hook=hook, notify=False)
        opened = permission_request_open(
            agent=resolved.agent,
            tool_name=hook.tool_name,
            tool_input=hook.tool_input,
            suggestions=hook.suggestions,
            permission_mode=hook.permission_mode or "",
            held_for=held_for,
        )
        return Outcome(permission_state(opened.request), changes.merge(opened.changes))


async def hold_permission(request_id: int, *, wait: float) -> dict[str, Any]:
    state = await wait_for_decision(request_id, wait, PERMISSION)
    if state is None:
        expired = await write(permission_expire, request_id=request_id)
        state = permission_state(expired.request)
    return state
