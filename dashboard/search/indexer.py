"""Keeping the search index current: what a write batch stored is noted by the batch (no
query: `index_batch`, a listener of the writer, and `steps_stored`, the activity app's) and
indexed by one write that follows it through the same writer, behind the agents' own writes
(`index_pending`), from the text as stored, so already redacted; everything at once by
`rebuild_search`.

So a hook's batch pays nothing for search, and the index job takes what many batches stored
at once: one read per kind they touched and one upsert. The job is queued INDEX_DELAY after the
first thing it will take was noted: agents busy at a hundred writes a second then cost the
writer a few index jobs a second, not one after nearly every batch (each has a fixed cost of
its reads and its upsert). What is noted and not yet indexed lives in this process for that
moment; a process that dies in between leaves those out until `rebuild_search` (a graceful
stop writes them: the writer queues held-back jobs before it ends).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from django.db import connection, transaction

from dashboard.activity.models import Step
from dashboard.core.changes import Changes
from dashboard.core.writer import writer
from dashboard.models import Session
from dashboard.search.models import EntryKind, SearchEntry
from planmode.markdown import plain_title
from planmode.models import Annotation, Decision, PermissionRequest, Plan
from planmode.tool_display import describe
from todos.models import TodoRevision

logger = logging.getLogger(__name__)

TITLE_CHARS = 300
# What one entry keeps of a long text (a plan of a thousand lines): enough to be found by.
BODY_CHARS = 20_000
REBUILD_CHUNK = 2_000
# What one index job takes of what is pending (see `index_pending`).
INDEX_CHUNK = 50
# How long after the first thing noted the index job is queued; what is noted meanwhile goes
# in the same job. Search shows a write about this much later.
INDEX_DELAY = 0.25


@dataclass
class Touched:
    """What a batch stored that search shows."""

    sessions: set[int] = field(default_factory=set)
    revisions: set[int] = field(default_factory=set)
    plans: set[int] = field(default_factory=set)
    annotated: set[int] = field(default_factory=set)
    requests: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, written: Iterable[Changes]) -> Touched:
        touched = cls()
        for changes in written:
            touched.sessions |= changes.created_sessions | changes.sessions
            touched.revisions.update(changes.revisions, changes.amended_revisions)
            touched.plans |= changes.plans | set(changes.decided_plans)
            touched.annotated |= changes.annotated_plans
            touched.requests |= changes.permission_requests
        return touched


@dataclass
class Pending:
    """What batches stored and the index has not taken yet, and whether a job will take it."""

    touched: Touched = field(default_factory=Touched)
    steps: dict[int, SearchEntry] = field(default_factory=dict)
    # Whether an index job will take it: queued in the writer, or due when `timer` fires.
    queued: bool = False
    timer: threading.Timer | None = None

    def __bool__(self) -> bool:
        return bool(self.steps) or any(vars(self.touched).values())

    def take(self, limit: int) -> Pending:
        """Up to `limit` of what is pending (of each kind in turn), moved out into a Pending
        of its own; the rest stays."""
        taken = Pending()
        for name, keys in vars(self.touched).items():
            chosen = sorted(keys)[:limit]
            limit -= len(chosen)
            keys.difference_update(chosen)
            getattr(taken.touched, name).update(chosen)
        for pk in sorted(self.steps)[:limit]:
            taken.steps[pk] = self.steps.pop(pk)
        return taken


_pending = Pending()
_pending_lock = threading.Lock()


def index_batch(written: list[Changes]) -> None:
    """Note what the batch stored (no query), for the index job that follows."""
    touched = Touched.of(written)
    if any(vars(touched).values()):
        _note(touched=touched)


def steps_stored(steps: list[Step]) -> None:
    """The steps a batch stored, as the activity app hands them over, with their pks: their
    entries are made now (no read) and written by the index job."""
    entries = {
        step.pk: entry for step in steps if step.pk is not None for entry in step_entries([step])
    }
    if entries:
        _note(steps=entries)


def _note(*, touched: Touched | None = None, steps: dict[int, SearchEntry] | None = None) -> None:
    with _pending_lock:
        if touched is not None:
            for name, keys in vars(touched).items():
                getattr(_pending.touched, name).update(keys)
        if steps:
            _pending.steps.update(steps)
        if _pending.queued:
            return
        _pending.queued = True
        _pending.timer = timer = threading.Timer(INDEX_DELAY, queue_index_job)
        timer.daemon = True
    timer.start()


def queue_index_job() -> None:
    """Queue the index job that waits for its delay now (the delay is over, or the writer
    drains or stops); nothing when it is already queued."""
    with _pending_lock:
        timer, _pending.timer = _pending.timer, None
    if timer is None:
        return
    timer.cancel()
    # Behind the agents' writes: it runs in a later batch, or at once when the writer idles.
    writer.submit(index_pending, {}, None, behind=True)


def index_pending() -> None:
    """The index job: what batches stored since the last one, in a savepoint of its own, so
    search never takes other writes down with it (a failure is logged). At most INDEX_CHUNK
    things at a time: an agent's write queued while a job runs waits for it, so a job must
    stay short (a burst of hundreds of held plans noted at once would make one long job).
    What is left goes in the next job."""
    with _pending_lock:
        pending = _pending.take(INDEX_CHUNK)
        more = bool(_pending)
        _pending.queued = more
    if more:
        writer.submit(index_pending, {}, None, behind=True)
    try:
        with transaction.atomic():
            _index(pending.touched)
            store(list(pending.steps.values()))
    except Exception:
        logger.exception("could not index for search what was stored")


def _index(touched: Touched) -> None:
    """The entries of what was touched. Each kind costs a query only when something of it was
    touched: a job after a TodoWrite, the commonest, has a session and a revision."""
    entries = list(session_entries(touched.sessions))
    if touched.revisions:
        revisions = TodoRevision.objects.select_related("agent")
        entries += revision_entries(revisions.filter(pk__in=touched.revisions))
    if touched.plans:
        entries += plan_entries(Plan.objects.filter(pk__in=touched.plans))
        decisions = Decision.objects.select_related("plan")
        entries += decision_entries(decisions.filter(plan_id__in=touched.plans))
    if touched.requests:
        entries += request_entries(PermissionRequest.objects.filter(pk__in=touched.requests))
    if touched.annotated:
        entries += comments_replaced(touched.annotated)
    store(entries, changed_only=True)


def store(entries: list[SearchEntry], *, changed_only: bool = False) -> None:
    """Insert or update the entries (one of each kind and source). `changed_only` first
    drops those whose text is already indexed as it is (a session's row changes often, its
    words seldom), so the index is written only when a word changed."""
    if changed_only and entries:
        entries = _changed(entries)
    if entries:
        owners = dict(
            Session.objects.filter(pk__in={entry.session_id for entry in entries}).values_list(
                "pk", "owner_id"
            )
        )
        for entry in entries:
            entry.owner_id = owners.get(entry.session_id)
        SearchEntry.objects.bulk_create(
            entries,
            update_conflicts=True,
            unique_fields=["kind", "ref"],
            update_fields=["parent", "session", "owner", "at", "title", "body"],
        )


def _changed(entries: list[SearchEntry]) -> list[SearchEntry]:
    sessions = [entry.ref for entry in entries if entry.kind == EntryKind.SESSION]
    if not sessions:
        return entries
    known = {
        ref: (title, body)
        for ref, title, body in SearchEntry.objects.filter(
            kind=EntryKind.SESSION, ref__in=sessions
        ).values_list("ref", "title", "body")
    }
    return [
        entry
        for entry in entries
        if entry.kind != EntryKind.SESSION or known.get(entry.ref) != (entry.title, entry.body)
    ]


def _entry(kind: str, ref: int, session: int, at, title: str, body: str, parent=None):
    return SearchEntry(
        kind=kind,
        ref=ref,
        parent=parent,
        session_id=session,
        at=at,
        title=" ".join(title.split())[:TITLE_CHARS],
        body=body[:BODY_CHARS],
    )


def session_entries(pks: Iterable[int]) -> Iterator[SearchEntry]:
    """A session is found by its title, project, repository, person, machine and branch."""
    pks = list(pks)
    if not pks:
        return
    for session in Session.objects.select_related("owner").filter(pk__in=pks):
        owner = session.owner
        words = [
            session.project,
            session.repository,
            session.host,
            owner.get_username(),
            owner.get_full_name(),
            session.branch,
            session.cwd,
        ]
        body = "\n".join(word for word in words if word)
        yield _entry(
            EntryKind.SESSION, session.pk, session.pk, session.started_at,
            session.display_title, body,
        )  # fmt: skip


def revision_entries(revisions: Iterable[TodoRevision]) -> Iterator[SearchEntry]:
    """Each revision of a list, by its items (what was being done, and what was to be)."""
    for revision in revisions:
        items = [item for item in revision.new_todos if isinstance(item, dict)]
        if not items:
            continue
        lines = [str(item.get("content") or "") for item in items]
        lines += [str(item.get("activeForm") or "") for item in items if item.get("activeForm")]
        yield _entry(
            EntryKind.TODOS, revision.pk, revision.agent.session_id, revision.received_at,
            lines[0], "\n".join(lines),
        )  # fmt: skip


def plan_entries(plans: Iterable[Plan]) -> Iterator[SearchEntry]:
    for plan in plans:
        title = plain_title(plan.markdown.strip().splitlines()[0]) if plan.markdown.strip() else ""
        yield _entry(
            EntryKind.PLAN, plan.pk, plan.session_id, plan.submitted_at,
            title or f"Plan revision {plan.revision}", plan.markdown,
        )  # fmt: skip


def decision_entries(decisions: Iterable[Decision]) -> Iterator[SearchEntry]:
    """A decision is found by the words the reviewer sent with it."""
    for decision in decisions:
        words = "\n".join(text for text in (decision.feedback, decision.notes) if text)
        if not words:
            continue
        who = decision.decided_by_name or "a reviewer"
        yield _entry(
            EntryKind.DECISION, decision.pk, decision.plan.session_id, decision.decided_at,
            f"{decision.get_outcome_display()} by {who}", words, parent=decision.plan_id,
        )  # fmt: skip


def comments_replaced(plan_pks: set[int]) -> list[SearchEntry]:
    """The plans' comments as they are now: those removed leave the index."""
    annotations = list(Annotation.objects.select_related("plan").filter(plan_id__in=plan_pks))
    SearchEntry.objects.filter(kind=EntryKind.COMMENT, parent__in=plan_pks).exclude(
        ref__in=[annotation.pk for annotation in annotations]
    ).delete()
    return list(comment_entries(annotations))


