"""Sessions and agents: created on first mention, owned by the token's user."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from time import monotonic
from typing import Any, TypeVar

from channels.db import database_sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.db import models, transaction
from django.db.models import QuerySet
from django.utils import timezone

from dashboard.core.changes import Changes
from dashboard.core.edge import column_length
from dashboard.core.errors import ServiceError
from dashboard.core.redaction import redact
from dashboard.core.sql import PreparedQuery
from dashboard.models import Agent, AgentToken, Client, Session, hash_token

M = TypeVar("M", bound=models.Model)

ID_LENGTH = min(column_length(Session, "session_id"), column_length(Agent, "agent_id"))
ID_PATTERN = re.compile(rf"^[A-Za-z0-9][A-Za-z0-9._:@-]{{0,{ID_LENGTH - 1}}}$")


def validate_id(value: str, *, name: str) -> str:
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise ServiceError(
            "invalid_id",
            f"The {name} must be 1 to {ID_LENGTH} letters, digits, dots, underscores, colons, "
            "at signs or hyphens, and start with a letter or digit.",
            detail=[{"loc": ["path", name], "msg": "not a valid id"}],
        )
    return value


def idempotent_replay(
    records: QuerySet[M], *, key: str | None, request_hash: str, what: str
) -> M | None:
    """The earlier record made with this Idempotency-Key, to answer a retry with; None when
    there is none. The same key sent with a different body is refused."""
    if not key:
        return None
    earlier = records.filter(idempotency_key=key).first()
    if earlier is not None and earlier.request_hash != request_hash:
        raise ServiceError(
            "idempotency_key_reused",
            f"This Idempotency-Key was already used for a different {what}; "
            f"send a new key for a new {what}.",
        )
    return earlier


def token_authenticate(raw: str | None) -> AbstractBaseUser | None:
    """The active user owning this bearer token, or None; records when it was last used."""
    if not raw:
        return None
    token = (
        AgentToken.objects.active().select_related("owner").filter(key_hash=hash_token(raw)).first()
    )
    if token is None:
        return None
    now = timezone.now()
    # Recording every use would add a write to each request; a minute's precision is enough.
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        AgentToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.owner


# Token checks are cached for this long: a warm agent costs no query per request, and a token
# revoked (or its user deactivated) stops working within this time in every process.
TOKEN_CACHE_SECONDS = 1.0
_token_cache: dict[str, tuple[float, AbstractBaseUser | None]] = {}
_token_cache_lock = threading.Lock()
TOKEN_CACHE_SIZE = 10_000


def token_authenticate_cached(raw: str | None) -> AbstractBaseUser | None:
    """`token_authenticate`, remembered for TOKEN_CACHE_SECONDS (unknown tokens too)."""
    if not raw:
        return None
    key = hash_token(raw)
    now = monotonic()
    cached = _token_cache.get(key)
    if cached is not None and cached[0] > now:
        return cached[1]
    owner = token_authenticate(raw)
    with _token_cache_lock:
        if len(_token_cache) >= TOKEN_CACHE_SIZE:
            _token_cache.clear()
        _token_cache[key] = (now + TOKEN_CACHE_SECONDS, owner)
    return owner


def forget_cached_tokens(**kwargs: object) -> None:
    with _token_cache_lock:
        _token_cache.clear()


async def token_owner(raw: str | None) -> AbstractBaseUser | None:
    """The owner of a bearer token, from async code: no thread hop while the cache is warm."""
    if not raw:
        return None
    cached = _token_cache.get(hash_token(raw))
    if cached is not None and cached[0] > monotonic():
        return cached[1]
    return await database_sync_to_async(token_authenticate_cached)(raw)


@dataclass(frozen=True)
class ResolvedAgent:
    agent: Agent
    agent_created: bool
    session_created: bool

    def changes(self) -> Changes:
        """The agent's card (and its session's header and row), new ones marked as such."""
        changes = Changes().agent(self.agent.pk, self.agent.session_id)
        if self.agent_created:
            changes.created_agents.add(self.agent.pk)
        if self.session_created:
            changes.created_sessions.add(self.agent.session_id)
        return changes


# (session_id, agent_id) -> (agent pk, owner pk, session pk). Identities never change once
# created, so a warm agent is found and locked with one query; a deleted one is looked up afresh.
_known_agents: dict[tuple[str, str], tuple[int, int, int]] = {}
KNOWN_AGENTS_SIZE = 50_000


def session_of_owner(*, owner: AbstractBaseUser, session_id: str) -> Session:
    """The API's rule for reading a session: only one reported with the caller's token;
    unknown, or another user's, is the same 404."""
    session = Session.objects.filter(session_id=session_id, owner=owner).first()
    if session is None:
        raise ServiceError(
            "session_not_found",
            "No session with this id was reported with your token.",
            status=404,
        )
    return session


def known_agent_pk(*, owner: AbstractBaseUser, session_id: str, agent_id: str) -> int | None:
    """The pk of an agent this process has already seen for this owner, without a query."""
    known = _known_agents.get((session_id, agent_id))
    return known[0] if known is not None and known[1] == owner.pk else None


def known_agent(
    *, owner: AbstractBaseUser, session_id: str, agent_id: str
) -> tuple[int, int] | None:
    """The pks of an agent this process has already seen for this owner and of its session,
    without a query."""
    known = _known_agents.get((session_id, agent_id))
    return (known[0], known[2]) if known is not None and known[1] == owner.pk else None


