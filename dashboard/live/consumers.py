"""Websocket consumers: the browser board socket and the agent socket."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.template.loader import render_to_string
from django.urls import reverse
from pydantic import ValidationError

from dashboard.board import selectors
from dashboard.core import reader
from dashboard.core.changes import Changes, Outcome
from dashboard.core.edge import RefusedJson, load_json
from dashboard.core.errors import ServiceError, first_error_sentence, pydantic_detail
from dashboard.core.origin import HOST_HEADER, REPOSITORY_HEADER, origin_note
from dashboard.core.security import public_url, scope_header, scope_is_secure
from dashboard.core.services import agent_resolve_for_update, agent_touch, token_owner
from dashboard.core.visibility import audience_of
from dashboard.core.writer import write
from dashboard.live import publisher
from dashboard.live.boards import WIRE, Wire, boards_for, write_text
from dashboard.live.frames import (
    FRAME_ADAPTER,
    FRAME_TYPES,
    ExitPlanModeFrame,
    ExpirePlanFrame,
    PingFrame,
    StepFrame,
    TodoWriteFrame,
    WatchAgentFrame,
    WatchPlanFrame,
)
from dashboard.live.waiting import expire_if_abandoned
from dashboard.live.watch import Waiter, watch_for
from dashboard.models import Client, Session, hash_token
from dashboard.steering.models import Directive
from dashboard.steering.services import messages_take
from planmode import fragments
from planmode.models import Plan
from planmode.selectors import plan_for_owner
from planmode.services import plan_expire, plan_state, plan_submit, plan_watched
from todos import enforcer
from todos.models import TodoRevision
from todos.services import todo_list_replace

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


class Consumer(AsyncWebsocketConsumer):
    """A websocket consumer that does not tidy database connections on every message.

    Channels runs `close_old_connections` in its sync thread before each message it hands a
    consumer, a thread hop per message: with a hundred boards open, a thousand a second just
    to fan out live fragments. Our handlers never touch the database on the event loop; what
    reads or writes goes through `database_sync_to_async` (which tidies around each call), the
    writer or the reading thread, each keeping its own connection in order.
    """

    async def dispatch(self, message: dict[str, Any]) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)


class BoardConsumer(Consumer):
    """Pushes htmx out-of-band fragments to a logged-in browser.

    On every (re)connect it first sends the current state from the database, so a page that
    lost its socket never keeps showing stale cards.
    """

    async def connect(self) -> None:
        # Live fragments are written to this connection directly when the server gives it.
        self.wire: Wire | None = self.scope.get(WIRE)
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.accept()
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        query = parse_qs(self.scope["query_string"].decode())
        session_id = query.get("session", [""])[0]
        # "queue" on the review queue, a plan id on a review page.
        self.plans_page = query.get("plans", [""])[0]
        self.inbox_page = bool(query.get("inbox"))
        # A page that shows only the header's count of what waits (the projects pages).
        self.header_only = bool(query.get("header"))
        # The overview filtered to one kind of agent (`?client=`); any other value lists all.
        client = query.get("client", [""])[0]
        self.client = client if client in Client.values else ""
        # The overview's other filters (`?project=&person=&machine=`): its snapshot is filtered
        # alike (live rows are placed or hidden by the page from their data attributes).
        project = query.get("project", [""])[0]
        self.only = selectors.OverviewFilter(
            client=self.client,
            project=int(project) if project.isdigit() else None,
            person=query.get("person", [""])[0][:150],
            machine=query.get("machine", [""])[0][:255],
        )
        self.session_pk: int | None = None
        # What the viewer sees, and whose waiting things the header (and the inbox) count
        # (`dashboard.core.visibility`); every group joined follows it.
        self.audience = await database_sync_to_async(audience_of)(user)
        header = publisher.header_group(self.audience)
        if self.header_only:
            self.live_groups = [header]
        elif self.inbox_page:
            self.live_groups = [publisher.inbox_group(self.audience), header]
        elif self.plans_page:
            self.live_groups = [publisher.plans_group(self.audience), header]
            if self.plans_page.isdigit():
                if not await self._sees_plan(int(self.plans_page)):
                    await self.accept()
                    await self.close(code=CLOSE_NOT_FOUND)
                    return
                self.live_groups.append(publisher.plan_review_group(int(self.plans_page)))
        elif session_id:
            self.session_pk = await self._session_pk(session_id)
            if self.session_pk is None:
                await self.accept()
                await self.close(code=CLOSE_NOT_FOUND)
                return
            self.live_groups = [publisher.session_group(self.session_pk), header]
        else:
            self.live_groups = [*publisher.overview_groups(self.audience), header]
        # Told to reconnect when who sees what changes.
        self.live_groups.append(publisher.EVERY_BROWSER)
        # Fragments reach it through the process's own channel (`dashboard.live.boards`).
        boards = boards_for()
        await boards.join(self, self.live_groups)
        await self.accept()
        await self.send(text_data=await self._snapshot())
        await boards.snapshot_sent(self)

    async def disconnect(self, code: int) -> None:
        boards_for().leave(self, getattr(self, "live_groups", []))

    @database_sync_to_async
    def _session_pk(self, session_id: str) -> int | None:
        """The session, if the viewer sees it (else as if it did not exist)."""
        sessions = Session.objects.filter(self.audience.sees(), session_id=session_id)
        return sessions.values_list("pk", flat=True).first()

    @database_sync_to_async
    def _sees_plan(self, plan_pk: int) -> bool:
        return Plan.objects.filter(self.audience.sees("session__"), pk=plan_pk).exists()

    @database_sync_to_async
    def _snapshot(self) -> str:
        parts = [publisher.render_plans_waiting(self.audience)]
        if self.header_only:
            return "".join(parts)
        if self.inbox_page:
            parts.append(publisher.render_inbox(self.audience))
        elif self.plans_page:
            if self.plans_page.isdigit():
                parts.append(fragments.review_snapshot(int(self.plans_page), self.audience))
            else:
                parts.append(fragments.render_queue(self.audience, oob=True))
        elif self.session_pk is None:
            parts.append(
                render_to_string(
                    "dashboard/_session_list.html",
                    {
                        "summaries": selectors.overview(audience=self.audience, only=self.only),
                        "audience": self.audience,
                        "client": self.client,
                        "only": self.only,
                        "client_label": Client(self.client).label if self.client else "",
                        "oob": True,
                    },
                )
            )
        else:
            session = Session.objects.select_related("owner").get(pk=self.session_pk)
            summary = selectors.session_summaries([session])[0]
            context = {
                "summary": summary,
                "cards": selectors.board_cards(session),
                "history": selectors.session_history(session),
                "oob": True,
            }
            for template in ("_session_header", "_cards", "_history"):
                parts.append(render_to_string(f"dashboard/{template}.html", context))
            parts.append(fragments.render_session_plans(session.pk, oob=True))
            parts.append(
                fragments.render_session_attention(session.pk, oob=True, waits=summary.waits)
            )
        return "".join(parts)


def _bearer_token(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return parse_qs(scope.get("query_string", b"").decode()).get("token", [None])[0]


class AgentConsumer(Consumer):
    """The agent socket: todo writes, plan submission and waiting for a reviewer's decision;
    for the agents it watches (`watch_agent`), the messages the board queues for them."""

    async def connect(self) -> None:
        self.token = _bearer_token(self.scope)
        self.user = await token_owner(self.token)
        # Where its agent runs, said once in the handshake's headers.
        self.origin_headers = {
            header: scope_header(self.scope, header.lower().encode())
            for header in (REPOSITORY_HEADER, HOST_HEADER)
        }
        # The plans this socket waits on, each with its waiter in `dashboard.live.watch`.
        self.watched_plans: dict[int, Waiter] = {}
        self.plans_lock = asyncio.Lock()
        self.tasks: set[asyncio.Task[None]] = set()
        # The agents it speaks for (pk -> (session_id, agent_id)), each in its messages group;
        # pushes are made one at a time, so they go out in the order they were queued.
        self.watched_agents: dict[int, tuple[str, str]] = {}
        self.messages_lock = asyncio.Lock()
        # Its connection, when the server gives it: a decision is then pushed the moment it
        # is heard (`_watch_plan`).
        self.wire: Wire | None = self.scope.get(WIRE)
        await self.accept()
        if self.user is None:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.token_group = publisher.token_group(hash_token(self.token or ""))
        await self.channel_layer.group_add(self.token_group, self.channel_name)

    async def _note_origin(self, session_id: str) -> None:
        await origin_note(
            owner=self.user,
            session_id=session_id,
            headers=self.origin_headers,
            where="agent socket",
        )

    async def token_revoked(self, event: dict[str, Any]) -> None:
        await self._refuse_revoked()

    async def _refuse_revoked(self) -> None:
        self.user = None
        await self.close(code=CLOSE_UNAUTHENTICATED)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.user is None:
            return
        # A token revoked while the socket is open stops working here within the token cache's
        # second, even if the push that closes the socket was lost.
        if await token_owner(self.token) is None:
            await self._refuse_revoked()
            return
        frame_id = None
        try:
            try:
                raw = self._parse(text_data, bytes_data)
            except RefusedJson as refused:
                frame_id = _frame_id(refused.document)
                raise
            frame_id = _frame_id(raw)
            if raw.get("type") not in FRAME_TYPES:
                raise ServiceError(
                    "unknown_frame_type",
                    f"Unknown frame type {str(raw.get('type'))[:40]!r}; "
                    f"expected one of {', '.join(FRAME_TYPES)}.",
                )
            try:
                frame = FRAME_ADAPTER.validate_python(raw)
            except ValidationError as exc:
                detail = pydantic_detail(exc.errors())
                # Pydantic puts the frame type first (["todo_write", "todos", 0]), but the
                # frame has no such key: the path must lead to the field that was sent.
                for item in detail:
                    if item["loc"][:1] == [raw["type"]]:
                        item["loc"] = item["loc"][1:]
                raise ServiceError(
                    "validation_error", first_error_sentence(detail), detail=detail
                ) from None
            await self.handle_frame(frame)
        except ServiceError as error:
            await self._send_json({"type": "error", "id": frame_id, "error": error.as_dict()})
        except Exception:
            logger.exception("agent socket frame failed")
            error = ServiceError(
                "internal_error", "The server failed on this frame; try again.", status=500
            )
            await self._send_json({"type": "error", "id": frame_id, "error": error.as_dict()})

    def _parse(self, text_data: str | None, bytes_data: bytes | None) -> dict[str, Any]:
        if text_data is None:
            raise ServiceError(
                "malformed_json", "Send frames as JSON text, not binary.", status=400
            )
        limit = settings.AGENTBOARD_MAX_BODY_BYTES
        if len(text_data.encode()) > limit:
            raise ServiceError(
                "payload_too_large",
                f"The frame is larger than the {limit} bytes accepted.",
                status=413,
            )
        raw = load_json(text_data, what="frame")
        if not isinstance(raw, dict):
            raise ServiceError(
                "malformed_json", "A frame must be a JSON object with a 'type'.", status=400
            )
        return raw

    async def handle_frame(self, frame: Any) -> None:
        if isinstance(frame, PingFrame):
            await self._send_json({"type": "pong", "id": frame.id})
        elif isinstance(frame, TodoWriteFrame):
            written = await write(
                todo_list_replace,
                owner=self.user,
                session_id=frame.session_id,
                agent_id=frame.agent_id,
                todos=frame.todos,
                source=TodoRevision.Source.SOCKET,
                agent_type=frame.agent_type,
                cwd=frame.cwd,
            )
            await self._note_origin(frame.session_id)
            await self._send_json({"type": "ack", "id": frame.id, "result": written.as_wire()})
        elif isinstance(frame, StepFrame):
            reminder = (await write(_step, owner=self.user, frame=frame)).text
            await self._note_origin(frame.session_id)
            await self._send_json({"type": "ack", "id": frame.id, "result": {"reminder": reminder}})
            if reminder:
                await self._send_json(
                    {
                        "type": "reminder",
                        "session_id": frame.session_id,
                        "agent_id": frame.agent_id,
                        "text": reminder,
                    }
                )
        elif isinstance(frame, WatchAgentFrame):
            await self._watch_agent(frame)
        elif isinstance(frame, ExpirePlanFrame):
            # The agent gave up on it: no plan_decided for it, only this ack.
            self._unwatch_plan(frame.plan_id)
            state = (await write(_expire_plan, owner=self.user, plan_id=frame.plan_id)).value
            await self._send_json({"type": "ack", "id": frame.id, "result": state})
        else:
            await self.handle_plan_frame(frame)

    async def handle_plan_frame(self, frame: ExitPlanModeFrame | WatchPlanFrame) -> None:
        """Ack with the plan's state, then push `plan_decided` once a reviewer decides."""
        if isinstance(frame, ExitPlanModeFrame):
            submitted = await write(
                plan_submit,
                owner=self.user,
                session_id=frame.session_id,
                agent_id=frame.agent_id,
                plan=frame.plan,
                plan_file_path=frame.plan_file_path,
                source=Plan.Source.SOCKET,
                agent_type=frame.agent_type,
            )
            plan_pk = submitted.plan.pk
        else:
            plan_pk = frame.plan_id
        # Held until the ack is sent, so a decision heard meanwhile is pushed after the ack.
        async with self.plans_lock:
            # Subscribe before reading: a decision made in between is then in the state read
            # below or arrives as an event, never lost.
            await self._watch_plan(plan_pk)
            try:
                state = await reader.read(self._plan_state, plan_pk)
            except ServiceError:
                self._unwatch_plan(plan_pk)
                raise
            if state["status"] != "pending":
                self._unwatch_plan(plan_pk)
            elif isinstance(frame, WatchPlanFrame):
                await write(plan_watched, plan_id=plan_pk)
            result = {**state, "review_url": self._review_url(plan_pk)}
            await self._send_json({"type": "ack", "id": frame.id, "result": result})

    async def _watch_agent(self, frame: WatchAgentFrame) -> None:
        """Ack, then push what is already queued for the agent, and each message queued later
        (from any process) the moment its commit is published."""
        agent_pk = (
            await write(
                _watched_agent,
                owner=self.user,
                session_id=frame.session_id,
                agent_id=frame.agent_id,
                agent_type=frame.agent_type,
                cwd=frame.cwd,
            )
        ).value
        await self._note_origin(frame.session_id)
        async with self.messages_lock:
            # In the group before claiming: a message queued in between is claimed below or
            # arrives as an event, never lost.
            if agent_pk not in self.watched_agents:
                await self.channel_layer.group_add(
                    publisher.agent_messages_group(agent_pk), self.channel_name
                )
                self.watched_agents[agent_pk] = (frame.session_id, frame.agent_id)
            result = {"session_id": frame.session_id, "agent_id": frame.agent_id}
            await self._send_json({"type": "ack", "id": frame.id, "result": result})
            await self._push_messages(agent_pk)

    async def agent_messaged(self, event: publisher.AgentMessaged) -> None:
        async with self.messages_lock:
            if event["agent_id"] in self.watched_agents and self.user is not None:
                await self._push_messages(event["agent_id"])

    async def _push_messages(self, agent_pk: int) -> None:
        """Claim what is queued for the agent (each message goes to one socket, once) and
        push it."""
        session_id, agent_id = self.watched_agents[agent_pk]
        claimed = await write(messages_take, agent_pk=agent_pk, via="agent socket")
        for directive in claimed.value:
            await self._send_json(_message_frame(directive, session_id, agent_id))

    async def _plan_decided(self, plan_pk: int, state: dict[str, Any]) -> None:
        async with self.plans_lock:
            if self.watched_plans.pop(plan_pk, None) is None:
                return  # already answered (the ack carried the decision, or pushed before)
            await self._send_json({"type": "plan_decided", "plan": state})

    async def _watch_plan(self, plan_pk: int) -> None:
        if plan_pk in self.watched_plans:
            return
        loop = asyncio.get_running_loop()

        def heard(state: dict[str, Any] | None) -> None:
            # None: the server is stopping; the agent re-watches once it reconnects.
            if state is None:
                return
            if self.wire is not None and not self.plans_lock.locked():
                # No ack is on its way: push it now rather than at the loop's next turn.
                if self.watched_plans.pop(plan_pk, None) is not None:
                    write_text(self.wire, _json_text({"type": "plan_decided", "plan": state}))
            else:
                task = loop.create_task(self._plan_decided(plan_pk, state))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)

        self.watched_plans[plan_pk] = heard
        await watch_for(loop).add(plan_pk, heard)

    def _unwatch_plan(self, plan_pk: int) -> None:
        heard = self.watched_plans.pop(plan_pk, None)
        if heard is not None:
            watch_for().discard(plan_pk, heard)

    async def disconnect(self, code: int) -> None:
        waited = list(getattr(self, "watched_plans", ()))
        for plan_pk in waited:
            self._unwatch_plan(plan_pk)
        # Claude Code kills a waiting command hook without a word: unless its socket comes
        # back for these plans, they expire.
        expire_if_abandoned(waited)
        for agent_pk in getattr(self, "watched_agents", ()):
            await self.channel_layer.group_discard(
                publisher.agent_messages_group(agent_pk), self.channel_name
            )
        if getattr(self, "token_group", None):
            await self.channel_layer.group_discard(self.token_group, self.channel_name)

    def _plan_state(self, plan_pk: int) -> dict:
        return plan_state(plan_for_owner(plan_id=plan_pk, owner=self.user))

    def _review_url(self, plan_pk: int) -> str:
        return public_url(
            reverse("plan-review", args=[plan_pk]),
            host=scope_header(self.scope, b"host"),
            secure=scope_is_secure(self.scope),
        )

    async def _send_json(self, payload: dict) -> None:
        await self.send(text_data=_json_text(payload))