def comment_entries(annotations: Iterable[Annotation]) -> Iterator[SearchEntry]:
    for annotation in annotations:
        body = "\n".join(text for text in (annotation.comment, annotation.quote) if text)
        yield _entry(
            EntryKind.COMMENT, annotation.pk, annotation.plan.session_id,
            annotation.created_at, annotation.comment or annotation.quote, body,
            parent=annotation.plan_id,
        )  # fmt: skip


def request_entries(requests: Iterable[PermissionRequest]) -> Iterator[SearchEntry]:
    """A permission request is found by what it asked (the command, the file, the address)
    and by the words it was answered with."""
    for request in requests:
        view = describe(request.tool_name, request.tool_input)
        body = "\n".join(text for text in (view.headline, view.body, request.message) if text)
        yield _entry(
            EntryKind.REQUEST, request.pk, request.session_id, request.requested_at,
            f"{request.tool_name}: {view.headline}", body,
        )  # fmt: skip


def step_entries(steps: Iterable[Step]) -> Iterator[SearchEntry]:
    for step in steps:
        body = "\n".join(text for text in (step.summary, step.detail, step.error) if text)
        yield _entry(
            EntryKind.STEP, step.pk, step.session_id, step.started_at,
            f"{step.tool_name} {step.summary}", body,
        )  # fmt: skip


