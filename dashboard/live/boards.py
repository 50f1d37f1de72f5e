"""The browser board sockets of this process, and the one channel their live fragments come by.

A board socket does not join the channel layer groups it shows: the process does, once, with a
channel of its own, and hands each fragment that arrives to every socket of that group here.
A fragment sent to a group of a hundred boards is then one channel layer message per process
instead of a hundred, and one loop here instead of a hundred consumer wake-ups.

Under our server (`dashboard.server`) each board socket also holds its own websocket connection
(`WIRE`, in its scope): a fragment for a group is then framed once and the same bytes written
to each connection, instead of passing through each socket's consumer and being framed anew for
every browser. Elsewhere (tests' communicators, another ASGI server) it goes through the
consumer.

A socket that has just joined gets its snapshot first: fragments that arrive while the snapshot
is being read wait until it is sent, so a page never shows something older than its snapshot.

The registry holds only this process's own sockets; what they show comes from the database.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from channels.layers import get_channel_layer

from dashboard.core.loops import PerLoop, keep, listen

logger = logging.getLogger(__name__)


# The close code that tells a browser to connect again at once (htmx's websocket extension
# reconnects on it).
CLOSE_RECONNECT = 1012

# The scope key under which `dashboard.server` hands a websocket consumer its own connection.
WIRE = "agentboard.wire"


class Wire(Protocol):
    """A websocket connection as autobahn has it under daphne (which never compresses)."""

    STATE_OPEN: int
    state: int
    factory: Any  # frames messages in advance: prepareMessage(payload).payloadHybi
    transport: Any  # Twisted's: write(bytes)


class BoardSocket(Protocol):
    # The socket's own connection when the server gives it one, else None.
    wire: Wire | None

    async def send(self, text_data: str | None = None) -> None: ...

    async def close(self, code: int | bool | None = None, reason: str | None = None) -> None: ...


class Boards:
    """The board sockets of one event loop; every method runs on that loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.members: dict[str, set[BoardSocket]] = {}
        # Sockets whose snapshot is not sent yet, with the fragments that came meanwhile.
        self.held: dict[BoardSocket, list[str]] = {}
        self._channel: str | None = None
        # Joining and leaving a group of the channel layer happen one at a time, so that a
        # group left by its last socket and joined again by a new one stays joined.
        self._membership = asyncio.Lock()
        self._listener: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def join(self, socket: BoardSocket, groups: list[str]) -> None:
        """Deliver the fragments of `groups` to `socket` from now on, holding them until
        `snapshot_sent(socket)`."""
        self.held[socket] = []
        layer = get_channel_layer()
        async with self._membership:
            if self._channel is None:
                self._channel = await layer.new_channel()
            for group in groups:
                members = self.members.setdefault(group, set())
                if not members:
                    await asyncio.shield(layer.group_add(group, self._channel))
                members.add(socket)
        if self._listener is None or self._listener.done():
            self._listener = self.loop.create_task(self._listen(self._channel))

    async def snapshot_sent(self, socket: BoardSocket) -> None:
        """The socket shows its snapshot: what came meanwhile goes out now, then all as it
        comes."""
        while held := self.held.get(socket):
            self.held[socket] = []
            for html in held:
                await _send(socket, html)
        self.held.pop(socket, None)

    def leave(self, socket: BoardSocket, groups: list[str]) -> None:
        self.held.pop(socket, None)
        for group in groups:
            members = self.members.get(group)
            if members is None:
                continue
            members.discard(socket)
            if not members:
                del self.members[group]
                keep(self._tasks, self.loop.create_task(self._leave_group(group)))
        if not self.members and self._listener is not None:
            # Nobody watches here any more: no task is left running (a test's loop may close).
            self._listener.cancel()
            keep(self._tasks, self._listener)  # until its cancellation has run its course
            self._listener = None

    async def close(self, timeout: float = 5) -> None:
        """Stop listening and wait up to `timeout` for this registry's tasks (a group left, the
        listener's read cancelled): for a loop that is about to close."""
        if self._listener is not None:
            self._listener.cancel()
            keep(self._tasks, self._listener)
            self._listener = None
        running = [task for task in self._tasks if task is not asyncio.current_task()]
        if running:
            await asyncio.wait(running, timeout=timeout)

    async def deliver(self, group: str, html: str) -> None:
        frame = None  # framed on first use, then written as it is to every connection
        for socket in list(self.members.get(group, ())):
            held = self.held.get(socket)
            if held is not None:
                held.append(html)
                continue
            wire = socket.wire
            if wire is None:
                await _send(socket, html)
                continue
            if frame is None:
                frame = wire.factory.prepareMessage(html.encode()).payloadHybi
            _write(wire, frame)

    async def _leave_group(self, group: str) -> None:
        async with self._membership:
            if group not in self.members and self._channel is not None:
                await get_channel_layer().group_discard(group, self._channel)

    async def _listen(self, channel: str) -> None:
        await listen(
            channel,
            self._heard,
            failing="boards miss live fragments until they reconnect",
            retry_seconds=1,
        )

    async def _heard(self, message: dict[str, Any]) -> None:
        group, html = message.get("group"), message.get("html")
        if message.get("type") == "board.fragment" and isinstance(html, str) and group:
            await self.deliver(group, html)
        elif message.get("type") == "board.reconnect":
            await self.reconnect_all()

    async def reconnect_all(self) -> None:
        """Who sees what changed: close every board socket of this process with "service
        restart", which browsers answer by connecting again (and reading afresh what they may
        see)."""
        sockets = set().union(*self.members.values()) if self.members else set()
        for socket in sockets:
            try:
                await socket.close(code=CLOSE_RECONNECT)
            except Exception:
                logger.warning("could not close a board socket to reconnect", exc_info=True)


