"""Applying a TodoWrite, progress and the plain-text rendering the model reads back."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from dashboard.core.changes import Changes
from dashboard.core.errors import ServiceError
from dashboard.core.redaction import redact
from dashboard.core.services import (
    ResolvedAgent,
    agent_resolve_for_update,
    idempotent_replay,
    session_of_owner,
    validate_id,
)
from dashboard.core.sql import any_row
from dashboard.models import Agent, PermissionMode
from todos import enforcer
from todos.models import TodoRevision, TodoStatus
from todos.schemas import Progress, TodoItem
from todos.selectors import current_todos, todo_wire

STRICT_MAX_ITEMS = 20
STRICT_MAX_TEXT = 500

# Discipline flags, with the sentence shown on the card (defined beside the enforcer).
FLAG_MESSAGES = enforcer.FLAGS

CHECKBOX = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]", "cancelled": "[-]"}


@dataclass(frozen=True)
class TodoWriteResult:
    revision: int
    old_todos: list[dict[str, str]]
    new_todos: list[dict[str, str]]
    progress: Progress
    rendered: str
    changes: Changes = field(default_factory=Changes, compare=False, repr=False)

    def as_wire(self) -> dict:
        return {
            "revision": self.revision,
            "old_todos": self.old_todos,
            "new_todos": self.new_todos,
            "progress": self.progress.model_dump(),
            "rendered": self.rendered,
        }


def progress_of(items: Iterable[Mapping[str, str]]) -> Progress:
    counts = {status: 0 for status in TodoStatus.values}
    for item in items:
        counts[item["status"]] += 1
    return Progress(**counts, total=sum(counts.values()))


def todo_flags(items: Sequence[Mapping[str, str]]) -> list[str]:
    """Discipline problems of a list that is accepted anyway."""
    return enforcer.list_flags([], items)


def render_todos(items: Sequence[Mapping[str, str]]) -> str:
    """The plain-text view handed back to the model, e.g. `[>] Update docs <- Updating docs`."""
    if not items:
        return "No todos."
    lines = []
    for item in items:
        line = f"{CHECKBOX[item['status']]} {item['content']}"
        if item["status"] == "in_progress" and item.get("activeForm"):
            line += f" <- {item['activeForm']}"
        lines.append(line)
    progress = progress_of(items)
    summary = f"{progress.completed}/{progress.total - progress.cancelled} completed"
    if progress.cancelled:
        summary += f", {progress.cancelled} cancelled"
    return "\n".join(lines) + f"\n\n({summary})"


def check_strict_policy(items: Sequence[TodoItem]) -> None:
    if len(items) > STRICT_MAX_ITEMS:
        raise ServiceError(
            "too_many_todos",
            f"A list may hold at most {STRICT_MAX_ITEMS} items; this one has {len(items)}. "
            "Merge or drop some.",
            detail=[{"loc": ["body", "todos"], "msg": f"at most {STRICT_MAX_ITEMS} items"}],
        )
    for index, item in enumerate(items):
        for name, text in (("content", item.content), ("activeForm", item.activeForm or "")):
            if len(text) > STRICT_MAX_TEXT:
                raise ServiceError(
                    "todo_text_too_long",
                    f"Item {index + 1} has a {name} of {len(text)} characters; "
                    f"at most {STRICT_MAX_TEXT} are allowed.",
                    detail=[
                        {"loc": ["body", "todos", index, name], "msg": "at most 500 characters"}
                    ],
                )
    in_progress = [i for i, item in enumerate(items) if item.status == "in_progress"]
    if len(in_progress) > 1:
        raise ServiceError(
            "multiple_in_progress",
            "Only one item may be in progress at a time; items "
            f"{', '.join(str(i + 1) for i in in_progress)} are. "
            "Finish one before starting another.",
            detail=[
                {"loc": ["body", "todos", i, "status"], "msg": "second in_progress item"}
                for i in in_progress[1:]
            ],
        )


def todo_items_redacted(items: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """The items with the secrets in their texts redacted: what is stored, shown, hashed and
    compared, so that no list is kept with a secret in it."""
    return [
        {
            **item,
            **{name: redact(item[name]) for name in ("content", "activeForm") if item.get(name)},
        }
        for item in items
    ]


def _request_hash(items: Sequence[Mapping[str, str]]) -> str:
    return hashlib.sha256(json.dumps(list(items), sort_keys=True).encode()).hexdigest()


def _result_of(revision: TodoRevision) -> TodoWriteResult:
    return _result(revision.number, revision.old_todos, revision.new_todos)


def _result(number: int, old: list[dict[str, str]], new: list[dict[str, str]]) -> TodoWriteResult:
    return TodoWriteResult(
        revision=number,
        old_todos=old,
        new_todos=new,
        progress=progress_of(new),
        rendered=render_todos(new),
    )


# Run on every write: plain SQL, since compiling the ORM's statements costs more than running
# them. Each is standard SQL that SQLite and PostgreSQL both take.
_DELETE_TODOS = "DELETE FROM todos_todo WHERE agent_id = %s"
_INSERT_TODO = """
    INSERT INTO todos_todo (agent_id, position, content, active_form, status, priority, external_id)
    VALUES (%s, %s, %s, %s, %s, %s, %s)