def _frame_id(raw: object) -> str | int | None:
    """The id a frame gave itself, to answer it by (a refused frame too, when it was read)."""
    frame_id = raw.get("id") if isinstance(raw, dict) else None
    return frame_id if isinstance(frame_id, str | int) and not isinstance(frame_id, bool) else None


def _json_text(payload: dict) -> str:
    # Text as it is: escaped, a list in any script but Latin would be sent up to six times its
    # size, and an ack of a list the server accepted could pass the socket's 1 MiB.
    text = json.dumps(payload, ensure_ascii=False)
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate echoed back (e.g. in a frame's id)
        text = json.dumps(payload)
    return text


def _expire_plan(*, owner: object, plan_id: int) -> Outcome[dict]:
    plan_for_owner(plan_id=plan_id, owner=owner)  # 404 unless it is this user's plan
    expired = plan_expire(plan_id=plan_id)
    return Outcome(plan_state(expired.plan), expired.changes)


def _step(*, owner: object, frame: StepFrame) -> enforcer.Injection:
    agent = agent_resolve_for_update(
        owner=owner, session_id=frame.session_id, agent_id=frame.agent_id
    ).agent
    agent_touch(agent=agent, coarse=True)
    return enforcer.on_step(agent=agent, key=frame.key)


def _watched_agent(
    *, owner: object, session_id: str, agent_id: str, agent_type: str, cwd: str
) -> Outcome[int]:
    """The agent a socket speaks for, made known on the board as a todo write would."""
    resolved = agent_resolve_for_update(
        owner=owner, session_id=session_id, agent_id=agent_id, agent_type=agent_type, cwd=cwd
    )
    changes = resolved.changes() if resolved.agent_created else Changes()
    return Outcome(resolved.agent.pk, changes)


def _message_frame(directive: Directive, session_id: str, agent_id: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": directive.pk,
        "session_id": session_id,
        "agent_id": agent_id,
        "text": directive.text,
        "from": directive.created_by_name,
        "sent_at": directive.created_at.isoformat(),
    }
