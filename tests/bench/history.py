"""A year of a 50-person team's history, made up deterministically, for the benchmark:
`python -m tests.bench.history [--scale 1] [--seed 26]`.

Writes into the database the settings point at (AGENTBOARD_DATA_DIR's SQLite file, or
DATABASE_URL), after migrating it: 60,000 sessions over twelve projects and about seventy
machines, 250,000 agents, 3 million todo list revisions (and each agent's current list),
40,000 plan revisions with their decisions and comments, 200,000 permission requests with
theirs, and 10 million tool steps; at `--scale 0.1` a tenth of each (the default on SQLite;
the full year is PostgreSQL's default). Sessions start in working hours on working days, most
ended long ago; a few run now, three of them waiting on a person (two permission requests
and a plan). The audit log holds what the write path records: an entry per plan decision
and per permission request a person answered, and the year's sign-ins, agent tokens and team
rules. Rows look as the write path stores them, search entries included: those of
sessions, plans, comments, decisions and requests are made by the indexer's own functions,
those of todo lists and steps (most of the rows) by the same rules inline, which the tests
check against `rebuild_search`.

Fast: PostgreSQL gets every table by COPY (psycopg's `cursor.copy`), the search index's GIN
built once at the end; SQLite gets `executemany` in large transactions, its FTS5 table filled
by the triggers as the write path's inserts fill it. The same seed gives the same rows; times
are placed relative to the moment of the run, so "now" is now. Steps must be kept a year for
the history to stay: the benchmark's servers run with AGENTBOARD_ACTIVITY_DAYS=400.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

YEAR = timedelta(days=365)
SEED = 26
# The full year (PostgreSQL's default); SQLite's default is a tenth of it.
FULL = {
    "sessions": 60_000,
    "agents": 250_000,
    "revisions": 3_000_000,
    "plans": 40_000,
    "requests": 200_000,
    "steps": 10_000_000,
}
PEOPLE = 50
REVIEWERS = 6
# Sessions running now (at any scale), and which of them wait on a person.
RUNNING_NOW = 8
FLUSH_ROWS = 20_000

FIRST_NAMES = (
    "Ada", "Bo", "Chen", "Dana", "Emeka", "Farah", "Gus", "Hana", "Ivo", "Jun", "Kira", "Lars",
    "Mia", "Nico", "Olu", "Priya", "Quinn", "Rosa", "Sami", "Tara", "Uma", "Viktor", "Wen",
    "Xavi", "Yara", "Zeno", "Amir", "Bea", "Cleo", "Dev", "Elif", "Finn", "Gita", "Hugo",
    "Ines", "Jai", "Kofi", "Lena", "Mateo", "Nora", "Omar", "Pia", "Rafa", "Sven", "Tomas",
    "Ugo", "Vera", "Will", "Yusuf",
)  # fmt: skip
LAST_NAMES = (
    "Reyes", "Okafor", "Lindqvist", "Tanaka", "Moreau", "Novak", "Haddad", "Kowalski", "Silva",
    "Nguyen", "Fischer", "Adeyemi", "Rossi", "Park", "Larsen", "Mendes",
)  # fmt: skip
PROJECTS = (
    ("shop", "storefront"), ("billing", "invoices"), ("orders-api", "orders"),
    ("web-app", "dashboard"), ("mobile", "checkout"), ("infra", "terraform"),
    ("search", "indexing"), ("auth-service", "sessions"), ("data-pipeline", "ingest"),
    ("docs", "guides"), ("design-system", "buttons"), ("analytics", "reports"),
)  # fmt: skip
MODULES = (
    "orders", "billing", "cart", "payments", "users", "auth", "search", "reports", "invoices",
    "catalog", "shipping", "notifications", "webhooks", "cache", "api", "jobs",
)  # fmt: skip
WORK = (
    "Add cursor pagination to the {m} endpoint",
    "Fix the flaky test in tests/{m}",
    "Refactor the {m} service into smaller functions",
    "Write the migration for the {m} table",
    "Update the docs for {m}",
    "Add retries with backoff to the {m} client",
    "Cache the {m} lookups",
    "Make the {m} webhook idempotent",
    "Remove the deprecated {m} settings",
    "Add an index for the {m} query",
    "Type the {m} module",
    "Handle timeouts in the {m} worker",
)  # fmt: skip
CHORES = (
    "Run the test suite", "Fix the lint errors", "Read the existing {m} code",
    "Check the CI run", "Update the changelog", "Review the diff",
)  # fmt: skip
BRANCHES = ("feature", "fix", "chore", "refactor")
SUBAGENT_TYPES = ("Explore", "general-purpose", "Plan", "code-reviewer", "test-runner")
CLIENTS = (("claude_code", 0.7), ("opencode", 0.15), ("codex", 0.15))
MODES = (("default", 0.6), ("acceptEdits", 0.3), ("plan", 0.05), ("bypassPermissions", 0.05))
FEEDBACK = (
    "Keep the old endpoint working until the clients move; paginate with a cursor, not offsets.",
    "Too broad: split the migration from the code change.",
    "Add tests for the empty list and the last page before changing anything.",
    "Don't touch the billing schema in this change.",
    "Use the existing retry helper instead of a new one.",
)
NOTES = ("Looks good.", "Go ahead, watch the CI run.", "Fine, but keep the diff small.", "")
COMMENTS = (
    "Why not reuse the existing cursor pagination helper?",
    "This step needs a rollback plan.",
    "Idempotency keys belong in the header, not the body.",
    "Please measure before and after.",
    "Drop this, it's out of scope.",
)
DENY_MESSAGES = ("Not on main, please.", "Ask before deleting anything.", "Use the staging bucket.")
# The audit log's entries that come with the team, not with its work: a year's sign-ins to the
# dashboard, agent tokens made (some revoked since) and team rules written (some changed or
# removed since).
SIGN_INS = 300
TOKENS = 40
RULES = (
    ("allow", "Bash(npm test *)"), ("allow", "Bash(pytest *)"), ("allow", "Read(*)"),
    ("allow", "Bash(git status*)"), ("deny", "Bash(rm -rf *)"), ("deny", "Bash(git push --force*)"),
    ("allow", "WebFetch(domain:docs.example.com)"), ("deny", "Bash(terraform apply*)"),
    ("allow", "Bash(make lint)"), ("allow", "Bash(ruff check *)"),
)  # fmt: skip
# Where a person decided: the review page or its keyboard shortcut for plans, the inbox or
# the session's board for permission requests.
PLAN_SURFACES = (("review page", 0.75), ("keyboard shortcut", 0.25))
REQUEST_SURFACES = (("inbox", 0.5), ("board", 0.4), ("inbox, several at once", 0.1))
AUDIT_COLUMNS = (
    "id", "at", "actor_id", "actor_name", "rule", "action", "session_id", "session_key",
    "project_id", "project_name", "team_id", "about", "summary", "surface", "address",
    "number", "digest",
)  # fmt: skip


def weighted(rng: random.Random, choices: Sequence[tuple[str, float]]) -> str:
    return rng.choices([value for value, _ in choices], [weight for _, weight in choices])[0]


# --- output: COPY on PostgreSQL, executemany on SQLite ------------------------------------------


class Table(Protocol):
    def add(self, row: Sequence[Any]) -> None: ...


class Output(Protocol):
    vendor: str

    def table(self, name: str, columns: Sequence[str]) -> Table: ...

    def close_tables(self) -> None: ...

    def abandon(self) -> None: ...

    def next_id(self, name: str) -> int: ...

    def moment(self, value: datetime) -> Any: ...


class SqliteTable:
    def __init__(self, output: SqliteOutput, name: str, columns: Sequence[str]) -> None:
        self.output = output
        marks = ", ".join("?" * len(columns))
        self.sql = f'INSERT INTO "{name}" ({", ".join(columns)}) VALUES ({marks})'  # noqa: S608
        self.rows: list[Sequence[Any]] = []

    def add(self, row: Sequence[Any]) -> None:
        self.rows.append(row)
        if len(self.rows) >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.output.cursor.executemany(self.sql, self.rows)
            self.rows = []


class SqliteOutput:
    """Rows in large transactions on the one connection; a table's rows are flushed before
    another table's that may refer to them (tables are opened parents first)."""

    vendor = "sqlite"

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.cursor = connection.cursor()
        self.tables: list[SqliteTable] = []

    def table(self, name: str, columns: Sequence[str]) -> SqliteTable:
        if not self.connection.in_transaction:
            self.cursor.execute("BEGIN")
        table = SqliteTable(self, name, columns)
        self.tables.append(table)
        return table

    def close_tables(self) -> None:
        for table in self.tables:
            table.flush()
        self.tables = []
        if self.connection.in_transaction:
            self.cursor.execute("COMMIT")

    def abandon(self) -> None:
        """After a failure: nothing of the pass is kept, and no transaction stays open."""
        self.tables = []
        if self.connection.in_transaction:
            self.cursor.execute("ROLLBACK")

    def next_id(self, name: str) -> int:
        self.cursor.execute(f'SELECT coalesce(max(id), 0) + 1 FROM "{name}"')  # noqa: S608
        return int(self.cursor.fetchone()[0])

    def moment(self, value: datetime) -> str:
        # As Django's SQLite backend stores an aware datetime: UTC, naive, str().
        return str(value.replace(tzinfo=None))


