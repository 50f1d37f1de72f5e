"""Where a session runs: its repository, its machine, and so its project.

The agent's side reports the repository's `origin` remote and the host name in two headers
(`X-Agentboard-Repository`, `X-Agentboard-Host`) with its hooks and API calls. The first
report of a session sticks (a value that differs later is ignored, with a log line). The
project is the repository, normalized so that every spelling of one remote is one project,
else the folder's name; it is created the first time it is seen.

Recording costs nothing on a warm session: a process remembers which sessions it has noted
(`_noted`), and only a session's first request in a process (or one bringing something new)
writes, once, after that request's own write.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.http import HttpRequest

from dashboard.core.changes import Changes, Outcome
from dashboard.core.writer import write
from dashboard.models import Membership, Project, Session

logger = logging.getLogger(__name__)

REPOSITORY_HEADER = "X-Agentboard-Repository"
HOST_HEADER = "X-Agentboard-Host"
REPOSITORY_LENGTH = 300
HOST_LENGTH = 255
PROJECT_NAME_LENGTH = 200
# A host name, as machines name themselves: letters, digits, dots, dashes, underscores.
HOST_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Markup and quotes: no repository host allows them in a path, and a page must never get them.
MARKUP = frozenset("<>\"'`")
# scp-like git addresses: "git@github.com:acme/shop.git", "github.com:acme/shop".
SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?(?P<host>[^:/\s]+):(?P<path>(?!//)\S+)$")


@dataclass(frozen=True)
class Origin:
    """What an agent's request says about where it runs (empty strings: not said)."""

    repository: str = ""
    host: str = ""

    def __bool__(self) -> bool:
        return bool(self.repository or self.host)


def normalize_repository(remote: str) -> str:
    """One name per repository, whatever the spelling of its remote: "github.com/acme/shop"
    for `git@github.com:acme/shop.git`, `https://user:token@github.com/acme/shop`,
    `ssh://git@github.com:22/acme/shop.git`. Never keeps credentials. "" when `remote` is not a
    repository address (control characters, lone surrogates, markup)."""
    remote = remote.strip()
    if not remote or len(remote) > REPOSITORY_LENGTH * 2:
        return ""
    if "://" in remote:
        try:
            parts = urlsplit(remote)
            host = parts.hostname or ""
        except ValueError:
            return ""
        path = parts.path
        if parts.scheme == "file" or not host:
            return ""
    else:
        match = SCP_LIKE.match(remote)
        if match is None:
            return ""
        host, path = match["host"], match["path"]
    path = path.strip("/")
    path = path.removesuffix(".git").removesuffix("/")
    if not path or not host:
        return ""
    name = f"{host.lower()}/{path}"
    if (
        not _printable(name)
        or not MARKUP.isdisjoint(name)
        or any(part in {"", ".", ".."} for part in path.split("/"))
    ):
        return ""
    return name[:REPOSITORY_LENGTH]


def _printable(text: str) -> bool:
    return all(unicodedata.category(ch)[0] not in {"C", "Z"} or ch == " " for ch in text)


def origin_from_headers(headers: Mapping[str, str], *, where: str = "request") -> Origin:
    """The origin a request reports. A value that cannot be one (over-long, control
    characters, not a repository address) is ignored with a log line: the request itself
    goes on, and the session says "unknown"."""
    raw_repository = headers.get(REPOSITORY_HEADER, "") or ""
    raw_host = headers.get(HOST_HEADER, "") or ""
    repository = normalize_repository(raw_repository) if raw_repository else ""
    if raw_repository and not repository:
        logger.warning("%s: ignored %s %r (not a repository address)", where,
                       REPOSITORY_HEADER, raw_repository[:80])  # fmt: skip
    host = raw_host.strip()
    if host and (len(host) > HOST_LENGTH or not HOST_PATTERN.match(host)):
        logger.warning("%s: ignored %s %r (not a host name)", where, HOST_HEADER, host[:80])
        host = ""
    return Origin(repository=repository, host=host.lower())


def folder_project_key(cwd: str) -> tuple[str, str]:
    """The key and name of the project of a session without a repository: its folder."""
    name = PurePath(cwd).name or cwd
    name = name[:PROJECT_NAME_LENGTH]
    return f"folder:{name}", name


def repository_project_name(repository: str) -> str:
    return repository.rsplit("/", 1)[-1][:PROJECT_NAME_LENGTH]


# session_id -> the origin this process last recorded (or found) for it.
_noted: dict[str, Origin] = {}
_noted_lock = threading.Lock()
NOTED_SIZE = 50_000


def forget_noted() -> None:
    """Tests: every session is noted afresh."""
    with _noted_lock:
        _noted.clear()


def _is_noted(session_id: str, origin: Origin) -> bool:
    known = _noted.get(session_id)
    if known is None:
        return False
    # Nothing new: it fills no field still unknown. (A value that differs from the one known
    # is ignored: the first report sticks, and a project's committed settings may carry
    # another machine's name on every hook; it was logged once, when first seen.)
    return (not origin.repository or bool(known.repository)) and (
        not origin.host or bool(known.host)
    )


