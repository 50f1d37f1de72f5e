"""Backfill the board from Claude Code's files (`python manage.py import_claude`).

Reads transcripts (`projects/*/*.jsonl`, subagents in `projects/*/<session>/subagents/`) and
legacy todo files (`todos/<session>-agent-<agent>.json`). The transcript format is internal to
Claude Code and changes between versions, so every line is parsed on its own and anything
unreadable or unknown is skipped and counted, never fatal. Tool-use ids are the idempotency keys,
so a second run (or a write the hooks already reported) imports nothing twice.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Max
from pydantic import ValidationError

from dashboard.core.edge import column_length, strict_loads, text_problem
from dashboard.core.errors import ServiceError
from dashboard.core.redaction import redact
from dashboard.core.services import session_describe
from dashboard.integrations.claude_code.schemas import ExitPlanModeToolInput, TodoWriteToolInput
from dashboard.live import publisher
from dashboard.models import Agent, Client, Session
from planmode.models import Plan
from planmode.services import plan_decide, plan_submit
from todos.models import TodoRevision
from todos.schemas import TodoItem
from todos.selectors import current_todos
from todos.services import todo_list_replace

KNOWN_RECORD_TYPES = frozenset({"user", "assistant", "system", "summary", "file-history-snapshot"})
LEGACY_TODO_FILE = re.compile(r"^(?P<session>.+?)-agent-(?P<agent>.+)\.json$")
SUBAGENT_FILE = re.compile(r"^agent-(?P<agent>.+)\.jsonl$")
REJECTION_FEEDBACK = re.compile(r"the user said:\s*(?P<feedback>.+)", re.IGNORECASE | re.DOTALL)
REJECTED_IN_TERMINAL = "Rejected in the Claude Code terminal (imported from the transcript)."

# What the summary says about each count, in a stable order.
COUNT_LABELS = {
    "todo_writes": "todo write(s) imported",
    "plans": "plan(s) imported",
    "already": "already on the board",
    "stale": "older than the list the board already has",
    "unreadable": "unreadable lines or files",
    "unknown": "records of an unknown type",
    "invalid": "tool calls with input this importer cannot use",
    "refused": "refused by the server's rules",
}


@dataclass
class PendingPlan:
    """An ExitPlanMode call whose answer (the tool result) has not been read yet."""

    session_id: str
    agent_id: str
    plan: ExitPlanModeToolInput


@dataclass
class FileCursor:
    offset: int = 0
    agent_id: str | None = None


@dataclass
class SessionTimes:
    """When a session's records were written, to put the board's timestamps back afterwards."""

    first: datetime | None = None
    last: datetime | None = None
    # What tells the session apart on the board: its first prompt and its git branch.
    prompt: str = ""
    branch: str = ""

    def see(self, moment: datetime | None) -> None:
        if moment is None:
            return
        self.first = min(self.first or moment, moment)
        self.last = max(self.last or moment, moment)


@dataclass
class ClaudeImporter:
    root: Path
    owner: AbstractBaseUser
    counts: Counter[str] = field(default_factory=Counter)
    refusals: list[str] = field(default_factory=list)
    cursors: dict[Path, FileCursor] = field(default_factory=dict)
    legacy_seen: dict[Path, tuple[float, int]] = field(default_factory=dict)
    pending_plans: dict[str, PendingPlan] = field(default_factory=dict)
    # Each written session's last_seen_at before this run wrote to it (None: it is new).
    seen_before: dict[str, datetime | None] = field(default_factory=dict)

    def scan(self, *, final: bool) -> Counter[str]:
        """Read what is new since the last scan; `final` also takes a last line that has no
        newline yet (a watcher leaves it for the next scan, as it may be half-written)."""
        before = self.counts.copy()
        projects = self.root / "projects"
        transcripts = sorted(projects.glob("*/*.jsonl"))
        subagents = sorted(projects.glob("*/*/subagents/agent-*.jsonl"))
        for path in [*transcripts, *subagents]:
            self._read_transcript(path, final=final)
        for path in sorted((self.root / "todos").glob("*.json")):
            self._read_legacy_todos(path)
        return self.counts - before

    # --- transcripts ---------------------------------------------------------------------------

    def _read_transcript(self, path: Path, *, final: bool) -> None:
        cursor = self.cursors.setdefault(path, FileCursor(agent_id=_subagent_id(path)))
        try:
            size = path.stat().st_size
            if size < cursor.offset:
                cursor.offset = 0  # rewritten from scratch; idempotency keys prevent doubles
            if size == cursor.offset:
                return
            with path.open("rb") as file:
                file.seek(cursor.offset)
                data = file.read()
        except OSError as error:
            self._refuse("unreadable", f"{path}: {error.strerror or error}")
            return
        lines = data.split(b"\n")
        tail = lines.pop()
        if tail and final:
            lines.append(tail)
            tail = b""
        cursor.offset += len(data) - len(tail)
        times: dict[str, SessionTimes] = {}
        for line in lines:
            if line.strip():
                self._read_record(line, cursor, times)
        for session_id, seen in times.items():
            self._restore_session_times(session_id, seen)

    def _read_record(self, line: bytes, cursor: FileCursor, times: dict[str, SessionTimes]) -> None:
        try:
            record = strict_loads(line)
        except ValueError:
            self.counts["unreadable"] += 1
            return
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            self.counts["unreadable"] += 1
            return
        if record["type"] not in KNOWN_RECORD_TYPES:
            self.counts["unknown"] += 1
            return
        session_id = record.get("sessionId")
        if not isinstance(session_id, str):
            return
        moment = _parse_time(record.get("timestamp"))
        seen = times.setdefault(session_id, SessionTimes())
        seen.see(moment)
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        branch = _storable(record.get("gitBranch"), column_length(Session, "branch"))
        if branch and branch != "HEAD":
            seen.branch = branch
        if record["type"] == "user" and isinstance(content, str) and not record.get("isMeta"):
            seen.prompt = seen.prompt or _storable(content)
        if not isinstance(content, list):
            return
        agent_id = record.get("agentId") or cursor.agent_id or session_id
        cwd = _storable(record.get("cwd"), column_length(Session, "cwd"))
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block.get("name") == "TodoWrite":
                self._todo_write(
                    block, session_id=session_id, agent_id=agent_id, cwd=cwd, moment=moment
                )
            elif block.get("type") == "tool_use" and block.get("name") == "ExitPlanMode":
                self._plan_seen(block, session_id=session_id, agent_id=agent_id)
            elif (
                block.get("type") == "tool_result"
                and block.get("tool_use_id") in self.pending_plans
            ):
                self._plan_answered(block)

    def _todo_write(
        self, block: dict, *, session_id: str, agent_id: str, cwd: str, moment: datetime | None
    ) -> None:
        key = block.get("id")
        try:
            todos = TodoWriteToolInput.model_validate(block.get("input")).todos
        except ValidationError:
            self.counts["invalid"] += 1
            return
        if not isinstance(key, str) or not key:
            self.counts["invalid"] += 1
            return
        self._replace(
            session_id=session_id, agent_id=agent_id, todos=todos, key=key, cwd=cwd, moment=moment
        )

    def _replace(
        self,
        *,
        session_id: str,
        agent_id: str,
        todos: list[TodoItem],
        key: str,
        cwd: str,
        moment: datetime | None,
    ) -> None:
        agent = Agent.objects.filter(session__session_id=session_id, agent_id=agent_id).first()
        if agent is not None:
            if agent.revisions.filter(idempotency_key=key).exists():
                self.counts["already"] += 1
                return
            latest = agent.revisions.aggregate(latest=Max("received_at"))["latest"]
            # An older write would turn the board's newer list back into a past one.
            if latest and moment and moment < latest:
                self.counts["stale"] += 1
                return
        self._before_writing(session_id)
        try:
            written = todo_list_replace(
                owner=self.owner,
                session_id=session_id,
                agent_id=agent_id,
                todos=todos,
                source=TodoRevision.Source.IMPORT,
                idempotency_key=key,
                cwd=cwd,
                client=Client.CLAUDE_CODE,
                received_at=moment,
                enforce_plan_mode=False,
            )
        except ServiceError as error:
            self._refuse("refused", f"{session_id}/{agent_id}: {error.message}")
            return
        publisher.publish(written.changes, loop=None)
        self.counts["todo_writes"] += 1

    # --- plans ---------------------------------------------------------------------------------

    def _plan_seen(self, block: dict, *, session_id: str, agent_id: str) -> None:
        try:
            plan = ExitPlanModeToolInput.model_validate(block.get("input"))
        except ValidationError:
            self.counts["invalid"] += 1
            return
        if isinstance(block.get("id"), str) and block["id"]:
            # Imported once its answer is read: a plan still waiting in a terminal is not a
            # plan a reviewer on the board could decide.
            self.pending_plans[block["id"]] = PendingPlan(session_id, agent_id, plan)

    def _plan_answered(self, block: dict) -> None:
        key = block["tool_use_id"]
        pending = self.pending_plans.pop(key)
        exists = Plan.objects.filter(
            session__session_id=pending.session_id, agent__agent_id=pending.agent_id
        )
        # Plans the hooks reported carry no tool-use id: the same text means the same plan.
        if (
            exists.filter(idempotency_key=key).exists()
            or exists.filter(
                markdown=redact(pending.plan.plan), idempotency_key__isnull=True
            ).exists()
        ):
            self.counts["already"] += 1
            return
        rejected = bool(block.get("is_error"))
        self._before_writing(pending.session_id)
        try:
            submitted = plan_submit(
                owner=self.owner,
                session_id=pending.session_id,
                agent_id=pending.agent_id,
                plan=pending.plan.plan,
                plan_file_path=pending.plan.planFilePath,
                source=Plan.Source.IMPORT,
                idempotency_key=key,
                client=Client.CLAUDE_CODE,
            )
            decided = plan_decide(
                plan_id=submitted.plan.pk,
                reviewer=self.owner,
                approve=not rejected,
                # Decided in the terminal already: recorded as it was, not decided here.
                check=False,
                feedback=_rejection_feedback(block.get("content")) if rejected else "",
            )
        except ServiceError as error:
            self._refuse("refused", f"{pending.session_id}/{pending.agent_id}: {error.message}")
            return
        publisher.publish(submitted.changes.merge(decided.changes), loop=None)
        self.counts["plans"] += 1

    # --- legacy todo files ---------------------------------------------------------------------

    def _read_legacy_todos(self, path: Path) -> None:
        match = LEGACY_TODO_FILE.match(path.name)
        if match is None:
            self.counts["unknown"] += 1
            return
        try:
            stat = path.stat()
            if self.legacy_seen.get(path) == (stat.st_mtime, stat.st_size):
                return
            self.legacy_seen[path] = (stat.st_mtime, stat.st_size)
            raw = path.read_bytes()
            todos = TodoWriteToolInput.model_validate({"todos": strict_loads(raw)}).todos
        except (OSError, ValueError, ValidationError):
            # ValidationError is a ValueError too: an invalid file counts as unreadable, as in
            # Claude Code, where such a file is an empty list.
            self.counts["unreadable"] += 1
            return
        if not todos:
            return
        session_id, agent_id = match["session"], match["agent"]
        agent = Agent.objects.filter(session__session_id=session_id, agent_id=agent_id).first()
        if agent is not None and current_todos(agent) == [item.as_wire() for item in todos]:
            self.counts["already"] += 1
            return
        times = SessionTimes()
        moment = datetime.fromtimestamp(stat.st_mtime, tz=UTC)
        times.see(moment)
        key = "todo-file:" + hashlib.sha256(raw).hexdigest()
        self._replace(
            session_id=session_id, agent_id=agent_id, todos=todos, key=key, cwd="", moment=moment
        )
        self._restore_session_times(session_id, times)

    def _before_writing(self, session_id: str) -> None:
        if session_id not in self.seen_before:
            self.seen_before[session_id] = (
                Session.objects.filter(session_id=session_id)
                .values_list("last_seen_at", flat=True)
                .first()
            )

    def _restore_session_times(self, session_id: str, seen: SessionTimes) -> None:
        """Writing touches a session as if it were active now; give it back the time its
        records were written (or the later time it had already been seen at)."""
        if session_id not in self.seen_before or seen.last is None:
            return
        session = Session.objects.filter(session_id=session_id).first()
        if session is None:
            return
        last_seen = max(filter(None, [seen.last, self.seen_before[session_id]]))
        if self.seen_before[session_id] is None:
            self.seen_before[session_id] = last_seen
        started = min(filter(None, [seen.first, session.started_at]))
        Session.objects.filter(pk=session.pk).update(last_seen_at=last_seen, started_at=started)
        # The first prompt names the session, even when a plan of it was imported first.
        if seen.prompt and session.title in {plan.title for plan in session.plans.all()}:
            session.title = ""
        if session_describe(session=session, title=seen.prompt, branch=seen.branch):
            Session.objects.filter(pk=session.pk).update(title=session.title, branch=session.branch)
        session.agents.filter(last_seen_at__gt=last_seen).update(last_seen_at=last_seen)
        session.agents.filter(started_at__gt=last_seen).update(started_at=seen.first)

    def _refuse(self, count: str, reason: str) -> None:
        self.counts[count] += 1
        self.refusals.append(reason)


def _subagent_id(path: Path) -> str | None:
    match = SUBAGENT_FILE.match(path.name)
    return match["agent"] if match and path.parent.name == "subagents" else None


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _rejection_feedback(content: Any) -> str:
    if isinstance(content, list):
        content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    if not isinstance(content, str) or not content.strip():
        return REJECTED_IN_TERMINAL
    match = REJECTION_FEEDBACK.search(content)
    return (match["feedback"] if match else content).strip() or REJECTED_IN_TERMINAL


def _storable(value: object, max_length: int | None = None) -> str:
    """Text a transcript gives about a session (its folder, branch, first prompt), or "" when
    it could not be stored as it is (not text, NUL characters, longer than its column)."""
    if not isinstance(value, str) or text_problem(value):
        return ""
    if max_length is not None and len(value) > max_length:
        return ""
    return value