class PostgresTable:
    def __init__(self, url: str, name: str, columns: Sequence[str]) -> None:
        import psycopg

        self.connection = psycopg.connect(url)
        self.connection.execute("SET TIME ZONE 'UTC'")
        self.connection.execute("SET synchronous_commit = off")
        self.cursor = self.connection.cursor()
        self.copy_context = self.cursor.copy(f'COPY "{name}" ({", ".join(columns)}) FROM STDIN')
        self.copy = self.copy_context.__enter__()

    def add(self, row: Sequence[Any]) -> None:
        self.copy.write_row(row)

    def close(self) -> None:
        self.copy_context.__exit__(None, None, None)
        self.connection.commit()
        self.connection.close()


class PostgresOutput:
    """Each table is one COPY on a connection of its own (so a pass can stream a table and
    its search entries at once), committed when the pass closes its tables."""

    vendor = "postgresql"

    def __init__(self, url: str) -> None:
        self.url = url
        self.tables: list[PostgresTable] = []

    def table(self, name: str, columns: Sequence[str]) -> PostgresTable:
        table = PostgresTable(self.url, name, columns)
        self.tables.append(table)
        return table

    def close_tables(self) -> None:
        for table in self.tables:
            table.close()
        self.tables = []

    def abandon(self) -> None:
        """After a failure: each COPY's connection closes uncommitted, so none keeps a lock
        that whatever comes next (a test's flush) would wait on for ever."""
        for table in self.tables:
            table.connection.close()
        self.tables = []

    def next_id(self, name: str) -> int:
        import psycopg

        with psycopg.connect(self.url) as connection:
            sql = f'SELECT coalesce(max(id), 0) + 1 FROM "{name}"'  # noqa: S608
            return int(connection.execute(sql).fetchone()[0])

    def moment(self, value: datetime) -> datetime:
        return value


# --- what is made --------------------------------------------------------------------------------


@dataclass
class Person:
    pk: int
    username: str
    name: str
    hosts: list[str]
    projects: list[int]
    reviewer: bool
    # The address their browser reaches the dashboard from (the audit log records it).
    address: str = ""


@dataclass
class SessionPlan:
    pk: int
    session_id: str
    owner: Person
    project: int
    start: datetime
    end: datetime
    running: bool
    weight: float
    main_agent: int = 0
    agents: list[tuple[int, datetime, datetime, bool]] = field(default_factory=list)


@dataclass
class AuditDraft:
    """One entry of the audit log before it is numbered: what `dashboard.core.audit.audit`
    would have recorded at `at`."""

    at: datetime
    action: str
    actor: Person | None
    about: str
    summary: str
    surface: str
    session: SessionPlan | None = None
    project: int | None = None


@dataclass
class Counts:
    sessions: int
    agents: int
    revisions: int
    plans: int
    requests: int
    steps: int

    @classmethod
    def at(cls, scale: float) -> Counts:
        return cls(**{name: max(RUNNING_NOW + 2, round(n * scale)) for name, n in FULL.items()})


def shares(total: int, weights: Sequence[float], rng: random.Random) -> list[int]:
    """`total` split over the weights, as whole numbers that add up to it."""
    whole = sum(weights)
    exact = [total * weight / whole for weight in weights]
    counts = [math.floor(value) for value in exact]
    left = total - sum(counts)
    remainders = sorted(range(len(weights)), key=lambda i: exact[i] - counts[i], reverse=True)
    for i in remainders[:left]:
        counts[i] += 1
    return counts