async def origin_note(
    *, owner: AbstractBaseUser, session_id: object, headers: Mapping[str, str], where: str
) -> None:
    """After a request's own write (which created its session if new): record where the
    session runs, as `headers` say, unless this process has already noted it. A session whose
    repository and machine are both known costs a lookup, not even reading the headers."""
    if not isinstance(session_id, str) or not session_id:
        return
    known = _noted.get(session_id)
    if known is not None and known.repository and known.host:
        return
    origin = origin_from_headers(headers, where=where)
    if _is_noted(session_id, origin):
        return
    await write(origin_record, owner=owner, session_id=session_id, origin=origin)


@dataclass(frozen=True)
class OriginNote:
    """The `origin_note` an agent request takes once its own write is stored."""

    owner: AbstractBaseUser
    session_id: object
    headers: Mapping[str, str]
    where: str

    async def __call__(self) -> None:
        await origin_note(
            owner=self.owner, session_id=self.session_id, headers=self.headers, where=self.where
        )


# The note of the hook being handled, when its endpoint lets a held request take it early: a
# plan or permission request held for a person notes where its session runs as its wait
# begins (`held_origin_noted`), so the board shows it at once and the answer, when it comes,
# waits behind no write.
_held_request_origin: ContextVar[OriginNote | None] = ContextVar(
    "held_request_origin", default=None
)


@contextmanager
def noted_as_held(note: OriginNote) -> Iterator[None]:
    """Within: a request that is held notes `note` as it starts waiting. The endpoint notes it
    again afterwards (nothing to write by then, or the request was not held)."""
    token = _held_request_origin.set(note)
    try:
        yield
    finally:
        _held_request_origin.reset(token)


async def held_origin_noted() -> None:
    """Note where the held request's session runs (see `noted_as_held`); a failure is logged,
    never the request's."""
    note = _held_request_origin.get()
    if note is None:
        return
    try:
        await note()
    except Exception:
        logger.exception("could not note where session %s runs", note.session_id)


async def origin_note_from(request: HttpRequest, *, owner: Any, session_id: str) -> None:
    """`origin_note` for an API request."""
    await origin_note(owner=owner, session_id=session_id, headers=request.headers, where="API")


def origin_record(*, owner: AbstractBaseUser, session_id: str, origin: Origin) -> Changes | None:
    """Record the session's repository, host and project where they are not known yet. A
    repository or host that differs from the one recorded is ignored (logged): the first
    report sticks. Its outcome says whether anything changed (and the session's row and header
    show it)."""
    session = Session.objects.filter(session_id=session_id, owner=owner).first()
    if session is None:
        return Outcome(False)
    fields: list[str] = []
    if origin.repository and origin.repository != session.repository:
        if session.repository:
            logger.warning("session %s: ignored repository %r, it reported %r first",
                           session_id, origin.repository, session.repository)  # fmt: skip
        else:
            session.repository = origin.repository
            fields.append("repository")
    if origin.host and origin.host != session.host:
        if session.host:
            logger.warning("session %s: ignored host %r, it reported %r first",
                           session_id, origin.host, session.host)  # fmt: skip
        else:
            session.host = origin.host
            fields.append("host")
    project = _project_for(session, owner)
    if project is not None and project.pk != session.project_record_id:
        session.project_record = project
        session.project_name = project.name
        # Who sees the session follows its project's team (`dashboard.core.visibility`).
        session.team_id = project.team_id
        fields += ["project_record", "project_name", "team"]
    with _noted_lock:
        if len(_noted) >= NOTED_SIZE:
            _noted.clear()
        _noted[session_id] = Origin(repository=session.repository, host=session.host)
    if not fields:
        return Outcome(False)
    session.save(update_fields=fields)
    return Outcome(True, Changes(sessions={session.pk}))


def _project_for(session: Session, owner: AbstractBaseUser) -> Project | None:
    """The session's project: its repository's, else its folder's (a folder project gives way
    to the repository's once one is reported); None while it has neither."""
    if session.repository:
        repository = session.repository
        key, name = repository, repository_project_name(repository)
    elif session.project_record_id is not None:
        return None
    elif session.cwd:
        (key, name), repository = folder_project_key(session.cwd), ""
    else:
        return None
    return project_for_key(key=key, name=name, repository=repository, owner=owner)


def project_for_key(
    *, key: str, name: str, repository: str = "", owner: AbstractBaseUser | None = None
) -> Project:
    """The project with this key, created on first sight: owned by the team of the person
    whose agent reported it first when they are in exactly one (else by no team, until an
    admin gives it to one)."""
    project = Project.objects.filter(key=key).first()
    if project is not None:
        return project
    teams = (
        list(Membership.objects.filter(user_id=owner.pk).values_list("team_id", flat=True)[:2])
        if owner is not None
        else []
    )
    try:
        with transaction.atomic():
            return Project.objects.create(
                key=key,
                name=name,
                repository=repository,
                team_id=teams[0] if len(teams) == 1 else None,
            )
    except IntegrityError:  # another process created it meanwhile
        return Project.objects.get(key=key)
