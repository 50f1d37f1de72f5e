"""The channel layer of the embedded default (one process, no Redis).

Channels' in-memory layer sweeps out expired messages and group memberships on every
`receive` and `group_send`, walking every channel and every membership of the process each
time. With a thousand agent sockets connected that is thousands of steps for each message any
socket receives, and a fan-out to N browsers costs N times N. Expiry is measured in minutes
(messages) and a day (memberships), so here the same sweep runs at most once a second.
"""

from __future__ import annotations

import time

from channels.layers import InMemoryChannelLayer as ChannelsInMemoryChannelLayer

SWEEP_SECONDS = 1.0


class InMemoryChannelLayer(ChannelsInMemoryChannelLayer):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._next_sweep = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP_SECONDS
        super()._clean_expired()
