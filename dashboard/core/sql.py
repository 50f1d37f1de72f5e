"""The hot paths' SQL (a hook, a decision, a live update), where Django compiling a query costs
more than the database running it: a few plain statements, and ORM querysets compiled once per
process. Each plain statement is standard SQL that SQLite and PostgreSQL both take.

On PostgreSQL every statement is also a round trip to another process, each waking it and then
the caller: `run_together()` sends several at once where none depends on the answer of the one
before. There these statements are also prepared (`hot_cursor()`): parsed and planned once per
connection instead of on every run, since for a read with joins, planning costs PostgreSQL more
than running it."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from django.db import connection, models
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from django.db.models import QuerySet
from django.db.models.query import get_related_populators
from django.db.models.sql.compiler import SQLCompiler
from django.utils import timezone

M = TypeVar("M", bound=models.Model)


# A plain statement and its parameters.
Statement = tuple[str, Sequence[Any]]


def hot_cursor() -> CursorWrapper:
    """A cursor for a statement that runs on every event. On PostgreSQL (unless prepared
    statements are turned off, `AGENTBOARD_PREPARED_STATEMENTS`) it binds parameters on the
    server, and psycopg prepares each statement the first time this connection runs it; the
    ORM's own cursor binds on the client, so PostgreSQL parses and plans its SQL on every run.
    The statement must be one PostgreSQL can type without seeing its values (casts where it
    cannot)."""
    if connection.vendor != "postgresql":
        return connection.cursor()
    connection.ensure_connection()
    if connection.connection.prepare_threshold is None:
        return connection.cursor()
    from django.db.backends.postgresql.base import ServerBindingCursor

    cursor = ServerBindingCursor(connection.connection)
    if connection.queries_logged:
        return _LoggedHotCursor(cursor, connection)
    return connection.make_cursor(cursor)


# How many prepared statements a PostgreSQL connection keeps (psycopg's default is 100, and
# past it each new one costs a round trip to deallocate the oldest): every hot read for every
# number of ids up to PreparedQuery.MOST_IDS, with room to spare.
PREPARED_PER_CONNECTION = 2000


def keep_prepared(sender: Any, connection: Any, **kwargs: Any) -> None:
    """On each new PostgreSQL connection (`connection_created`): room for every hot statement."""
    if connection.vendor == "postgresql" and connection.connection.prepare_threshold is not None:
        connection.connection.prepared_max = PREPARED_PER_CONNECTION


class _LoggedHotCursor(CursorDebugWrapper):
    """Logs a hot statement with its values (tests, DEBUG): Django reads the SQL it logs off
    a client-binding cursor, and finds none on this one."""

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        with self.debug_sql(self.db.ops.compose_sql(sql, params)):
            return CursorWrapper.execute(self, sql, params)


def run_together(statements: Sequence[Statement]) -> list[int]:
    """Run plain statements in order and return each one's row count. On PostgreSQL they go out
    together, in one round trip (psycopg's pipeline mode); SQLite runs in this process."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            counts = []
            for sql, params in statements:
                cursor.execute(sql, list(params))
                counts.append(cursor.rowcount)
            return counts
    connection.ensure_connection()
    cursors = []
    try:
        # A failure surfaces when the pipeline ends: as Django's error, like any other.
        with connection.wrap_database_errors, connection.connection.pipeline():
            for sql, params in statements:
                cursor = hot_cursor()
                cursors.append(cursor)
                cursor.execute(sql, list(params))
        return [cursor.rowcount for cursor in cursors]
    finally:
        for cursor in cursors:
            cursor.close()


def any_row(sql: str, params: Sequence[Any] = ()) -> bool:
    """Whether `sql` (a SELECT) finds at least one row."""
    with hot_cursor() as cursor:
        cursor.execute(sql, list(params))
        return cursor.fetchone() is not None


def aware(moment: datetime | str) -> datetime:
    """A time read with a plain statement: SQLite gives naive UTC (or text), PostgreSQL aware."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    return moment if timezone.is_aware(moment) else moment.replace(tzinfo=UTC)


def rows_in(sql: str, ids: Sequence[int], params: Sequence[Any] = ()) -> list[tuple]:
    """The rows of `sql` for a list of ids: `{ids}` in `sql` stands for its placeholders, and
    `params` fill the placeholders that come after it."""
    placeholders = ", ".join(["%s"] * len(ids))
    # Each number of ids is a statement of its own: only the common short lists are prepared.
    prepared = len(ids) <= PreparedQuery.MOST_IDS
    with hot_cursor() if prepared else connection.cursor() as cursor:
        cursor.execute(sql.format(ids=placeholders), [*ids, *params])
        return cursor.fetchall()


class PreparedQuery(Generic[M]):
    """A hot read by a list of ids, compiled once per process and number of ids: Django
    compiles a query anew on every run, which for a join or a subquery costs more than the
    database takes to answer it. This keeps the ORM's own SQL, converters and model building
    (related rows included) and skips only the compiling.

    `queryset(ids)` builds the read from a list of ids (`filter(pk__in=ids)`, or `pk=ids[0]` for
    a single row); its annotations become attributes of each model, as the ORM does. A shape
    this cannot prepare (ids that do not end up as parameters of their own) falls back to
    running the queryset as it is."""

    # Ids stand in by these while compiling; no real id or other parameter takes such a value.
    PLACEHOLDER = -7_340_017
    MOST_IDS = 64

    def __init__(self, model: type[M], queryset: Callable[[list[int]], QuerySet[M]]) -> None:
        self.model = model
        self.queryset = queryset
        self.compiled: dict[int, _Compiled | None] = {}

    def get(self, pk: int) -> M | None:
        rows = self.rows([pk])
        return rows[0] if rows else None

    def rows(self, ids: Sequence[int]) -> list[M]:
        ids = sorted(set(ids))
        if not ids:
            return []
        if len(ids) not in self.compiled and len(ids) <= self.MOST_IDS:
            self.compiled[len(ids)] = self._compile(len(ids))
        compiled = self.compiled.get(len(ids))
        if compiled is None:
            return list(self.queryset(ids))
        return compiled.run(self.model, ids)

    def _compile(self, count: int) -> _Compiled | None:
        stand_ins = stand_in_ids(count)
        compiler = self.queryset(list(stand_ins)).query.get_compiler(using="default")
        sql, params = compiler.as_sql()
        shape = params_shape(params, stand_ins)
        if shape is None:
            return None
        klass_info = compiler.klass_info
        select_fields = klass_info["select_fields"]
        start, end = select_fields[0], select_fields[-1] + 1
        fields = [column[0] for column in compiler.select[: compiler.col_count]]
        return _Compiled(
            compiler=compiler,
            sql=sql,
            shape=shape,
            start=start,
            end=end,
            init_list=[column[0].target.attname for column in compiler.select[start:end]],
            populators=get_related_populators(klass_info, compiler.select, "default"),
            converters=compiler.get_converters(fields),
            annotations=dict(compiler.annotation_col_map),
        )


def stand_in_ids(count: int) -> dict[int, int]:
    """Ids to compile a query with, each mapped to its index: no real id or other parameter
    takes such a value."""
    return {PreparedQuery.PLACEHOLDER - i: i for i in range(count)}


Shape = list[tuple[int | None, Any]]


def params_shape(params: Sequence[Any], stand_ins: dict[int, int]) -> Shape | None:
    """Each parameter of a query compiled with `stand_ins`: (the index of the id it stands
    for, None) or (None, the query's own constant); None when some id did not end up as a
    parameter of its own (the query cannot be run again with other ids)."""
    shape: Shape = [(stand_ins[p], None) if p in stand_ins else (None, p) for p in params]
    if {index for index, _ in shape if index is not None} != set(range(len(stand_ins))):
        return None
    return shape


def filled(shape: Shape, ids: Sequence[int]) -> list[Any]:
    return [ids[index] if index is not None else value for index, value in shape]


class PreparedRows:
    """A `values_list` read that pages run on every request, compiled once per key and number
    of ids: building and compiling a union of several models' querysets costs the ORM more
    than the database takes to answer it.

    `queryset(key, ids)` builds the read; the key (hashable) and the ids' number must decide
    its SQL entirely (nothing in it may depend on the time or on what the database holds).
    `ids` None is a read without ids. Rows are tuples in the `values_list`'s order, converted as
    the ORM converts them. A shape this cannot prepare runs as it is, every time."""

    # Past this many compiled reads, the oldest half is forgotten.
    MOST = 512
    # A longer list of ids is not prepared (each length would be a read of its own).
    MOST_IDS = PreparedQuery.MOST_IDS

    def __init__(self, queryset: Callable[[Any, list[int] | None], QuerySet]) -> None:
        self.queryset = queryset
        self.compiled: dict[tuple[Hashable, int | None], _CompiledRows | None] = {}

    def rows(self, key: Hashable, ids: Sequence[int] | None = None) -> list[tuple]:
        wanted = None if ids is None else list(ids)
        count = None if wanted is None else len(wanted)
        compiled = None if count is not None and count > self.MOST_IDS else self._for(key, count)
        if compiled is None:
            return [tuple(row) for row in self.queryset(key, wanted)]
        return compiled.run(wanted or [])

    def _for(self, key: Hashable, count: int | None) -> _CompiledRows | None:
        slot = (key, count)
        if slot not in self.compiled:
            if len(self.compiled) >= self.MOST:
                for old in list(self.compiled)[: self.MOST // 2]:
                    self.compiled.pop(old, None)
            self.compiled[slot] = self._compile(key, count)
        return self.compiled.get(slot)

    def _compile(self, key: Hashable, count: int | None) -> _CompiledRows | None:
        stand_ins = stand_in_ids(count or 0)
        queryset = self.queryset(key, None if count is None else list(stand_ins))
        compiler = queryset.query.get_compiler(using="default")
        sql, params = compiler.as_sql()
        shape = params_shape(params, stand_ins)
        if shape is None:
            return None
        fields = [column[0] for column in compiler.select[: compiler.col_count]]
        return _CompiledRows(compiler, sql, shape, compiler.get_converters(fields))


@dataclass(frozen=True)
class _CompiledRows:
    compiler: SQLCompiler
    sql: str
    shape: Shape
    converters: dict[int, Any]

    def run(self, ids: Sequence[int]) -> list[tuple]:
        with connection.cursor() as cursor:
            cursor.execute(self.sql, filled(self.shape, ids))
            rows = cursor.fetchall()
        if self.converters:
            return [tuple(row) for row in self.compiler.apply_converters(rows, self.converters)]
        return rows


@dataclass(frozen=True)
class _Compiled:
    """A query compiled for a number of ids, and how to build models from its rows."""

    compiler: SQLCompiler
    sql: str
    # Per parameter: (index of the id, None) or (None, the query's own constant).
    shape: Shape
    start: int
    end: int
    init_list: list[str]
    populators: list[Any]
    converters: dict[int, Any]
    # Annotation name -> its column.
    annotations: dict[str, int]

    def run(self, model: type[M], ids: list[int]) -> list[M]:
        with hot_cursor() as cursor:
            cursor.execute(self.sql, filled(self.shape, ids))
            rows = cursor.fetchall()
        if self.converters:
            rows = self.compiler.apply_converters(rows, self.converters)
        found = []
        for row in rows:
            instance = model.from_db("default", self.init_list, row[self.start : self.end])
            for populator in self.populators:
                populator.populate(row, instance)
            for name, column in self.annotations.items():
                setattr(instance, name, row[column])
            found.append(instance)
        return found
