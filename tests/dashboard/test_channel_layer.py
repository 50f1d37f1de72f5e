"""The embedded default's channel layer: channels' in-memory layer whose expiry sweep runs at
most once a second instead of on every message."""

from __future__ import annotations

import asyncio
import os

import pytest
from channels.layers import InMemoryChannelLayer as ChannelsInMemoryChannelLayer
from channels.layers import get_channel_layer

from dashboard.live import channel_layer
from dashboard.live.channel_layer import InMemoryChannelLayer


@pytest.mark.skipif(
    bool(os.environ.get("REDIS_URL")), reason="With REDIS_URL set the layer is channels_redis."
)
def test_the_embedded_default_uses_it():
    assert type(get_channel_layer()) is InMemoryChannelLayer


async def test_a_fan_out_to_many_sockets_sweeps_once(monkeypatch):
    layer = InMemoryChannelLayer()
    sweeps = []
    sweep = ChannelsInMemoryChannelLayer._clean_expired

    def counting(self) -> None:
        sweeps.append(1)
        sweep(self)

    monkeypatch.setattr(ChannelsInMemoryChannelLayer, "_clean_expired", counting)
    browsers = [await layer.new_channel() for _ in range(200)]
    for name in browsers:
        await layer.group_add("board", name)

    for n in range(5):
        await layer.group_send("board", {"type": "board.fragment", "html": f"<p>{n}</p>"})
        received = [await layer.receive(name) for name in browsers]
        assert {message["html"] for message in received} == {f"<p>{n}</p>"}

    # 5 group sends and 1,000 receives: the stock layer sweeps 1,005 times, each over 200
    # channels and memberships.
    assert len(sweeps) == 1


async def test_messages_nobody_reads_still_expire(monkeypatch):
    layer = InMemoryChannelLayer(expiry=0.05)
    monkeypatch.setattr(channel_layer, "SWEEP_SECONDS", 0.1)
    gone = await layer.new_channel()
    await layer.group_add("board", gone)
    await layer.group_send("board", {"type": "board.fragment", "html": "<p>old</p>"})

    await asyncio.sleep(0.15)
    await layer.group_send("board", {"type": "board.fragment", "html": "<p>new</p>"})

    # The stale message was swept out (and its reader with it, as channels does): the queue
    # holds nothing older than the sweep.
    assert gone not in layer.groups.get("board", {})
    assert all(
        message["html"] != "<p>old</p>"
        for queue in layer.channels.values()
        for _, message in queue._queue
    )
