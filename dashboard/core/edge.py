"""The edge every agent input crosses: HTTP API bodies, hook input and socket frames.

One reader (`load_json`) makes any JSON safe to validate: it parses as standard JSON, holds
no number a database's JSON column refuses (Python's reader also takes `NaN`, `Infinity` and
`-Infinity`, and reads `1e400` as infinity) and no lone UTF-16 surrogate such as "\\ud800" in any
string or key (JSON can express one, no database can store it), and it is not nested so deep
that walking it (here, in pydantic, in `json` itself) exhausts the stack. Then each field is
validated with the text types below, so that what reaches the database can be stored there:
PostgreSQL refuses NUL characters and strings longer than their column; SQLite would store them
silently, and refusing them here gives one answer whatever the database.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Annotated, Any

from django.contrib.auth import get_user_model
from django.core.exceptions import BadRequest
from django.db import models
from pydantic import BeforeValidator, Field, PlainValidator, StrictInt, StrictStr, WithJsonSchema

from dashboard.core.errors import ServiceError
from dashboard.models import IDEMPOTENCY_KEY_LENGTH, Agent, Project, Session

# Deeper than any real payload; far below where Python's recursion limit would be reached.
MAX_JSON_DEPTH = 64

# The largest integer a database id or a stored number can hold (a 64-bit signed integer).
MAX_INTEGER = 2**63 - 1

# Published in the OpenAPI schema, so that clients and schema-driven tools know what is
# accepted: text without NUL characters, and for some fields not blank either. Written so that
# every regex engine reads them alike (Python, ECMAScript, Rust): whitespace is spelled out as
# the characters `str.strip()` strips, and lone surrogates, which most engines cannot express
# (nor most JSON libraries produce), are left to the validators.
SPACE_CLASS = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
TEXT_PATTERN = r"^[^\u0000]*$"
NON_BLANK_PATTERN = rf"^[^\u0000]*[^\u0000{SPACE_CLASS}][^\u0000]*$"

Json = Any
Path = list[str | int]


class NonFiniteNumber(ValueError):
    """Standard JSON has no NaN or infinite numbers; Python's reader takes them all the same,
    and reads a number too large for a double (`1e400`) as infinity."""

    def __init__(self, literal: str, path: Path, document: Json = None) -> None:
        super().__init__(f"{literal} is not a finite number")
        self.literal = literal
        self.path = path
        self.document = document

    @property
    def overflows(self) -> bool:
        """A number JSON has, too large for a 64-bit float (not NaN, Infinity, -Infinity)."""
        return self.literal not in _CONSTANTS


class LoneSurrogate(ValueError):
    """A string (or a key) holding half of a UTF-16 pair, which JSON can write as an escape
    (`"\\ud800"`) but no database can store as text."""

    def __init__(self, path: Path, document: Json = None) -> None:
        super().__init__("a lone surrogate is not text")
        self.path = path
        self.document = document


class RefusedJson(ServiceError):
    """A 422 for JSON that could be read but holds what no database stores; `document` is
    what was read (where a socket finds the frame's id to answer)."""

    def __init__(self, code: str, message: str, *, detail: list, document: Json) -> None:
        super().__init__(code, message, detail=detail)
        self.document = document


_CONSTANTS = frozenset({"NaN", "Infinity", "-Infinity"})


class _Refused(Exception):
    """Raised by the fast reader at the first number it refuses; the slow reader says where."""


class _NonFinite:
    """Stands where the slow reader met a number it refuses, until its place is found."""

    def __init__(self, literal: str) -> None:
        self.literal = literal


def _refuse(literal: str) -> float:
    raise _Refused


def _finite_float(literal: str) -> float:
    number = float(literal)
    if number in (math.inf, -math.inf):
        raise _Refused
    return number


def _finite_float_or_marker(literal: str) -> float | _NonFinite:
    number = float(literal)
    return _NonFinite(literal) if number in (math.inf, -math.inf) else number


# One decoder each for every call (json.loads with an argument builds a new one each time): the
# fast one stops at the first refused number, the slow one reads on to find where it is.
_DECODER = json.JSONDecoder(parse_constant=_refuse, parse_float=_finite_float)
_MARKING_DECODER = json.JSONDecoder(parse_constant=_NonFinite, parse_float=_finite_float_or_marker)
# A lone surrogate reaches a decoded string only through a `\\uXXXX` escape (strictly decoded
# UTF-8 and UTF-16 cannot carry one), so strings are only walked when the text has such an escape
# (or a surrogate itself, in text decoded elsewhere).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")


def strict_loads(raw: bytes | str) -> Json:
    """`json.loads`, refusing what no database stores: NaN, Infinity, -Infinity and numbers
    that overflow to them (NonFiniteNumber), and strings or keys with a lone surrogate
    (LoneSurrogate), each a ValueError saying where the first one is."""
    if isinstance(raw, bytes):
        encoding = json.detect_encoding(raw)
        try:
            text = raw.decode(encoding)
            suspect = "\\ud" in text or "\\uD" in text
        except UnicodeDecodeError:
            # An encoded surrogate, as JSON's own reader would take it; other bytes that are
            # not text still fail here (a ValueError, as for any text that is not JSON).
            text = raw.decode(encoding, "surrogatepass")
            suspect = True
    else:
        text = raw
        suspect = _SURROGATE_ESCAPE.search(text) is not None
    try:
        value = _DECODER.decode(text)
    except _Refused:
        value = _MARKING_DECODER.decode(text)
        suspect = True
    if suspect:
        _refuse_first(value)
    return value


def _refuse_first(value: Json) -> None:
    """Raise for the first refused number or lone surrogate in `value`, in document order."""
    stack: list[tuple[Json, Path]] = [(value, [])]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if not _is_text(node):
                raise LoneSurrogate(path, value)
        elif isinstance(node, _NonFinite):
            raise NonFiniteNumber(node.literal, path, value)
        elif isinstance(node, dict):
            for key in node:
                if not _is_text(key):
                    raise LoneSurrogate([*path, key.encode("utf-8", "replace").decode()], value)
            stack.extend((child, [*path, key]) for key, child in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((node[index], [*path, index]) for index in reversed(range(len(node))))


def _is_text(value: str) -> bool:
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def load_json(raw: bytes | str, *, what: str) -> Json:
    """`raw` parsed; a 400 for text that is not JSON, a 422 for JSON nested too deep, holding a
    number no database stores (NaN, Infinity, 1e400) or a lone surrogate, naming where.

    `what` names the input in the sentence ("hook input", "request body", "frame").
    """
    try:
        value = strict_loads(raw)
    except RecursionError:
        raise too_deep(what, []) from None
    except NonFiniteNumber as error:
        raise non_finite(what, error) from None
    except LoneSurrogate as error:
        raise lone_surrogate(what, error) from None
    except ValueError:
        raise ServiceError("malformed_json", f"The {what} is not valid JSON.", status=400) from None
    path = too_deep_at(value)
    if path is not None:
        raise too_deep(what, path)
    return value


def non_finite(what: str, error: NonFiniteNumber) -> RefusedJson:
    where = _where(error.path)
    if not error.overflows:
        return RefusedJson(
            "non_finite_number",
            f"The {what} holds {error.literal}{where}, which is not a JSON number; "
            "send a finite number or null.",
            detail=[{"loc": ["body", *error.path], "msg": f"{error.literal} is not a JSON number"}],
            document=error.document,
        )
    # A literal can be hundreds of digits long: the sentence shows its start.
    shown = error.literal if len(error.literal) <= 24 else f"{error.literal[:20]}…"
    return RefusedJson(
        "non_finite_number",
        f"The {what} holds {shown}{where}, a number beyond the range of a 64-bit float; "
        "send a smaller number or null.",
        detail=[{"loc": ["body", *error.path], "msg": "is beyond the range of a 64-bit float"}],
        document=error.document,
    )


def lone_surrogate(what: str, error: LoneSurrogate) -> RefusedJson:
    return RefusedJson(
        "validation_error",
        f"The {what} holds a lone surrogate{_where(error.path)} (half of a UTF-16 pair, "
        "such as \\ud800), which is not text; send valid Unicode.",
        detail=[
            {
                "loc": ["body", *error.path],
                "msg": "must be valid Unicode: it holds a lone surrogate such as \\ud800",
            }
        ],
        document=error.document,
    )


def _where(path: Path) -> str:
    shown = ".".join(str(part) for part in path)
    return f" at {shown}" if shown else ""


def too_deep_at(value: Json, limit: int = MAX_JSON_DEPTH) -> Path | None:
    """The path to the first object or list nested deeper than `limit`, or None."""
    stack: list[tuple[Json, int, Path]] = [(value, 1, [])]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, dict):
            children: Any = node.items()
        elif isinstance(node, list):
            children = enumerate(node)
        else:
            continue
        if depth > limit:
            return path
        stack.extend(
            (child, depth + 1, [*path, key])
            for key, child in children
            if isinstance(child, dict | list)
        )
    return None


def too_deep(what: str, path: Path) -> ServiceError:
    shown = ".".join(str(part) for part in path[:4])
    where = f" (at {shown}…)" if shown else ""
    return ServiceError(
        "too_deeply_nested",
        f"The {what} nests objects and lists more than {MAX_JSON_DEPTH} levels deep{where}; "
        "send flatter JSON.",
        detail=[
            {"loc": ["body", *path[:4]], "msg": f"nested more than {MAX_JSON_DEPTH} levels deep"}
        ],
    )


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text, as a pydantic-style message; None when it can."""
    if "\x00" in value:
        return "must not contain NUL characters (\\u0000)"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "must be valid Unicode: it holds a lone surrogate such as \\ud800"
    return None


def text_tree_problem(value: Json) -> tuple[Path, str] | None:
    """The first string (key or value) in a JSON value that cannot be stored, with why."""
    stack: list[tuple[Json, Path]] = [(value, [])]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            problem = text_problem(node)
            if problem:
                return path, problem
        elif isinstance(node, dict):
            for key, child in node.items():
                problem = text_problem(key) if isinstance(key, str) else None
                if problem:
                    return [*path, key.encode("utf-8", "replace").decode()], f"key {problem}"
                stack.append((child, [*path, key]))
        elif isinstance(node, list):
            stack.extend((child, [*path, index]) for index, child in enumerate(node))
    return None


def storable_tree(value: Json) -> Json:
    """`value` itself when every text in it can be stored; otherwise a ValueError naming the
    first one that cannot, by its path (for pydantic validators)."""
    found = text_tree_problem(value)
    if found:
        path, problem = found
        where = ".".join(str(part) for part in path)
        raise ValueError(f"{where} {problem}" if where else problem)
    return value


def _text_check(blank: str | None) -> BeforeValidator:
    def check(value: object) -> object:
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                raise ValueError(problem)
            if blank and not value.strip():
                raise ValueError(blank)
        return value

    return BeforeValidator(check)


def text_type(*, max_length: int | None = None, blank: str | None = None) -> Any:
    """A string field that can be stored: strict, no NUL, no lone surrogate, at most
    `max_length` characters; with `blank` (the message) it must also hold a non-space.

    Named at module level and used as a type: `Content = text_type(blank="must not be empty")`.
    """
    pattern = NON_BLANK_PATTERN if blank else TEXT_PATTERN
    return Annotated[
        StrictStr,
        Field(max_length=max_length, json_schema_extra={"pattern": pattern}),
        _text_check(blank),
    ]


def text_or_integer_type(*, max_length: int, blank: str) -> Any:
    """An id a client may send as a string or as an integer (`"3"` or `3`), stored as text:
    one check with one clear message, where a union would report each of its members."""
    text_schema = {"type": "string", "maxLength": max_length, "pattern": NON_BLANK_PATTERN}
    integer_schema = {"type": "integer", "minimum": -MAX_INTEGER - 1, "maximum": MAX_INTEGER}

    def check(value: object) -> str | int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON Schema's integers include 3.0
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ValueError("must be a string or an integer")
        if isinstance(value, int):
            if not -MAX_INTEGER - 1 <= value <= MAX_INTEGER:
                raise ValueError(f"must be a 64-bit integer (at most {MAX_INTEGER})")
            return value
        problem = text_problem(value)
        if problem:
            raise ValueError(problem)
        if not value.strip():
            raise ValueError(blank)
        if len(value) > max_length:
            raise ValueError(f"must be at most {max_length} characters")
        return value

    return Annotated[
        str | int,
        PlainValidator(check),
        WithJsonSchema({"anyOf": [text_schema, integer_schema]}),
    ]


def column_length(model: type[models.Model], field: str) -> int:
    """The `max_length` of a model's text column: input limits follow the schema."""
    length = model._meta.get_field(field).max_length
    assert length is not None, f"{model.__name__}.{field} has no max_length"
    return length


# An integer that fits the database's 64-bit columns (ids, numbers stored as text).
Integer = Annotated[StrictInt, Field(ge=-MAX_INTEGER - 1, le=MAX_INTEGER)]
# A database primary key as a client sends it.
Pk = Annotated[StrictInt, Field(ge=1, le=MAX_INTEGER)]


# Who reports: the same limits wherever an agent names its type or its working directory.
AgentType = text_type(max_length=column_length(Agent, "agent_type"))
Cwd = text_type(max_length=column_length(Session, "cwd"))
# Stored as the idempotency key of the write or plan it made, and as a step's key.
ToolUseId = text_type(max_length=IDEMPOTENCY_KEY_LENGTH)


def plain_name(name: str, *, what: str, max_length: int) -> str:
    """A name a person gives something (a project, a team): whitespace collapsed, not blank,
    within `max_length`, plain text; else one sentence (a 422) naming `what` ("project")."""
    name = " ".join(name.split())
    if not name:
        raise ServiceError("validation_error", f"Give the {what} a name.", status=422)
    if len(name) > max_length:
        raise ServiceError(
            "validation_error", f"A {what}'s name has at most {max_length} characters.",
            status=422,
        )  # fmt: skip
    if any(unicodedata.category(ch)[0] == "C" for ch in name):
        raise ServiceError(
            "validation_error", f"A {what}'s name is plain text, without control characters.",
            status=422,
        )  # fmt: skip
    return name


def query_text(query: Mapping[str, str], name: str, *, max_length: int = 200) -> str:
    """A page's text parameter (`?person=`, `?tool=` …), refused with one clear sentence (a
    400) when a database could not compare it: too long, a NUL, a lone surrogate."""
    value = query.get(name, "") or ""
    if len(value) > max_length:
        raise BadRequest(f"The {name} is at most {max_length} characters.")
    problem = text_problem(value)
    if problem:
        raise BadRequest(f"The {name} {problem}.")
    return value


def query_project(query: Mapping[str, str]) -> int | None:
    """A page's `?project=` (its id), or None; one that names no project is a clear 400."""
    project = query.get("project", "") or ""
    if not project:
        return None
    if not (project.isdigit() and Project.objects.filter(pk=project).exists()):
        raise BadRequest("There is no such project; pick one from the list.")
    return int(project)


def query_person(query: Mapping[str, str]) -> tuple[str, int] | None:
    """A page's `?person=` (a user name) with the person's pk, or None; a user name of nobody
    is a clear 400."""
    username = query_text(query, "person", max_length=150)
    if not username:
        return None
    pk = get_user_model().objects.filter(username=username).values_list("pk", flat=True).first()
    if pk is None:
        raise BadRequest("There is nobody with this user name; pick someone from the list.")
    return username, pk
