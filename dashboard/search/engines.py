"""The full-text engines behind one small interface: SQLite's FTS5 (the embedded default) and
PostgreSQL's full-text search (for teams). Both stem English words ("paginate" finds
"pagination"), take phrases in double quotes ("cursor pagination"), rank by relevance and mark
the matching words; neither ever sees the user's text as syntax: FTS5 gets a query built from
its words, PostgreSQL parses it with `websearch_to_tsquery`, which accepts any text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from django.db import connection
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

# The words of a query kept, and its length: enough for any question a person types.
MAX_TERMS = 12
MAX_QUERY_CHARS = 500
# Matching words come back between these two characters, then become <mark> (escaped first).
START, STOP = "\x02", "\x03"
# Results are ranked among the newest this many matches: a word found a hundred thousand times
# in a year costs what a rare one does (FTS5 reads matches backwards in the order they were
# indexed, PostgreSQL on the entries' time index, and both stop there), and among that many
# the best are as good as any.
CANDIDATES = 500
WORD = re.compile(r"\w+", re.UNICODE)
PHRASE = re.compile(r'"([^"]*)"')


@dataclass(frozen=True)
class Filters:
    kinds: tuple[str, ...] = ()
    project: int | None = None
    person: int | None = None
    since: datetime | None = None
    until: datetime | None = None
    # The sessions the searcher may see, as SQL on the session table `s` with its parameters
    # (`dashboard.core.visibility`); empty: every session.
    sessions_sql: str = ""
    sessions_params: tuple = ()


@dataclass(frozen=True)
class Hit:
    entry: int
    kind: str
    ref: int
    parent: int | None
    session: int
    at: datetime
    title: SafeString
    snippet: SafeString


class Engine(Protocol):
    def search(self, text: str, filters: Filters, limit: int) -> list[Hit]: ...


def cleaned(text: str) -> str:
    """What of a query an engine is given: no NUL or control characters, bounded."""
    text = "".join(ch if ch.isprintable() else " " for ch in text[:MAX_QUERY_CHARS])
    return " ".join(text.split())


MATCH = re.compile(f"{START}(.*?){STOP}", re.DOTALL)


def marked(text: str | None) -> SafeString:
    """The engine's text with its matches in <mark>: every piece of the text is escaped by
    `format_html`, nothing of it is trusted."""
    pieces = MATCH.split(text or "")
    # split with one group: plain, match, plain, match, …, plain
    parts = [
        format_html("<mark>{}</mark>", piece)
        if index % 2
        else format_html("{}", piece.replace(START, "").replace(STOP, ""))
        for index, piece in enumerate(pieces)
    ]
    return format_html_join("", "{}", ((part,) for part in parts))


def _where(filters: Filters) -> tuple[str, list]:
    sql, params = [], []
    if filters.kinds:
        sql.append(f"e.kind IN ({', '.join(['%s'] * len(filters.kinds))})")
        params += list(filters.kinds)
    if filters.project is not None:
        sql.append("s.project_record_id = %s")
        params.append(filters.project)
    if filters.person is not None:
        # The entry's own copy of its session's owner: a person's newest entries are read on
        # their index (`search_owner_time`), not every match joined to its session.
        sql.append("e.owner_id = %s")
        params.append(filters.person)
    if filters.since is not None:
        sql.append("e.at >= %s")
        params.append(filters.since)
    if filters.until is not None:
        sql.append("e.at < %s")
        params.append(filters.until)
    if filters.sessions_sql:
        sql.append(f"({filters.sessions_sql})")
        params += list(filters.sessions_params)
    return "".join(f" AND {part}" for part in sql), params


def _hits(rows) -> list[Hit]:
    hits = []
    for entry, kind, ref, parent, session, at, title, snippet in rows:
        if isinstance(at, str):  # SQLite hands raw SQL's dates back as text
            at = parse_datetime(at)
        hits.append(Hit(entry, kind, ref, parent, session, at, marked(title), marked(snippet)))
    return hits


class Fts5:
    """SQLite: the `search_fts` FTS5 table (porter stemming), kept in step by triggers."""

    @staticmethod
    def query(text: str) -> str:
        """An FTS5 query of the text's phrases and words, every one a quoted string (so
        nothing the user typed is an operator), all of them required."""
        parts = []
        for phrase in PHRASE.findall(text):
            words = WORD.findall(phrase)
            if words:
                parts.append('"' + " ".join(words) + '"')
        for word in WORD.findall(PHRASE.sub(" ", text)):
            parts.append(f'"{word}"')
        return " AND ".join(parts[:MAX_TERMS])

    def search(self, text: str, filters: Filters, limit: int) -> list[Hit]:
        query = self.query(cleaned(text))
        if not query:
            return []
        where, params = _where(filters)
        # The newest CANDIDATES matches (FTS5 reads them backwards by rowid and stops), ranked;
        # then the chosen ones marked.
        ranked = f"""
            WITH found AS (
                SELECT search_fts.rowid AS id, bm25(search_fts, 4.0, 1.0) AS score, e.at AS at
                FROM search_fts
                JOIN search_searchentry e ON e.id = search_fts.rowid
                JOIN dashboard_session s ON s.id = e.session_id
                WHERE search_fts MATCH %s{where}
                ORDER BY search_fts.rowid DESC
                LIMIT %s
            )
            SELECT id FROM found ORDER BY score, at DESC LIMIT %s
        """  # noqa: S608 - only placeholders are interpolated
        with connection.cursor() as cursor:
            cursor.execute(ranked, [query, *params, CANDIDATES, limit])
            chosen = [pk for (pk,) in cursor.fetchall()]
            if not chosen:
                return []
            marks = ", ".join(["%s"] * len(chosen))
            marked_sql = f"""
                SELECT e.id, e.kind, e.ref, e.parent, e.session_id, e.at,
                       highlight(search_fts, 0, char(2), char(3)),
                       snippet(search_fts, 1, char(2), char(3), '…', 24)
                FROM search_fts
                JOIN search_searchentry e ON e.id = search_fts.rowid
                WHERE search_fts MATCH %s AND search_fts.rowid IN ({marks})
            """  # noqa: S608 - only placeholders are interpolated
            cursor.execute(marked_sql, [query, *chosen])
            hits = {row[0]: row for row in cursor.fetchall()}
        return _hits(hits[pk] for pk in chosen if pk in hits)


class PostgresFullText:
    """PostgreSQL: the generated `document` tsvector (English stemming) and its GIN index."""

    def search(self, text: str, filters: Filters, limit: int) -> list[Hit]:
        text = cleaned(text)
        if not WORD.search(text):
            return []
        where, params = _where(filters)
        # The candidates' query is written out, not read from `q`: so the planner sees the
        # words and picks by how often they occur (a rare word on the GIN index, a common one
        # backwards on the time index, stopping at CANDIDATES).
        # The whole title, marked; the body as up to two fragments around the matches.
        whole = "StartSel=\x02, StopSel=\x03, HighlightAll=true"
        options = "StartSel=\x02, StopSel=\x03, MaxWords=30, MinWords=8, MaxFragments=2"
        sql = f"""
            WITH q AS (SELECT websearch_to_tsquery('english', %s) AS query),
            candidates AS (
                SELECT e.id, e.kind, e.ref, e.parent, e.session_id, e.at, e.title, e.body,
                       e.document
                FROM search_searchentry e
                JOIN dashboard_session s ON s.id = e.session_id
                WHERE e.document @@ websearch_to_tsquery('english', %s){where}
                ORDER BY e.at DESC, e.id DESC
                LIMIT %s
            ),
            found AS (
                SELECT c.id, c.kind, c.ref, c.parent, c.session_id, c.at, c.title, c.body,
                       ts_rank_cd(c.document, q.query) AS rank
                FROM candidates c CROSS JOIN q
                ORDER BY rank DESC, c.at DESC
                LIMIT %s
            )
            SELECT found.id, found.kind, found.ref, found.parent, found.session_id, found.at,
                   ts_headline('english', found.title, q.query, %s),
                   ts_headline('english', found.body, q.query, %s)
            FROM found CROSS JOIN q
            ORDER BY found.rank DESC, found.at DESC
        """  # noqa: S608 - only placeholders are interpolated
        with connection.cursor() as cursor:
            cursor.execute(sql, [text, text, *params, CANDIDATES, limit, whole, options])
            return _hits(cursor.fetchall())


def engine() -> Engine:
    return PostgresFullText() if connection.vendor == "postgresql" else Fts5()
