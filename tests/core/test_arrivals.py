"""The arrival gate of held hooks: a few at a time do their arrival work, the next one comes
in as soon as one has arrived (or ended), in arrival order, and a request that fails lets
the next one in too."""

from __future__ import annotations

import asyncio

import pytest

from dashboard.core.loops import Arrivals


async def settled() -> None:
    """Let every task that can run do so (a few turns of the loop, no wall time)."""
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_few_at_a_time_and_the_next_comes_in_once_one_has_arrived():
    arrivals = Arrivals(2)
    inside: list[int] = []
    most = 0
    release = {n: asyncio.Event() for n in range(5)}
    decided = asyncio.Event()
    order: list[int] = []

    async def request(n: int) -> None:
        nonlocal most
        async with arrivals.arriving():
            order.append(n)
            inside.append(n)
            most = max(most, len(inside))
            await release[n].wait()
            inside.remove(n)
            arrivals.arrived()  # now it only waits: it costs the others nothing
            await decided.wait()

    tasks = [asyncio.create_task(request(n)) for n in range(5)]
    await settled()
    assert order == [0, 1]
    release[1].set()
    await settled()
    assert order == [0, 1, 2]  # in as soon as 1 arrived, while 1 still waits
    for event in release.values():
        event.set()
    await settled()
    assert order == [0, 1, 2, 3, 4]
    decided.set()
    await asyncio.gather(*tasks)
    assert most == 2


async def test_a_request_that_fails_or_never_says_it_arrived_lets_the_next_in():
    arrivals = Arrivals(1)

    async def failing() -> None:
        async with arrivals.arriving():
            raise ValueError("refused")

    async def quiet() -> str:
        async with arrivals.arriving():
            return "answered at once"

    with pytest.raises(ValueError):
        await failing()
    assert await asyncio.wait_for(quiet(), 1) == "answered at once"
    assert await asyncio.wait_for(quiet(), 1) == "answered at once"


async def test_arrived_outside_the_gate_does_nothing():
    Arrivals(1).arrived()