"""
_UPDATE_AGENT = """
    UPDATE dashboard_agent SET todo_revision = %s, cleared_total = %s, last_seen_at = %s,
    agent_type = %s WHERE id = %s
"""
_UPDATE_SESSION = "UPDATE dashboard_session SET last_seen_at = %s, cwd = %s WHERE id = %s"
# A write from a session that had ended (or gone quiet) brings it back.
_REVIVE_SESSION = """
    UPDATE dashboard_session SET last_seen_at = %s, cwd = %s, ended_at = NULL,
    ended_quietly = %s WHERE id = %s
"""
_INSERT_REVISION = """
    INSERT INTO todos_todorevision
        (agent_id, number, old_todos, new_todos, source, idempotency_key, request_hash, received_at)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
    RETURNING id
"""
# A key already on the revision stays: it names the delivery that made it.
_AMEND_REVISION = """
    UPDATE todos_todorevision SET new_todos = %s, request_hash = %s,
    idempotency_key = COALESCE(idempotency_key, %s) WHERE agent_id = %s AND number = %s
    RETURNING id
"""


def revision_key_used(*, agent: Agent, key: str) -> bool:
    """Whether a write of this agent already carried this idempotency key (a hook's
    tool_use_id): a delivery seen before."""
    return any_row(
        "SELECT 1 FROM todos_todorevision WHERE agent_id = %s AND idempotency_key = %s",
        [agent.pk, key],
    )


def todo_list_replace(
    *,
    owner: AbstractBaseUser,
    session_id: str,
    agent_id: str,
    todos: Sequence[TodoItem],
    source: str,
    idempotency_key: str | None = None,
    agent_type: str = "",
    cwd: str = "",
    client: str = "",
    received_at: datetime | None = None,
    enforce_plan_mode: bool = True,
) -> TodoWriteResult:
    """Replace an agent's list with `todos` and record the write as a new revision.

    Writes for one agent are serialized by a row lock. A retry with the same idempotency key
    and list returns the first result.
    """
    if settings.AGENTBOARD_TODO_POLICY == "strict":
        check_strict_policy(todos)
    new_items = todo_items_redacted([item.as_wire() for item in todos])
    request_hash = _request_hash(new_items)
    with transaction.atomic(savepoint=False):
        resolved = agent_resolve_for_update(
            owner=owner,
            session_id=session_id,
            agent_id=agent_id,
            agent_type=agent_type,
            cwd=cwd,
            client=client,
        )
        earlier = idempotent_replay(
            resolved.agent.revisions.all(),
            key=idempotency_key,
            request_hash=request_hash,
            what="list",
        )
        if earlier is not None:
            return _result_of(earlier)
        if enforce_plan_mode and resolved.agent.session.permission_mode == PermissionMode.PLAN:
            raise ServiceError(
                "plan_mode_active",
                "The session is in plan mode, where the todo list cannot change; it becomes "
                "writable again once a reviewer approves the plan.",
                status=409,
            )
        return todo_list_store(
            resolved=resolved,
            old_items=current_todos(resolved.agent),
            new_items=new_items,
            source=source,
            idempotency_key=idempotency_key,
            request_hash=request_hash,
            received_at=received_at,
        )


def todo_list_store(
    *,
    resolved: ResolvedAgent,
    old_items: list[dict[str, str]],
    new_items: list[dict[str, str]],
    source: str,
    idempotency_key: str | None = None,
    request_hash: str = "",
    received_at: datetime | None = None,
) -> TodoWriteResult:
    """Store a new list for an agent already resolved and locked in this transaction, whose
    current list is `old_items` (callers that read it already, like the hooks, pass it on).
    Secrets in the new items are redacted here, whoever sent them."""
    new_items = todo_items_redacted(new_items)
    agent = resolved.agent
    all_completed = bool(new_items) and all(i["status"] == "completed" for i in new_items)
    stored_items = [] if all_completed else new_items
    now = timezone.now()
    agent.todo_revision += 1
    agent.cleared_total = len(new_items) if all_completed else 0
    agent.last_seen_at = agent.session.last_seen_at = now
    stamp = connection.ops.adapt_datetimefield_value(now)
    with connection.cursor() as cursor:
        _todos_replace(cursor, agent=agent, items=stored_items)
        cursor.execute(
            _UPDATE_AGENT,
            [agent.todo_revision, agent.cleared_total, stamp, agent.agent_type, agent.pk],
        )
        if agent.session.ended_at is not None and source != TodoRevision.Source.IMPORT:
            agent.session.ended_at, agent.session.ended_quietly = None, False
            cursor.execute(_REVIVE_SESSION, [stamp, agent.session.cwd, False, agent.session.pk])
        else:
            cursor.execute(_UPDATE_SESSION, [stamp, agent.session.cwd, agent.session.pk])
        cursor.execute(
            _INSERT_REVISION,
            [
                agent.pk,
                agent.todo_revision,
                connection.ops.adapt_json_value(old_items, None),
                connection.ops.adapt_json_value(new_items, None),
                source,
                idempotency_key or None,
                request_hash or _request_hash(new_items),
                connection.ops.adapt_datetimefield_value(received_at or now),
            ],
        )
        (revision_pk,) = cursor.fetchone()
    changes = resolved.changes()
    changes.revisions.append(revision_pk)
    # Imported history is the past: it raises no discipline flags and cancels nothing now.
    if source != TodoRevision.Source.IMPORT:
        changes.merge(enforcer.on_todo_write(agent=agent, old=old_items, new=new_items))
    result = _result(agent.todo_revision, old_items, new_items)
    result.changes.merge(changes)
    return result


def todo_lists_read_alike(a: Sequence[Mapping[str, str]], b: Sequence[Mapping[str, str]]) -> bool:
    """Whether a person reads two lists as the same: the same items with the same statuses in
    the same order. Only the spinner texts (activeForm) may differ."""

    def seen(items: Sequence[Mapping[str, str]]) -> list[tuple[str, ...]]:
        return [(i["content"], i["status"], i.get("id", ""), i.get("priority", "")) for i in items]

    return seen(a) == seen(b)


def todo_list_amend(
    *,
    resolved: ResolvedAgent,
    old_items: list[dict[str, str]],
    new_items: list[dict[str, str]],
    idempotency_key: str | None = None,
) -> Changes:
    """Store `new_items`, which a person reads as the agent's current list `old_items`
    (`todo_lists_read_alike`), as that list's latest revision, changed in place: no revision
    and no line of history of its own. Claude Code reports one Task tool call with two hooks
    (TaskCreated, then the tool's own PostToolUse with the spinner text); the second completes
    the change the first recorded. The agent still used its todo list, which the enforcer
    counts as any write. `idempotency_key` (the tool call's) is kept on the revision when it
    has none, so a delivery seen before is known as such."""
    new_items = todo_items_redacted(new_items)
    agent = resolved.agent
    with connection.cursor() as cursor:
        _todos_replace(cursor, agent=agent, items=new_items)
        cursor.execute(
            _AMEND_REVISION,
            [
                connection.ops.adapt_json_value(new_items, None),
                _request_hash(new_items),
                idempotency_key or None,
                agent.pk,
                agent.todo_revision,
            ],
        )
        (revision_pk,) = cursor.fetchone()
    changes = resolved.changes()
    changes.amended_revisions.add(revision_pk)
    return changes.merge(enforcer.on_todo_write(agent=agent, old=old_items, new=new_items))


def _todos_replace(cursor: CursorWrapper, *, agent: Agent, items: list[dict[str, str]]) -> None:
    cursor.execute(_DELETE_TODOS, [agent.pk])
    cursor.executemany(
        _INSERT_TODO,
        [
            (
                agent.pk,
                position,
                item["content"],
                item.get("activeForm", ""),
                item["status"],
                item.get("priority", ""),
                item.get("id", ""),
            )
            for position, item in enumerate(items)
        ],
    )


def todo_list_read(*, owner: AbstractBaseUser, session_id: str, agent_id: str) -> dict:
    """TodoRead: the current list; an unknown agent (or another user's) has an empty one."""
    validate_id(session_id, name="session_id")
    validate_id(agent_id, name="agent_id")
    agent = (
        Agent.objects.filter(session__session_id=session_id, agent_id=agent_id)
        .select_related("session")
        .prefetch_related("todos")
        .first()
    )
    # Another user's agent reads as an unknown one: no answer tells which sessions exist.
    if agent is None or agent.session.owner_id != owner.pk:
        return {"revision": 0, "todos": [], "progress": progress_of([]).model_dump()}
    items = current_todos(agent) or completed_list_of([agent]).get(agent.pk, [])
    return {
        "revision": agent.todo_revision,
        "todos": items,
        "progress": progress_of(items).model_dump(),
    }


_SESSION_TODOS = """
    SELECT agent_id, content, status, active_form, external_id, priority FROM todos_todo
    WHERE agent_id IN (SELECT id FROM dashboard_agent WHERE session_id = %s)
    ORDER BY agent_id, position
"""


def completed_list_of(agents: Iterable[Agent]) -> dict[int, list[dict[str, str]]]:
    """The list each of these agents completed whole, by agent pk, for those whose last write
    completed every item. Such a list is not kept as the current one (the agent starts its next
    list afresh, as Claude Code does), but a read reports it as the board does: all done.
    One query, and none when no agent finished a list."""
    finished = {agent.pk: agent.todo_revision for agent in agents if agent.cleared_total > 0}
    if not finished:
        return {}
    revisions = TodoRevision.objects.filter(
        agent_id__in=finished, number__in=set(finished.values())
    ).values_list("agent_id", "number", "new_todos")
    return {pk: items for pk, number, items in revisions if finished[pk] == number}


def session_read(*, owner: AbstractBaseUser, session_id: str) -> dict:
    """A session of this owner with every agent's current list and progress, in two queries
    (three when an agent completed its whole list).
    Unknown, or another user's, is the same 404."""
    session = session_of_owner(owner=owner, session_id=session_id)
    agents = list(session.agents.order_by("started_at", "pk"))
    todos: dict[int, list[dict[str, str]]] = {agent.pk: [] for agent in agents}
    with connection.cursor() as cursor:
        cursor.execute(_SESSION_TODOS, [session.pk])
        for agent_pk, *row in cursor.fetchall():
            todos[agent_pk].append(todo_wire(*row))
    for agent_pk, items in completed_list_of(agents).items():
        todos[agent_pk] = todos[agent_pk] or items
    return {
        "session_id": session.session_id,
        "project": session.project,
        "repository": session.repository,
        "host": session.host,
        "cwd": session.cwd,
        "permission_mode": session.permission_mode,
        "started_at": session.started_at,
        "last_seen_at": session.last_seen_at,
        "ended_at": session.ended_at,
        "agents": [
            {
                "agent_id": agent.agent_id,
                "agent_type": agent.agent_type,
                "main": agent.agent_id == session.session_id,
                "status": agent.status,
                "revision": agent.todo_revision,
                "todos": todos[agent.pk],
                "progress": progress_of(todos[agent.pk]).model_dump(),
            }
            for agent in agents
        ],
        "progress": progress_of(item for items in todos.values() for item in items).model_dump(),
    }
