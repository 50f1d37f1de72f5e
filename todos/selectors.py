"""Reads of an agent's current list, in the shape agents send and read it (TodoRead)."""

from __future__ import annotations

from django.db import connection

from dashboard.models import Agent

# Run on every write: plain SQL, since compiling the ORM's SELECT costs more than running it.
_CURRENT_TODOS = """
    SELECT content, status, active_form, external_id, priority FROM todos_todo
    WHERE agent_id = %s ORDER BY position
"""


def current_todos(agent: Agent) -> list[dict[str, str]]:
    with connection.cursor() as cursor:
        cursor.execute(_CURRENT_TODOS, [agent.pk])
        return [todo_wire(*row) for row in cursor.fetchall()]


def todo_wire(
    content: str, status: str, active_form: str, external_id: str, priority: str
) -> dict[str, str]:
    """One item as the wire has it: optional fields only when set."""
    wire = {"content": content, "status": status}
    if active_form:
        wire["activeForm"] = active_form
    if external_id:
        wire["id"] = external_id
    if priority:
        wire["priority"] = priority
    return wire