class Generator:
    def __init__(self, output: Output, counts: Counts, seed: int, now: datetime) -> None:
        self.output = output
        self.counts = counts
        self.seed = seed
        self.now = now
        self.people: list[Person] = []
        self.projects: list[tuple[int, str, str]] = []  # pk, name, repository
        self.sessions: list[SessionPlan] = []
        self.made: dict[str, int] = {}
        # The audit log's entries, gathered as the decisions are made and written in the
        # order of their moments at the end (as the write path would have numbered them).
        self.audits: list[AuditDraft] = []
        self.started = time.monotonic()

    def rng(self, part: str) -> random.Random:
        return random.Random(f"{self.seed}:{part}")

    def say(self, text: str) -> None:
        print(f"  {time.monotonic() - self.started:7.1f} s  {text}", flush=True)

    def at(self, value: datetime) -> Any:
        return self.output.moment(value)

    def count(self, name: str, n: int = 1) -> None:
        self.made[name] = self.made.get(name, 0) + n

    # --- people, projects, sessions and agents ----------------------------------------------

    def people_and_projects(self) -> None:
        from django.contrib.auth import get_user_model

        from dashboard.models import Project

        rng = self.rng("people")
        users = get_user_model()
        projects = []
        for name, _topic in PROJECTS:
            repository = f"github.com/acme/{name}"
            project, _ = Project.objects.get_or_create(
                key=repository, defaults={"name": name, "repository": repository}
            )
            projects.append((project.pk, project.name, repository))
        self.projects = projects
        existing = list(users.objects.order_by("pk")[:1])
        people = []
        for n in range(PEOPLE):
            first, last = FIRST_NAMES[n % len(FIRST_NAMES)], LAST_NAMES[n % len(LAST_NAMES)]
            if n == 0 and existing:
                user = existing[0]
            else:
                user, _ = users.objects.get_or_create(
                    username=f"{first.lower()}.{last.lower()}",
                    defaults={"first_name": first, "last_name": last, "password": "!"},
                )
            hosts = [f"{user.username.split('.')[0]}-laptop"]
            if rng.random() < 0.4:
                hosts.append(f"devbox-{rng.randrange(1, 21):02d}")
            work_on = rng.sample(range(len(projects)), rng.randint(1, 4))
            people.append(
                Person(
                    user.pk,
                    user.username,
                    user.get_full_name() or user.username,
                    hosts,
                    [projects[i][0] for i in work_on],
                    reviewer=n < REVIEWERS,
                    address=f"10.8.{n // 100}.{n % 100 + 10}",
                )
            )
        self.people = people
        self.say(f"{len(people)} people, {len(projects)} projects")

    def session_times(self, rng: random.Random) -> tuple[datetime, timedelta]:
        """A start in working hours on a working day of the past year, and a length."""
        while True:
            day = rng.randrange(365)
            start = self.now - YEAR + timedelta(days=day)
            if start.weekday() < 5 or rng.random() < 0.12:
                break
        hour = min(21.5, max(7.0, rng.gauss(13.5, 2.6)))
        start = start.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(hours=hour)
        start += timedelta(seconds=rng.randrange(60), microseconds=rng.randrange(1_000_000))
        length = timedelta(minutes=min(480.0, max(2.0, rng.lognormvariate(3.6, 0.8))))
        return start, length

    def make_sessions(self) -> None:
        rng = self.rng("sessions")
        counts = self.counts
        table = self.output.table(
            "dashboard_session",
            (
                "id", "session_id", "owner_id", "client", "cwd", "title", "branch",
                "permission_mode", "started_at", "last_seen_at", "ended_at", "ended_quietly",
                "enforcer_enabled", "other_enforcer", "repository", "host", "project_record_id",
                "project_name",
            ),
        )  # fmt: skip
        pk = self.output.next_id("dashboard_session")
        drafts = []
        for n in range(counts.sessions):
            running = n >= counts.sessions - RUNNING_NOW
            if running:
                length = timedelta(minutes=rng.uniform(10, 150))
                start = self.now - length
            else:
                start, length = self.session_times(rng)
                if start + length > self.now - timedelta(hours=1):
                    start -= timedelta(days=7)
            drafts.append((start, length, running))
        # In the order they started, as the write path makes them; the running ones last.
        drafts.sort(key=lambda draft: (draft[2], draft[0]))
        for start, length, running in drafts:
            person = rng.choice(self.people)
            project_pk = rng.choice(person.projects)
            _, project_name, repository = next(p for p in self.projects if p[0] == project_pk)
            module = rng.choice(MODULES)
            work = rng.choice(WORK).format(m=module)
            branch = f"{rng.choice(BRANCHES)}/{module}-{rng.randrange(1000, 9999)}"
            session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            weight = rng.lognormvariate(0, 0.9)
            end = start + length
            plan = SessionPlan(pk, session_id, person, project_pk, start, end, running, weight)
            self.sessions.append(plan)
            table.add((
                pk, session_id, person.pk, weighted(rng, CLIENTS),
                f"/home/{person.username}/src/{project_name}", work[:200], branch,
                weighted(rng, MODES), self.at(start),
                self.at(self.now - timedelta(seconds=rng.randrange(5, 90)) if running else end),
                None if running else self.at(end), (not running) and rng.random() < 0.2, True,
                "", repository, rng.choice(person.hosts), project_pk, project_name,
            ))  # fmt: skip
            pk += 1
        self.count("sessions", len(self.sessions))
        # The busiest session of the year is a running one: the board measured is busy now.
        busiest = max(self.sessions, key=lambda s: s.weight)
        self.sessions[-1].weight, busiest.weight = busiest.weight * 3, self.sessions[-1].weight
        self.output.close_tables()
        self.say(f"{len(self.sessions):,} sessions")

    def make_agents(self) -> None:
        """The main agent of each session and its subagents (busier sessions have more), each
        with the number of its latest todo list revision (`make_todos` writes them)."""
        rng = self.rng("agents")
        table = self.output.table(
            "dashboard_agent",
            (
                "id", "session_id", "agent_id", "agent_type", "parent_id", "status",
                "started_at", "last_seen_at", "stopped_at", "turn_ended_at", "todo_revision",
                "cleared_total", "awaiting_plan",
            ),
        )  # fmt: skip
        pk = self.output.next_id("dashboard_agent")
        subagents = shares(
            self.counts.agents - len(self.sessions),
            [s.weight**0.5 for s in self.sessions],
            rng,
        )
        # (session, pk, agent_id, type, start, stop) of every agent, the main one first.
        drafts: list[tuple[SessionPlan, int, str, str, datetime, datetime]] = []
        for session, extra in zip(self.sessions, subagents, strict=True):
            session.main_agent = pk
            drafts.append((session, pk, session.session_id, "", session.start, session.end))
            pk += 1
            span = (session.end - session.start).total_seconds()
            for _ in range(extra):
                begin = session.start + timedelta(seconds=rng.uniform(0.05, 0.9) * span)
                stop = min(session.end, begin + timedelta(seconds=rng.uniform(0.02, 0.2) * span))
                agent_id = f"agent-{rng.getrandbits(64):016x}"
                drafts.append((session, pk, agent_id, rng.choice(SUBAGENT_TYPES), begin, stop))
                pk += 1
        # The main agents write most of the lists.
        weights = [d[0].weight * (4.0 if d[1] == d[0].main_agent else 1.0) for d in drafts]
        revisions = shares(self.counts.revisions, weights, self.rng("revisions"))
        for (session, agent_pk, agent_id, kind, begin, stop), n in zip(
            drafts, revisions, strict=True
        ):
            main = agent_pk == session.main_agent
            running = main and session.running
            table.add((
                agent_pk, session.pk, agent_id, kind, None if main else session.main_agent,
                "running" if running else "stopped", self.at(begin),
                self.at(self.now if running else stop), None if running else self.at(stop),
                None, n, 0, False,
            ))  # fmt: skip
            session.agents.append((agent_pk, begin, stop, main, n))
        self.count("agents", len(drafts))
        self.output.close_tables()
        self.say(f"{self.made['agents']:,} agents")

    # --- todo lists -----------------------------------------------------------------------------

    def make_todos(self) -> None:
        """Each agent's revisions (old and new lists, as the write path keeps them), its
        current list, its revision number, and a search entry per revision."""
        from dashboard.search.indexer import BODY_CHARS, TITLE_CHARS

        rng = self.rng("todos")
        out = self.output
        revisions = out.table(
            "todos_todorevision",
            ("id", "agent_id", "number", "old_todos", "new_todos", "source", "idempotency_key",
             "request_hash", "received_at"),
        )  # fmt: skip
        todos = out.table(
            "todos_todo",
            ("agent_id", "position", "content", "active_form", "status", "priority",
             "external_id"),
        )  # fmt: skip
        entries = out.table("search_searchentry", ENTRY_COLUMNS)
        pk = out.next_id("todos_todorevision")
        entry_pk = out.next_id("search_searchentry")
        made = 0
        agents = [(session, agent) for session in self.sessions for agent in session.agents]
        for session, (agent_pk, begin, end, _main, n) in agents:
            if not n:
                continue
            items = self.work_items(rng)
            span = max(1.0, (end - begin).total_seconds())
            old: list[dict] = []
            old_json = "[]"
            for number in range(1, n + 1):
                # Progress through the list; a longer list now and then.
                done = min(len(items), (number - 1) * (len(items) + 1) // max(1, n))
                if number > 2 and rng.random() < 0.04 and len(items) < 12:
                    items.append(self.work_item(rng))
                new = [
                    {
                        "content": content,
                        "status": "completed"
                        if i < done
                        else ("in_progress" if i == done else "pending"),
                        "activeForm": active,
                    }
                    for i, (content, active) in enumerate(items)
                ]
                new_json = json.dumps(new)
                at = begin + timedelta(seconds=span * number / (n + 1))
                revisions.add((
                    pk, agent_pk, number, old_json, new_json, "hook", None, "", self.at(at),
                ))  # fmt: skip
                lines = [content for content, _ in items] + [active for _, active in items]
                entries.add((
                    entry_pk, "todos", pk, None, session.pk, session.owner.pk, self.at(at),
                    " ".join(items[0][0].split())[:TITLE_CHARS], "\n".join(lines)[:BODY_CHARS],
                ))  # fmt: skip
                pk += 1
                entry_pk += 1
                old, old_json = new, new_json
            for position, item in enumerate(old):
                todos.add((
                    agent_pk, position, item["content"], item["activeForm"], item["status"],
                    "", "",
                ))  # fmt: skip
            made += n
        self.count("todo revisions", made)
        out.close_tables()
        self.say(f"{self.made['todo revisions']:,} todo revisions")

    def work_item(self, rng: random.Random) -> tuple[str, str]:
        module = rng.choice(MODULES)
        content = rng.choice(WORK + CHORES).format(m=module)
        first, _, rest = content.partition(" ")
        active = (first[:-1] if first.endswith("e") else first) + "ing " + rest
        return content, active

    def work_items(self, rng: random.Random) -> list[tuple[str, str]]:
        return [self.work_item(rng) for _ in range(rng.randint(3, 7))]

    # --- plans, decisions, comments ---------------------------------------------------------------

    def make_plans(self) -> None:
        from dashboard.models import AuditAction
        from dashboard.search.indexer import comment_entries, decision_entries, plan_entries
        from planmode.models import Annotation, Decision, Plan
        from planmode.services import _decision_summary, feedback_with_annotations

        rng = self.rng("plans")
        # The audit log's choices draw on their own stream: the plans stay what they were.
        surfaces = self.rng("audit plans")
        out = self.output
        plans = out.table(
            "planmode_plan",
            ("id", "session_id", "agent_id", "revision", "markdown", "plan_file_path", "status",
             "mode_after", "feedback", "notes", "decided_by_id", "decided_at", "submitted_at",
             "watched_at", "source", "held_until", "end_reason", "staged_answer", "sends_at",
             "idempotency_key", "request_hash"),
        )  # fmt: skip
        decisions = out.table(
            "planmode_decision",
            ("id", "plan_id", "outcome", "mode_after", "feedback", "notes", "decided_by_id",
             "decided_by_name", "decided_at"),
        )  # fmt: skip
        annotations = out.table(
            "planmode_annotation",
            ("id", "plan_id", "kind", "quote", "comment", "replacement", "author_id",
             "author_name", "created_at", "updated_at"),
        )  # fmt: skip
        entries = out.table("search_searchentry", ENTRY_COLUMNS)
        pk = out.next_id("planmode_plan")
        decision_pk = out.next_id("planmode_decision")
        annotation_pk = out.next_id("planmode_annotation")
        entry_pk = out.next_id("search_searchentry")
        reviewers = [person for person in self.people if person.reviewer]
        # Threads of one to three revisions, in the sessions that plan (about two in five).
        made = 0
        waiting = self.sessions[-1]
        planning = [s for s in self.sessions[:-RUNNING_NOW] if rng.random() < 0.55]
        planning.append(waiting)
        for session in planning:
            if made >= self.counts.plans:
                break
            revisions = 1 if session is waiting else min(3, 1 + int(rng.expovariate(1.4)))
            revisions = min(revisions, self.counts.plans - made)
            module = rng.choice(MODULES)
            title = rng.choice(WORK).format(m=module)
            span = (session.end - session.start).total_seconds()
            at = session.start + timedelta(seconds=span * 0.05)
            for revision in range(1, revisions + 1):
                last = revision == revisions
                pending = session is waiting and last
                outcome = "pending" if pending else ("approved" if last else "rejected")
                if last and not pending and rng.random() < 0.06:
                    outcome = rng.choice(("withdrawn", "expired", "answered_in_terminal"))
                reviewer = rng.choice(reviewers)
                decided = at + timedelta(seconds=rng.uniform(20, 900))
                feedback = rng.choice(FEEDBACK) if outcome == "rejected" else ""
                notes = rng.choice(NOTES) if outcome == "approved" else ""
                markdown = plan_markdown(rng, title, module, revision)
                by_person = outcome in ("approved", "rejected")
                mode_after = "acceptEdits" if outcome == "approved" else None
                plan = Plan(
                    pk=pk, session_id=session.pk, agent_id=session.main_agent, revision=revision,
                    markdown=markdown, submitted_at=at,
                )  # fmt: skip
                plans.add((
                    pk, session.pk, session.main_agent, revision, markdown,
                    f"/home/{session.owner.username}/.claude/plans/{module}-{revision}.md",
                    outcome, mode_after, feedback, notes, reviewer.pk if by_person else None,
                    None if pending else self.at(decided), self.at(at), None,
                    "api" if pending else "hook", None,
                    "" if by_person or pending else "the agent moved on", None, None, None, "",
                ))  # fmt: skip
                for entry in plan_entries([plan]):
                    entries.add(entry_row(entry_pk, entry, session.owner.pk, self.at))
                    entry_pk += 1
                if by_person:
                    decision = Decision(
                        pk=decision_pk, plan=plan, outcome=outcome, feedback=feedback,
                        notes=notes, decided_by_name=reviewer.username, decided_at=decided,
                    )  # fmt: skip
                    decisions.add((
                        decision_pk, pk, outcome, mode_after, feedback, notes, reviewer.pk,
                        reviewer.username, self.at(decided),
                    ))  # fmt: skip
                    for entry in decision_entries([decision]):
                        entries.add(entry_row(entry_pk, entry, session.owner.pk, self.at))
                        entry_pk += 1
                    decision_pk += 1
                commented: list[Annotation] = []
                if outcome == "rejected" or rng.random() < 0.15:
                    for _ in range(rng.randint(1, 2)):
                        quote = rng.choice(markdown.splitlines()[2:] or [title]).lstrip(
                            "0123456789. "
                        )
                        comment = rng.choice(COMMENTS)
                        when = at + timedelta(seconds=rng.uniform(10, 600))
                        annotation = Annotation(
                            pk=annotation_pk, plan=plan, quote=quote, comment=comment,
                            created_at=when,
                        )  # fmt: skip
                        annotations.add((
                            annotation_pk, pk, "comment", quote, comment, "", reviewer.pk,
                            reviewer.username, self.at(when), self.at(when),
                        ))  # fmt: skip
                        for entry in comment_entries([annotation]):
                            entries.add(entry_row(entry_pk, entry, session.owner.pk, self.at))
                            entry_pk += 1
                        commented.append(annotation)
                        annotation_pk += 1
                        self.count("plan comments")
                if by_person:
                    # As `plan_decide` records it: the reviewer's words with every comment on
                    # the plan, approval auto-accepting edits (the plans' mode after).
                    said = feedback_with_annotations(feedback or notes, commented)
                    approved = outcome == "approved"
                    self.audits.append(
                        AuditDraft(
                            at=decided,
                            action=AuditAction.PLAN_APPROVED_AUTO
                            if approved
                            else AuditAction.PLAN_REJECTED,
                            actor=reviewer,
                            about=f"plan:{pk}",
                            summary=_decision_summary(plan, said),
                            surface=weighted(surfaces, PLAN_SURFACES),
                            session=session,
                        )
                    )
                made += 1
                pk += 1
                at = decided + timedelta(seconds=rng.uniform(30, 600))
        self.count("plans", made)
        out.close_tables()
        self.say(f"{made:,} plan revisions, {self.made.get('plan comments', 0):,} comments")

    # --- permission requests ------------------------------------------------------------------

    def make_requests(self) -> None:
        from dashboard.models import AuditAction
        from dashboard.search.indexer import request_entries
        from planmode.models import PermissionRequest
        from planmode.tool_display import describe

        rng = self.rng("requests")
        surfaces = self.rng("audit requests")
        out = self.output
        requests = out.table(
            "planmode_permissionrequest",
            ("id", "session_id", "agent_id", "tool_name", "tool_input", "input_key",
             "suggestions", "permission_mode", "status", "requested_at", "decided_at",
             "decided_by_id", "rule_id", "message", "interrupt", "updated_permissions",
             "message_told_at", "held_until", "end_reason", "staged_answer", "sends_at",
             "refused_by_auto_mode"),
        )  # fmt: skip
        decisions = out.table(
            "planmode_permissiondecision",
            ("id", "request_id", "outcome", "message", "interrupt", "updated_permissions",
             "decided_by_id", "decided_by_name", "rule_id", "rule_text", "decided_at"),
        )  # fmt: skip
        entries = out.table("search_searchentry", ENTRY_COLUMNS)
        pk = out.next_id("planmode_permissionrequest")
        decision_pk = out.next_id("planmode_permissiondecision")
        entry_pk = out.next_id("search_searchentry")
        per_session = shares(self.counts.requests, [s.weight for s in self.sessions], rng)
        reviewers = [person for person in self.people if person.reviewer]
        # Two of the running sessions wait on a person now.
        waiting = {self.sessions[-2].pk, self.sessions[-3].pk}
        for session, n in zip(self.sessions, per_session, strict=True):
            if session.pk in waiting:
                n = max(n, 1)
            span = (session.end - session.start).total_seconds()
            for i in range(n):
                agent = session.agents[0] if rng.random() < 0.8 else rng.choice(session.agents)
                tool_name, tool_input = tool_request(rng, session)
                pending = session.pk in waiting and i == n - 1
                at = session.start + timedelta(seconds=span * (i + 1) / (n + 1))
                if pending:
                    at = self.now - timedelta(seconds=rng.randrange(30, 300))
                    status = "pending"
                else:
                    status = weighted(
                        rng,
                        (("allowed", 0.74), ("denied", 0.08), ("answered_in_terminal", 0.13),
                         ("expired", 0.05)),
                    )  # fmt: skip
                decided = at + timedelta(seconds=rng.uniform(2, 240))
                by = rng.choice(reviewers if rng.random() < 0.6 else [session.owner])
                decided_here = status in ("allowed", "denied")
                message = rng.choice(DENY_MESSAGES) if status == "denied" else ""
                key = hashlib.sha256(
                    json.dumps([tool_name, tool_input], sort_keys=True).encode()
                ).hexdigest()
                requests.add((
                    pk, session.pk, agent[0], tool_name, json.dumps(tool_input), key, "[]",
                    "default", status, self.at(at), None if pending else self.at(decided),
                    by.pk if decided_here else None, None, message, False, "[]", None, None,
                    "" if decided_here or pending else "the agent moved on", None, None, False,
                ))  # fmt: skip
                request = PermissionRequest(
                    pk=pk, session_id=session.pk, tool_name=tool_name, tool_input=tool_input,
                    message=message, requested_at=at,
                )  # fmt: skip
                for entry in request_entries([request]):
                    entries.add(entry_row(entry_pk, entry, session.owner.pk, self.at))
                    entry_pk += 1
                if decided_here:
                    decisions.add((
                        decision_pk, pk, status, message, False, "[]", by.pk, by.username, None,
                        "", self.at(decided),
                    ))  # fmt: skip
                    decision_pk += 1
                    # As `permission_decide` records a person's answer: the tool and what it
                    # would do, and the message sent with a denial.
                    view = describe(tool_name, tool_input)
                    said = [f"{view.tool}: {view.headline}", *([message] if message else [])]
                    self.audits.append(
                        AuditDraft(
                            at=decided,
                            action=AuditAction.REQUEST_ALLOWED
                            if status == "allowed"
                            else AuditAction.REQUEST_DENIED,
                            actor=by,
                            about=f"request:{pk}",
                            summary="\n".join(said),
                            surface=weighted(surfaces, REQUEST_SURFACES),
                            session=session,
                        )
                    )
                pk += 1
        self.count("permission requests", sum(per_session))
        out.close_tables()
        self.say(f"{self.made['permission requests']:,} permission requests")

    # --- tool steps ------------------------------------------------------------------------------

    def make_steps(self) -> None:
        from dashboard.activity.models import DETAIL_CHARS, SUMMARY_CHARS
        from dashboard.search.indexer import BODY_CHARS, TITLE_CHARS

        rng = self.rng("steps")
        out = self.output
        steps = out.table(
            "activity_step",
            ("id", "agent_id", "session_id", "tool_use_id", "tool_name", "summary", "detail",
             "input_hash", "started_at", "ended_at", "outcome", "error", "waited_on"),
        )  # fmt: skip
        entries = out.table("search_searchentry", ENTRY_COLUMNS)
        pk = out.next_id("activity_step")
        entry_pk = out.next_id("search_searchentry")
        hashes: dict[str, str] = {}
        per_session = shares(self.counts.steps, [s.weight for s in self.sessions], rng)
        total = 0
        report_every = max(1, len(self.sessions) // 10)
        for number, (session, n) in enumerate(zip(self.sessions, per_session, strict=True)):
            span = (session.end - session.start).total_seconds()
            project = next(p[1] for p in self.projects if p[0] == session.project)
            for i in range(n):
                agent = session.agents[0] if rng.random() < 0.6 else rng.choice(session.agents)
                tool, summary, detail = tool_step(rng, project)
                summary, detail = summary[:SUMMARY_CHARS], detail[:DETAIL_CHARS]
                begin = session.start + timedelta(seconds=span * (i + 0.5) / n)
                running = session.running and i == n - 1
                failed = not running and rng.random() < 0.06
                error = (
                    "exit status 1"
                    if failed and tool == "Bash"
                    else ("" if not failed else "File not found")
                )
                outcome = "running" if running else ("failed" if failed else "ok")
                ended = (
                    None if running else self.at(begin + timedelta(seconds=rng.expovariate(0.4)))
                )
                digest = hashes.get(summary)
                if digest is None:
                    digest = hashes[summary] = hashlib.md5(summary.encode()).hexdigest()  # noqa: S324
                steps.add((
                    pk, agent[0], session.pk, f"toolu_{pk:024x}", tool, summary, detail, digest,
                    self.at(begin), ended, outcome, error, "",
                ))  # fmt: skip
                body = "\n".join(text for text in (summary, detail, error) if text)
                entries.add((
                    entry_pk, "step", pk, None, session.pk, session.owner.pk, self.at(begin),
                    " ".join(f"{tool} {summary}".split())[:TITLE_CHARS], body[:BODY_CHARS],
                ))  # fmt: skip
                pk += 1
                entry_pk += 1
            total += n
            if number % report_every == report_every - 1:
                self.say(f"{total:,} tool steps")
        self.count("tool steps", total)
        out.close_tables()
        self.say(f"{total:,} tool steps")

    # --- the audit log's other entries, and all of it written ------------------------------

    def working_moment(self, rng: random.Random) -> datetime:
        start, _ = self.session_times(rng)
        return start

    def make_sign_ins(self) -> None:
        """People signing in to the dashboard now and then over the year (reviewers more)."""
        from dashboard.models import AuditAction
        from dashboard.sso.signals import LOGIN_PAGE

        rng = self.rng("sign-ins")
        weights = [3.0 if person.reviewer else 1.0 for person in self.people]
        for _ in range(SIGN_INS):
            person = rng.choices(self.people, weights)[0]
            self.audits.append(
                AuditDraft(
                    at=self.working_moment(rng), action=AuditAction.SIGNED_IN, actor=person,
                    about=f"user:{person.pk}", summary="", surface=LOGIN_PAGE,
                )
            )  # fmt: skip

    def make_tokens(self) -> None:
        """Agent tokens people made for their machines on the settings page; a quarter of
        them revoked since."""
        from django.contrib.auth import get_user_model

        from dashboard.core.tokens import token_words
        from dashboard.models import AgentToken, AuditAction

        rng = self.rng("tokens")
        users = get_user_model().objects.in_bulk([person.pk for person in self.people])
        table = self.output.table(
            "dashboard_agenttoken",
            ("id", "owner_id", "label", "key_hash", "hint", "created_at", "last_used_at",
             "revoked_at"),
        )  # fmt: skip
        pk = self.output.next_id("dashboard_agenttoken")
        for number in range(TOKENS):
            person = self.people[number % len(self.people)]
            label = rng.choice(person.hosts)
            created = self.working_moment(rng)
            revoked = None
            if rng.random() < 0.25:
                revoked = created + (self.now - created) * rng.uniform(0.1, 0.9)
            key = hashlib.sha256(f"history-{self.seed}-{number}".encode()).hexdigest()
            table.add((
                pk, person.pk, label, key, AgentToken.PREFIX + key[:7], self.at(created),
                None if revoked else self.at(created + (self.now - created) * 0.99),
                None if revoked is None else self.at(revoked),
            ))  # fmt: skip
            words = token_words(AgentToken(pk=pk, owner=users[person.pk], label=label))
            for at, action, done in ((created, AuditAction.TOKEN_CREATED, "created"),
                                     (revoked, AuditAction.TOKEN_REVOKED, "revoked")):  # fmt: skip
                if at is not None:
                    self.audits.append(
                        AuditDraft(
                            at=at, action=action, actor=person, about=f"token:{pk}",
                            summary=f"{words} {done}", surface="settings",
                        )
                    )  # fmt: skip
            pk += 1
        self.output.close_tables()

    def make_rules(self) -> None:
        """Team rules reviewers wrote on the team rules page, each for one project; some
        changed since (from allow to deny or back), a few removed."""
        from dashboard.models import AuditAction
        from planmode.models import TeamRule
        from planmode.permissions import team_rule_words

        rng = self.rng("rules")
        reviewers = [person for person in self.people if person.reviewer]
        table = self.output.table(
            "planmode_teamrule",
            ("id", "project", "rule", "behavior", "mode", "message", "expires_at",
             "allows_dangerous", "created_by_id", "created_at", "updated_at", "updated_by_id"),
        )  # fmt: skip
        pk = self.output.next_id("planmode_teamrule")
        for behavior, text in RULES:
            project_pk, project_name, _ = rng.choice(self.projects)
            person = rng.choice(reviewers)
            created = self.working_moment(rng)
            rule = TeamRule(pk=pk, project=project_name, rule=text, behavior=behavior)
            first = team_rule_words(rule)
            steps = [(created, AuditAction.RULE_ADDED, first, person)]
            fate = rng.random()
            later = created + (self.now - created) * rng.uniform(0.2, 0.9)
            if fate < 0.3:
                rule.behavior = "deny" if behavior == "allow" else "allow"
                changed = f"{first} → {team_rule_words(rule)}"
                steps.append((later, AuditAction.RULE_CHANGED, changed, rng.choice(reviewers)))
            if fate > 0.8:
                steps.append((later, AuditAction.RULE_REMOVED, first, rng.choice(reviewers)))
            else:
                changed_at, changed_by = steps[-1][0], steps[-1][3]
                table.add((
                    pk, project_name, text, rule.behavior, "active", "", None, False, person.pk,
                    self.at(created), self.at(changed_at), changed_by.pk,
                ))  # fmt: skip
            for at, action, summary, actor in steps:
                self.audits.append(
                    AuditDraft(
                        at=at, action=action, actor=actor, about=f"rule:{pk}", summary=summary,
                        surface="team rules page", project=project_pk,
                    )
                )  # fmt: skip
            pk += 1
        self.output.close_tables()

    def make_audit(self) -> None:
        """Every entry gathered, oldest first, as `dashboard.core.audit` stores them."""
        from dashboard.models import AuditEntry

        self.make_sign_ins()
        self.make_tokens()
        self.make_rules()
        names = {pk: name for pk, name, _ in self.projects}
        table = self.output.table("dashboard_auditentry", AUDIT_COLUMNS)
        pk = self.output.next_id("dashboard_auditentry")
        self.audits.sort(key=lambda draft: draft.at)
        # Chained as `AuditEntry.chain` chains, after whatever the log holds already.
        head = AuditEntry.objects.order_by("number").last()
        number, previous = (head.number, head.digest) if head is not None else (0, "")
        for draft in self.audits:
            session, actor = draft.session, draft.actor
            project = session.project if session is not None else draft.project
            number += 1
            entry = AuditEntry(
                at=draft.at, actor_id=actor.pk if actor else None,
                actor_name=actor.username if actor else "", rule="", action=draft.action,
                session_id=session.pk if session else None,
                session_key=session.session_id if session else "", project_id=project,
                project_name=names.get(project, "") if project else "", team_id=None,
                about=draft.about[:60], summary=draft.summary, surface=draft.surface,
                address=actor.address if actor else None, number=number,
            )  # fmt: skip
            entry.digest = previous = entry.digest_after(previous)
            table.add((
                pk, self.at(entry.at), entry.actor_id, entry.actor_name, entry.rule,
                entry.action, entry.session_id, entry.session_key, entry.project_id,
                entry.project_name, entry.team_id, entry.about, entry.summary, entry.surface,
                entry.address, entry.number, entry.digest,
            ))  # fmt: skip
            pk += 1
        self.count("audit entries", len(self.audits))
        self.audits = []
        self.output.close_tables()
        self.say(f"{self.made['audit entries']:,} audit entries")

    def make_session_entries(self) -> None:
        """Through the indexer itself: it reads the sessions with their people."""
        from dashboard.search.indexer import session_entries

        table = self.output.table("search_searchentry", ENTRY_COLUMNS)
        entry_pk = self.output.next_id("search_searchentry")
        pks = [session.pk for session in self.sessions]
        owners = {session.pk: session.owner.pk for session in self.sessions}
        for start in range(0, len(pks), 2_000):
            for entry in session_entries(pks[start : start + 2_000]):
                table.add(entry_row(entry_pk, entry, owners[entry.session_id], self.at))
                entry_pk += 1
        self.output.close_tables()
        self.say("search entries of the sessions")

    def run(self) -> None:
        self.people_and_projects()
        self.make_sessions()
        self.make_session_entries()
        self.make_agents()
        self.make_todos()
        self.make_plans()
        self.make_requests()
        self.make_audit()
        self.make_steps()


ENTRY_COLUMNS = (
    "id", "kind", "ref", "parent", "session_id", "owner_id", "at", "title", "body",
)  # fmt: skip


def entry_row(pk: int, entry: Any, owner: int, at: Callable[[datetime], Any]) -> tuple:
    return (pk, entry.kind, entry.ref, entry.parent, entry.session_id, owner, at(entry.at),
            entry.title, entry.body)  # fmt: skip


def plan_markdown(rng: random.Random, title: str, module: str, revision: int) -> str:
    steps = [
        f"Read the {module} code and its tests",
        f"Add cursor pagination helpers to {module}/pagination.py",
        f"Change the {module} queries to keyset order (created_at, id)",
        "Write tests for the first page, the last page and an empty list",
        "Run the test suite and the linters",
        f"Update the API docs of {module}",
        "Add a migration with the new index",
        "Keep the old parameters working for one release",
    ]
    chosen = rng.sample(steps, rng.randint(3, 6))
    lines = [f"# {title}", "", "## Context", ""]
    lines.append(
        f"The {module} list endpoint reads every row with OFFSET; after a year it is slow. "
        f"Revision {revision} of this plan."
    )
    lines += ["", "## Steps", ""]
    lines += [f"{n}. {text}" for n, text in enumerate(chosen, 1)]
    lines += ["", "## Risks", "", f"- Clients that page {module} by number break."]
    return "\n".join(lines)


def tool_request(rng: random.Random, session: SessionPlan) -> tuple[str, dict]:
    module = rng.choice(MODULES)
    kind = rng.random()
    if kind < 0.55:
        command = rng.choice((
            f"pytest tests/{module} -x", "npm test", "git push origin HEAD",
            f"rm -rf build/{module}", f"psql -c 'select count(*) from {module}'",  # noqa: S608
            f"docker compose up {module}", "make deploy-staging", "terraform plan",
        ))  # fmt: skip
        return "Bash", {"command": command, "description": f"Run {command.split()[0]}"}
    if kind < 0.85:
        name = rng.choice(("models", "views", "api", "tests"))
        path = f"/home/{session.owner.username}/src/{module}/{name}.py"
        return "Edit", {
            "file_path": path,
            "old_string": f"def list_{module}(offset):",
            "new_string": f"def list_{module}(cursor):",
        }
    url = f"https://docs.example.com/{module}/{rng.choice(('pagination', 'retries', 'auth'))}"
    return "WebFetch", {"url": url, "prompt": f"How does {module} handle pagination?"}


def tool_step(rng: random.Random, project: str) -> tuple[str, str, str]:
    """A tool call as the activity app summarises it: tool, summary, detail."""
    module = rng.choice(MODULES)
    kind = rng.random()
    if kind < 0.32:
        name = rng.choice(("models", "views", "api", "selectors", "tests/test_api", "utils"))
        return "Read", f"src/{module}/{name}.py", ""
    if kind < 0.55:
        command = rng.choice((
            f"pytest tests/{module} -x -q", "git status", "git diff --stat", "ruff check .",
            f"npm run test -- {module}", "make lint", f"grep -rn {module} src", "ls -la",
        ))  # fmt: skip
        return "Bash", command, ""
    if kind < 0.75:
        return (
            "Edit",
            f"src/{module}/{rng.choice(('models', 'views', 'api'))}.py",
            (f"+{rng.randrange(1, 60)} -{rng.randrange(0, 30)}"),
        )
    if kind < 0.87:
        return (
            "Grep",
            f"{rng.choice(('cursor', 'offset', 'paginate', 'retry'))} in src/{module}",
            "",
        )
    if kind < 0.93:
        return "Glob", f"src/{module}/**/*.py", ""
    if kind < 0.97:
        return "Task", f"Explore the {module} code in {project}", rng.choice(SUBAGENT_TYPES)
    return "WebFetch", f"https://docs.example.com/{module}/pagination", ""


# --- running it ----------------------------------------------------------------------------------


def prepare(vendor: str) -> None:
    """Before the bulk: PostgreSQL's GIN index on the search documents goes (built once at the
    end is several times faster than kept up row by row)."""
    from django.db import connection

    if vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX IF EXISTS search_document")


def finish(vendor: str, say: Callable[[str], None]) -> None:
    """After the bulk: identities past the rows made, the GIN index again, statistics."""
    from django.apps import apps
    from django.db import connection

    if vendor == "postgresql":
        with connection.cursor() as cursor:
            for model in apps.get_models():
                table = model._meta.db_table
                pk = model._meta.pk
                if pk is None or pk.get_internal_type() not in ("AutoField", "BigAutoField"):
                    continue
                cursor.execute(
                    f"SELECT setval(pg_get_serial_sequence('\"{table}\"', %s), "  # noqa: S608
                    f'coalesce(max("{pk.column}"), 0) + 1, false) FROM "{table}"',
                    [pk.column],
                )
            say("building the search index (GIN)")
            cursor.execute("SET maintenance_work_mem = '512MB'")
            cursor.execute(
                "CREATE INDEX IF NOT EXISTS search_document ON search_searchentry "
                "USING GIN (document)"
            )
            say("analyzing")
            cursor.execute("ANALYZE")
    else:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def generate(*, scale: float, seed: int = SEED, now: datetime | None = None) -> dict[str, int]:
    """Make the history in the default database (migrated first); returns what was made."""
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", interactive=False, verbosity=0)
    vendor = connection.vendor
    if vendor == "postgresql":
        output: Output = PostgresOutput(postgres_url(connection.get_connection_params()))
    else:
        connection.ensure_connection()
        output = SqliteOutput(connection.connection)
    moment = (now or datetime.now(UTC)).replace(second=0, microsecond=0)
    generator = Generator(output, Counts.at(scale), seed, moment)
    prepare(vendor)
    try:
        generator.run()
    except BaseException:
        output.abandon()
        raise
    finish(vendor, generator.say)
    generator.say("done")
    return stored()


def stored() -> dict[str, int]:
    """How many rows of each kind the database holds."""
    from dashboard.activity.models import Step
    from dashboard.models import Agent, AuditEntry, Session
    from dashboard.search.models import SearchEntry
    from planmode.models import Annotation, PermissionRequest, Plan
    from todos.models import TodoRevision

    models = {
        "sessions": Session,
        "agents": Agent,
        "todo revisions": TodoRevision,
        "plan revisions": Plan,
        "plan comments": Annotation,
        "permission requests": PermissionRequest,
        "tool steps": Step,
        "search entries": SearchEntry,
        "audit entries": AuditEntry,
    }
    return {name: model.objects.count() for name, model in models.items()}


def postgres_url(params: dict) -> str:
    from psycopg.conninfo import make_conninfo

    keys = {"dbname", "user", "password", "host", "port"}
    return make_conninfo("", **{k: v for k, v in params.items() if k in keys and v})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.history", description=__doc__)
    parser.add_argument(
        "--scale",
        type=float,
        default=None,
        help="how much of the full year (default 1 on PostgreSQL, 0.1 on SQLite)",
    )
    parser.add_argument("--seed", type=int, default=SEED)
    arguments = parser.parse_args(argv)
    django.setup()
    from django.db import connection

    scale = arguments.scale
    if scale is None:
        scale = 1.0 if connection.vendor == "postgresql" else 0.1
    print(f"A year of history at scale {scale:g} on {connection.vendor}:", flush=True)
    started = time.monotonic()
    made = generate(scale=scale, seed=arguments.seed)
    for name, n in made.items():
        print(f"  {name:<22} {n:>12,}")
    print(f"Made in {time.monotonic() - started:.1f} s.", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
