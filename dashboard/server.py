"""The server process: daphne, with a stop that answers what it holds.

Agents wait on Agentboard: a held ExitPlanMode hook, a Stop hook in its continuation countdown,
a socket waiting for a decision. On SIGTERM or Ctrl+C the server

1. stops listening, so new requests go to another process (or fail fast and the agent falls
   back to its terminal);
2. lets every waiter go at once: held plans answer `{}` and show as expired, countdowns are
   cancelled and their Stop hooks answer `{}`, agent and browser sockets are closed with 1012
   ("service restart") so their clients reconnect to the next server;
3. waits up to AGENTBOARD_STOP_GRACE_SECONDS for the HTTP requests still in flight;
4. stops the event loop, then finishes the writer's queue and closes its database connection.

A second signal stops at once (exit status 128 + the signal's number), whatever still runs.

It also sets two bounds plain daphne leaves open:

- A request must arrive whole (request line, headers, body) within
  AGENTBOARD_REQUEST_ARRIVAL_SECONDS of its first byte, or it is answered 408 and closed.
  Twisted's only guard is an idle timeout that every byte restarts, so a client trickling its
  headers could otherwise hold a connection for ever, and a thousand of them a thousand.
- A socket message larger than daphne's limit (1 MiB) closes the socket with 1009 "message too
  big" and a reason; autobahn's default is to drop the TCP connection, and the client never
  learns why.

Import this module only when serving: importing daphne's server installs Twisted's asyncio
reactor.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import signal
import threading
from pathlib import Path
from typing import Any

from daphne.server import Server
from daphne.ws_protocol import WebSocketProtocol
from django.conf import settings
from twisted.internet import reactor
from twisted.internet.interfaces import IDelayedCall
from twisted.web import http

from dashboard.live.boards import WIRE
from dashboard.live.watch import watch_for

logger = logging.getLogger(__name__)

SERVICE_RESTART = 1012
RESTART_REASON = b"The server is stopping; reconnect."


_TIMEOUT_TEXT = b"The request took too long to arrive; send it again, whole.\n"
REQUEST_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Connection: close\r\n"
    b"Content-Length: %d\r\n"
    b"\r\n%s" % (len(_TIMEOUT_TEXT), _TIMEOUT_TEXT)
)


# How long a connection answered 408 may go on sending before it is cut off.
LINGER_SECONDS = 2.0


class ArrivalDeadlineChannel(http.HTTPChannel):
    """Twisted's HTTP/1.1 channel, with a deadline for each request to arrive whole."""

    def __init__(self) -> None:
        super().__init__()
        self.arrival_deadline: IDelayedCall | None = None
        # From the last byte of a request until its response is done: bytes that arrive then
        # are the next request, waiting its turn, not a slow one.
        self.answering = False
        self.timed_out = False
        self.linger: IDelayedCall | None = None

    def connectionMade(self) -> None:
        # Twisted parses the body of every form POST into `request.args`, and reads the
        # Content-Type of every other POST to find out (40 µs a hook, on the event loop).
        # Daphne hands the raw body to Django, which parses forms itself: nothing reads those.
        self.requestFactory = functools.partial(self.requestFactory, parsePOSTFormSubmission=False)
        super().connectionMade()

    def dataReceived(self, data: bytes) -> None:
        if self.timed_out:
            return  # the rest of a request already answered 408: read and drop it
        if data and self.arrival_deadline is None and not self.answering:
            self.arrival_deadline = self.callLater(
                settings.AGENTBOARD_REQUEST_ARRIVAL_SECONDS, self._too_slow
            )
        super().dataReceived(data)

    def allContentReceived(self) -> None:
        self._cancel_deadline()
        self.answering = True
        super().allContentReceived()

    def requestDone(self, request: http.Request) -> None:
        self.answering = False
        super().requestDone(request)

    def connectionLost(self, reason: object) -> None:
        self._cancel_deadline()
        if self.linger is not None and self.linger.active():
            self.linger.cancel()
        super().connectionLost(reason)

    def _too_slow(self) -> None:
        self.arrival_deadline = None
        if self.transport is None or self.answering:
            return
        self.timed_out = True
        self.transport.write(REQUEST_TIMEOUT_RESPONSE)
        # Close only our side, and keep reading (and dropping) what the client still sends
        # until it closes too. Closing both sides with its bytes unread would answer them with
        # a TCP reset, which can wipe the 408 from the client's buffer before it reads it.
        self.transport.loseWriteConnection()
        self.linger = self.callLater(LINGER_SECONDS, self.transport.abortConnection)

    def _cancel_deadline(self) -> None:
        if self.arrival_deadline is not None and self.arrival_deadline.active():
            self.arrival_deadline.cancel()
        self.arrival_deadline = None


async def load_lazy_parts() -> None:
    """Load now what serving would load on first use: every template of the project compiled,
    the channel layer, the templates' context processors and date formats, the message and
    session storage classes, and the HTTP client of the notification worker with its
    connection machinery."""
    from channels.layers import get_channel_layer
    from django.template import engines
    from django.template.loader import get_template
    from django.utils import formats
    from django.utils.module_loading import import_string

    from dashboard.notifications.senders import new_client

    for folder in settings.TEMPLATES[0]["DIRS"]:
        for path in sorted(Path(folder).rglob("*.html")):
            get_template(path.relative_to(folder).as_posix())
    get_channel_layer()
    engines["django"].engine.template_context_processors  # noqa: B018 (imports them)
    formats.get_format("DATETIME_FORMAT")
    import_string(settings.MESSAGE_STORAGE)
    import_string(settings.SESSION_SERIALIZER)
    async with new_client():
        pass


