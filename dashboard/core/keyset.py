"""Keyset pages of a list that grows with history, newest first: a page is read from where the
last one ended (its last row's time and id, the cursor), never by counting rows to skip, so
the hundredth page costs what the first does, and rows added meanwhile at the top neither
shift a page nor show twice. "Older" reads past the last row shown; "Newer" reads back from
the first one, so paging forward and back shows every row exactly once.

The timeline's list of steps (`dashboard.activity.selectors.session_steps`) pages the same way.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from django.db.models import Model, Q, QuerySet
from django.utils.dateparse import parse_datetime

Row = TypeVar("Row", bound=Model)
PAGE_SIZE = 50
MAX_PAGE_SIZE = 200


@dataclass(frozen=True)
class Cursor:
    at: datetime
    pk: int

    def encode(self) -> str:
        raw = f"{self.at.isoformat()}|{self.pk}"
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> Cursor:
        """Raises ValueError for a cursor this server did not hand out."""
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
            moment, _, pk = raw.partition("|")
            at = parse_datetime(moment)
            if at is None or not pk.isdigit():
                raise ValueError
            return cls(at, int(pk))
        except (ValueError, UnicodeDecodeError):
            raise ValueError("not a cursor of this list") from None


@dataclass(frozen=True)
class Page(Generic[Row]):
    """One page, newest first; `older` and `newer` are the cursors of the pages beside it
    (None at either end)."""

    rows: list[Row]
    older: str | None
    newer: str | None

    @property
    def first(self) -> bool:
        return self.newer is None


def page_of(
    rows: QuerySet[Row],
    *,
    at: str,
    before: str | None = None,
    after: str | None = None,
    size: int = PAGE_SIZE,
) -> Page[Row]:
    """The page of `rows` (ordered newest first by the field `at`, then by pk) older than the
    cursor `before`, newer than the cursor `after`, or else the newest; one query either way.
    Raises ValueError for a cursor this list did not hand out."""
    size = max(1, min(size, MAX_PAGE_SIZE))

    def cursor_of(row: Row) -> str:
        return Cursor(getattr(row, at), row.pk).encode()

    if after:
        cursor = Cursor.decode(after)
        newer = Q(**{f"{at}__gt": cursor.at}) | Q(**{at: cursor.at, "pk__gt": cursor.pk})
        found = list(rows.filter(newer).order_by(at, "pk")[: size + 1])
        more_newer = len(found) > size
        chosen = found[:size][::-1]
        if not chosen:
            return page_of(rows, at=at, size=size)
        return Page(chosen, cursor_of(chosen[-1]), cursor_of(chosen[0]) if more_newer else None)
    if before:
        cursor = Cursor.decode(before)
        older = Q(**{f"{at}__lt": cursor.at}) | Q(**{at: cursor.at, "pk__lt": cursor.pk})
        rows = rows.filter(older)
    found = list(rows.order_by(f"-{at}", "-pk")[: size + 1])
    chosen = found[:size]
    return Page(
        chosen,
        older=cursor_of(chosen[-1]) if len(found) > size else None,
        newer=cursor_of(chosen[0]) if before and chosen else None,
    )