async def _send(socket: BoardSocket, html: str) -> None:
    try:
        await socket.send(text_data=html)
    except Exception:
        # One socket's failure must not keep the fragment from the others.
        logger.warning("could not send a live fragment to a board", exc_info=True)


def write_text(wire: Wire, text: str) -> None:
    """Send one text message on a connection now, without a turn of the event loop."""
    _write(wire, wire.factory.prepareMessage(text.encode()).payloadHybi)


def _write(wire: Wire, frame: bytes) -> None:
    # A socket closing meanwhile has not left its groups yet: it is skipped, as daphne skips
    # what a closed socket's consumer still sends. The frame goes to the connection's transport
    # as it is: autobahn's own send would format a debug line per socket, logged or not.
    if wire.state != wire.STATE_OPEN:
        return
    transport = wire.transport
    try:
        if _nothing_queued(transport):
            # Sent now, in one system call. Twisted's write would queue it, ask the event loop
            # to watch the socket, send it at the loop's next turn and stop watching: three
            # system calls and two turns' callbacks per socket, for each of a hundred boards.
            sent = transport.writeSomeData(frame)
            if isinstance(sent, int):
                if sent == len(frame):
                    return
                frame = frame[sent:]  # the rest as Twisted sends: when the socket can take it
        transport.write(frame)
    except Exception:
        logger.warning("could not send a live fragment to a board", exc_info=True)


def _nothing_queued(transport: Any) -> bool:
    """Whether a plain TCP transport of Twisted's has nothing waiting to be sent, so that a
    frame written to its socket now keeps its order. Anything else (TLS, a connection closing,
    another server's transport) is written the usual way."""
    return (
        getattr(transport, "TLS", True) is False
        and bool(getattr(transport, "connected", False))
        and getattr(transport, "_writeDisconnected", True) is False
        and getattr(transport, "dataBuffer", b"-") == b""
        and getattr(transport, "_tempDataBuffer", None) == []
        and callable(getattr(transport, "writeSomeData", None))
    )


# The board sockets of a loop: boards_for(loop), or of the running loop.
boards_for = PerLoop(Boards)