SOURCES = {
    EntryKind.SESSION: (Session.objects.order_by("pk"), None),
    EntryKind.TODOS: (
        TodoRevision.objects.select_related("agent").order_by("pk"),
        revision_entries,
    ),
    EntryKind.PLAN: (Plan.objects.order_by("pk"), plan_entries),
    EntryKind.DECISION: (Decision.objects.select_related("plan").order_by("pk"), decision_entries),
    EntryKind.COMMENT: (Annotation.objects.select_related("plan").order_by("pk"), comment_entries),
    EntryKind.REQUEST: (PermissionRequest.objects.order_by("pk"), request_entries),
    EntryKind.STEP: (Step.objects.order_by("pk"), step_entries),
}


def steps_pruned(pks: list[int]) -> None:
    SearchEntry.objects.filter(kind=EntryKind.STEP, ref__in=pks).delete()


def clear_chunk(*, limit: int = REBUILD_CHUNK) -> int:
    """Delete up to `limit` entries; returns how many (a rebuild starts from nothing)."""
    pks = list(SearchEntry.objects.order_by().values_list("pk", flat=True)[:limit])
    deleted, _ = SearchEntry.objects.filter(pk__in=pks).delete()
    return deleted


def engine_tidy() -> None:
    """After a rebuild: SQLite's FTS5 table made again from the entries, and merged."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO search_fts(search_fts) VALUES ('rebuild')")
            cursor.execute("INSERT INTO search_fts(search_fts) VALUES ('optimize')")


def rebuild_chunk(kind: str, *, after: int = 0, limit: int = REBUILD_CHUNK) -> int | None:
    """Index the next `limit` rows of one kind after pk `after` (a write of its own, so the
    writer is never held long); returns the last pk done, None when the kind is done."""
    rows, make = SOURCES[EntryKind(kind)]
    pks = list(rows.filter(pk__gt=after).values_list("pk", flat=True)[:limit])
    if not pks:
        return None
    if make is None:
        entries = list(session_entries(pks))
    else:
        entries = list(make(rows.filter(pk__in=pks)))
    store(entries)
    return pks[-1]