def locked_row(model: type[M], *related: str, **annotations: Any) -> Callable[[int], M | None]:
    """A prepared read of one row by pk, locked for the transaction, with `related` rows and
    `annotations` (as attributes)."""

    def queryset(pks: list[int]) -> QuerySet[M]:
        locked = model._default_manager.select_for_update(of=("self",))
        rows = locked.select_related(*related).filter(pk=pks[0]).order_by()
        return rows.annotate(**annotations) if annotations else rows

    return PreparedQuery(model, queryset).get


# The writer's hottest read: an agent with its session and tracking row.
_locked_agent = locked_row(Agent, "session", "tracking")


def agent_resolve_for_update(
    *,
    owner: AbstractBaseUser,
    session_id: str,
    agent_id: str,
    agent_type: str = "",
    cwd: str = "",
    client: str = "",
) -> ResolvedAgent:
    """The agent row, created with its session on first mention and locked for this transaction.

    Must run inside a transaction: the lock serializes writes for one agent, in call order.
    """
    validate_id(session_id, name="session_id")
    validate_id(agent_id, name="agent_id")
    known = _known_agents.get((session_id, agent_id))
    if known is not None and known[1] == owner.pk:
        agent = _locked_agent(known[0])
        if agent is not None:
            _fill_in(agent, agent_type=agent_type, cwd=cwd, client=client)
            return ResolvedAgent(agent=agent, agent_created=False, session_created=False)
        _known_agents.pop((session_id, agent_id), None)
    now = timezone.now()
    session, session_created = Session.objects.get_or_create(
        session_id=session_id,
        defaults={"owner": owner, "cwd": cwd, "client": client or Client.API, "started_at": now},
    )
    if session.owner_id != owner.pk:
        raise ServiceError(
            "session_forbidden",
            "This session was reported with another user's token; use that user's token for it.",
            status=403,
        )
    main, agent_created = Agent.objects.get_or_create(
        session=session, agent_id=session_id, defaults={"started_at": session.started_at}
    )
    if agent_id == session_id:
        agent = main
    else:
        agent, agent_created = Agent.objects.get_or_create(
            session=session,
            agent_id=agent_id,
            defaults={"agent_type": agent_type, "parent": main, "started_at": now},
        )
    agent = _locked_agent(agent.pk)
    if len(_known_agents) >= KNOWN_AGENTS_SIZE:
        _known_agents.clear()
    _known_agents[(session_id, agent_id)] = (agent.pk, owner.pk, agent.session_id)
    _fill_in(agent, agent_type=agent_type, cwd=cwd, client=client)
    return ResolvedAgent(agent=agent, agent_created=agent_created, session_created=session_created)


def _fill_in(agent: Agent, *, agent_type: str, cwd: str, client: str = "") -> None:
    """The first report of an agent's type or a session's folder sticks; so does the first
    integration that names the session's client (a session first seen through the API)."""
    if client and client != Client.API and agent.session.client == Client.API:
        agent.session.client = client
        agent.unsaved_identity = True
    if agent_type and not agent.agent_type:
        agent.agent_type = agent_type
        agent.unsaved_identity = True
    if cwd and not agent.session.cwd:
        agent.session.cwd = cwd
        agent.unsaved_identity = True


TITLE_LENGTH = 120


def session_title_from(text: str) -> str:
    """A session's title from a prompt or a plan title: its first line, shortened."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    # Redacted whole, before it is shortened: a prompt may start with a secret.
    line = redact(re.sub(r"^#+\s*", "", line))
    line = re.sub(r"\s+", " ", line)
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1].rstrip() + "…"


def session_describe(*, session: Session, title: str = "", branch: str = "") -> bool:
    """Fill in what tells a session apart (the first title stays, the branch follows the
    agent); saved with the next `agent_touch`. Returns whether anything changed."""
    changed = False
    title = session_title_from(title) if title else ""
    if title and not session.title:
        session.title = title
        changed = True
    branch = branch.strip()[:200]
    if branch and session.branch != branch:
        session.branch = branch
        changed = True
    return changed


# "last event 3 s ago" needs no finer time: an agent busy with many tool calls a second costs
# one update of its row and its session's per second, not one per call.
TOUCH_PRECISION = timedelta(seconds=1)


def agent_touch(
    *,
    agent: Agent,
    coarse: bool = False,
    ending: bool = False,
    turn_ended: bool | None = None,
    now: datetime | None = None,
) -> None:
    """Mark activity on the agent and its session (inside the caller's transaction). A
    `coarse` touch (a plain tool use) is skipped when the last one is under a second old.
    Activity brings an ended session back, unless it is the session's own end (`ending`).
    `turn_ended`: the agent's turn ended now (True) or a new one began (False); saved with
    the touch, so it costs no statement of its own."""
    assert transaction.get_connection().in_atomic_block
    now = now or timezone.now()
    session = agent.session
    revive = session.ended_at is not None and not ending
    fresh = now - agent.last_seen_at < TOUCH_PRECISION and (
        now - session.last_seen_at < TOUCH_PRECISION
    )
    if (
        coarse
        and fresh
        and not revive
        and turn_ended is None
        and not getattr(agent, "unsaved_identity", False)
    ):
        return
    agent.last_seen_at = now
    if turn_ended is not None:
        agent.turn_ended_at = now if turn_ended else None
    session.last_seen_at = now
    fields = ["last_seen_at", "cwd", "title", "branch", "client"]
    if revive:
        session.ended_at, session.ended_quietly = None, False
        fields += ["ended_at", "ended_quietly"]
    session.save(update_fields=fields)
    agent_fields = ["last_seen_at", "agent_type"]
    if turn_ended is not None:
        agent_fields.append("turn_ended_at")
    agent.save(update_fields=agent_fields)
    agent.unsaved_identity = False
