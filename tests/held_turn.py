"""What the scripted model servers' turns share: a turn can be held, so the request that took
it gets no answer until the test releases it (a model that stopped answering)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass(kw_only=True)
class HeldTurn:
    # A held turn is answered only once released (`release()`): until then the request that
    # took it stays open with nothing sent back, as with a model that stopped answering.
    gate: threading.Event | None = None
    # Set when a request took the turn (a held one: the CLI is waiting for it).
    taken: threading.Event = field(default_factory=threading.Event, compare=False)

    def hold(self):
        self.gate = threading.Event()
        return self

    def release(self) -> None:
        assert self.gate is not None, "Only a held turn can be released."
        self.gate.set()