class AgentboardServer(Server):
    def run(self) -> None:
        self.ports: list[Any] = []
        self.stopping = False
        reactor.callWhenRunning(self._catch_stop_signals)
        # Server.run builds its factories, listens and starts the reactor, all in one call:
        # they are bounded once the reactor runs, before it accepts the first connection.
        reactor.callWhenRunning(self._bound)
        reactor.callWhenRunning(self._sweep_idle_sessions)
        reactor.callWhenRunning(self._deliver_notifications)
        reactor.callWhenRunning(self._keep_audit_head)
        reactor.callWhenRunning(self._freeze_startup_heap)
        super().run()

    def _bound(self) -> None:
        self.http_factory.protocol = ArrivalDeadlineChannel
        # No compression (autobahn's default, said here because `dashboard.live.boards` writes
        # frames prepared once for many sockets, which compression would make per socket).
        self.ws_factory.setProtocolOptions(
            failByDrop=False, perMessageCompressionAccept=lambda offers: None
        )

    def _freeze_startup_heap(self) -> None:
        self.warming = asyncio.get_event_loop().create_task(self._warm_then_freeze())

    async def _warm_then_freeze(self) -> None:
        """Take what the start loaded (Django, the URL and template machinery, modules) out of
        the garbage collector's full collections. A full collection walks every object the
        process holds: over a started server that took 100 ms, stopping every thread (hooks
        waiting on their commit, live updates, decisions) a few times a minute. What is
        frozen is never freed, and none of it would be.

        What the first requests, renders and background tasks would load later is loaded
        first (`load_lazy_parts`): left to load while serving, it stayed in every full
        collection, which then took 15 to 30 ms every few seconds under load."""
        try:
            await load_lazy_parts()
        except Exception:
            logger.warning("could not load every part ahead; serving anyway", exc_info=True)
        gc.collect()
        gc.freeze()

    def _sweep_idle_sessions(self) -> None:
        from dashboard.activity.services import activity_prune_forever
        from dashboard.board.concerns import sweep_concerns_forever
        from dashboard.board.idle import end_idle_sessions_forever, expire_orphans_forever

        # Kept on the server: the event loop holds only a weak reference to its tasks.
        self.idle_sweep = asyncio.get_event_loop().create_task(end_idle_sessions_forever())
        self.orphan_sweep = asyncio.get_event_loop().create_task(expire_orphans_forever())
        self.activity_pruning = asyncio.get_event_loop().create_task(activity_prune_forever())
        self.concern_sweep = asyncio.get_event_loop().create_task(sweep_concerns_forever())

    def _deliver_notifications(self) -> None:
        from dashboard.notifications.worker import deliver_forever

        self.notifier = asyncio.get_event_loop().create_task(deliver_forever())

    def _keep_audit_head(self) -> None:
        from dashboard.audit.chain import audit_head_forever

        self.audit_head = asyncio.get_event_loop().create_task(audit_head_forever())

    def create_application(self, protocol: Any, scope: dict[str, Any]) -> Any:
        if isinstance(protocol, WebSocketProtocol):
            # Board sockets write live fragments, framed once, straight to their connection.
            scope[WIRE] = protocol
        return super().create_application(protocol, scope)

    def listen_success(self, port: Any) -> None:
        self.ports.append(port)
        super().listen_success(port)

    def _catch_stop_signals(self) -> None:
        # Twisted's own handlers stop the reactor at once, cutting held requests off.
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_stop_signal)
            signal.signal(signal.SIGINT, self._on_stop_signal)

    def _on_stop_signal(self, signum: int, frame: object) -> None:
        if self.stopping:
            # At once, whatever runs: a page still rendering in a worker thread would keep a
            # normal exit waiting for it. What was committed stays; what was not is rolled back.
            logger.warning("Stopping at once (a second signal): requests still running end now.")
            for handler in logging.getLogger().handlers:
                handler.flush()
            os._exit(128 + signum)
        self.stopping = True
        reactor.callFromThread(self._stop_gracefully)

    def _stop_gracefully(self) -> None:
        logger.info("Stopping: answering held requests, then exiting.")
        for port in self.ports:
            port.stopListening()
        task = asyncio.get_event_loop().create_task(self._drain())
        task.add_done_callback(lambda _: reactor.stop() if reactor.running else None)

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.AGENTBOARD_STOP_GRACE_SECONDS
        watch_for(loop).stop()
        self.idle_sweep.cancel()
        self.orphan_sweep.cancel()
        self.activity_pruning.cancel()
        self.concern_sweep.cancel()
        self.audit_head.cancel()
        # Deliveries being sent are freed for another process (or the next start) to send.
        self.notifier.cancel()
        for protocol in list(self.connections):
            if isinstance(protocol, WebSocketProtocol):
                # sendClose() refuses 1012 from an application; the frame is valid. Browsers (htmx)
                # reconnect on 1012 "service restart", not on 1001.
                protocol.sendCloseFrame(code=SERVICE_RESTART, reasonUtf8=RESTART_REASON)
        while loop.time() < deadline and self._http_in_flight():
            await asyncio.sleep(0.02)
        # Let the last answers leave their buffers before the loop stops.
        await asyncio.sleep(0.05)

    def _http_in_flight(self) -> int:
        return sum(
            1
            for protocol, details in list(self.connections.items())
            if not isinstance(protocol, WebSocketProtocol)
            and details.get("application_instance") is not None
            and not details["application_instance"].done()
        )
