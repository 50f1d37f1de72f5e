"""The daphne server `manage.py serve` runs, with two bounds plain daphne leaves open.

- A request must arrive whole (request line, headers, body) within
  AGENTBOARD_REQUEST_ARRIVAL_SECONDS of its first byte, or it is answered 408 and closed.
  Twisted's only guard is an idle timeout that every byte restarts, so a client trickling its
  headers could otherwise hold a connection for ever, and a thousand of them a thousand.
- A socket message larger than daphne's limit (1 MiB) closes the socket with 1009 "message too
  big" and a reason; autobahn's default is to drop the TCP connection, and the client never
  learns why.

Import this module only to serve: daphne installs its reactor when imported.
"""

from __future__ import annotations

from daphne.cli import CommandLineInterface
from daphne.server import Server
from django.conf import settings
from twisted.internet import reactor
from twisted.internet.interfaces import IDelayedCall
from twisted.web import http

_TIMEOUT_TEXT = b"The request took too long to arrive; send it again, whole.\n"
REQUEST_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Connection: close\r\n"
    b"Content-Length: %d\r\n"
    b"\r\n%s" % (len(_TIMEOUT_TEXT), _TIMEOUT_TEXT)
)


class ArrivalDeadlineChannel(http.HTTPChannel):
    """Twisted's HTTP/1.1 channel, with a deadline for each request to arrive whole."""

    def __init__(self) -> None:
        super().__init__()
        self.arrival_deadline: IDelayedCall | None = None
        # From the last byte of a request until its response is done: bytes that arrive then
        # are the next request, waiting its turn, not a slow one.
        self.answering = False

    def dataReceived(self, data: bytes) -> None:
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
        super().connectionLost(reason)

    def _too_slow(self) -> None:
        self.arrival_deadline = None
        if self.transport is not None and not self.answering:
            self.transport.write(REQUEST_TIMEOUT_RESPONSE)
            # Twisted's own timeout path: close, and abort a client that stops reading.
            self.timeoutConnection()

    def _cancel_deadline(self) -> None:
        if self.arrival_deadline is not None and self.arrival_deadline.active():
            self.arrival_deadline.cancel()
        self.arrival_deadline = None


class BoundedServer(Server):
    def run(self) -> None:
        # Server.run builds its factories, listens and starts the reactor, all in one call:
        # they are adjusted once the reactor runs, before it accepts the first connection.
        reactor.callWhenRunning(self._bound)
        super().run()

    def _bound(self) -> None:
        self.http_factory.protocol = ArrivalDeadlineChannel
        self.ws_factory.setProtocolOptions(failByDrop=False)


class BoundedCommandLineInterface(CommandLineInterface):
    server_class = BoundedServer
