"""Plain SQL for the few statements on hot paths (a hook, a decision, a live update), where
Django compiling a query costs more than the database running it. Each statement is standard
SQL that SQLite and PostgreSQL both take; everything else goes through the ORM."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection


def any_row(sql: str, params: Sequence[Any] = ()) -> bool:
    """Whether `sql` (a SELECT) finds at least one row."""
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        return cursor.fetchone() is not None


def rows_in(sql: str, ids: Sequence[int]) -> list[tuple]:
    """The rows of `sql` for a list of ids: `{ids}` in `sql` stands for its placeholders."""
    placeholders = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(sql.format(ids=placeholders), list(ids))
        return cursor.fetchall()
