"""Shutdown primitives: the stop flag, the seed gate and the grace deadline."""

from __future__ import annotations

import asyncio
import signal
from typing import TYPE_CHECKING

import pytest

from harvester.run.shutdown import Stop, run_until_stopped, seed_gate

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


def test_stop_keeps_the_first_signal() -> None:
    stop = Stop()
    assert not stop.is_set()
    stop.set(signal.SIGTERM)
    stop.set(signal.SIGINT)
    assert stop.is_set()
    assert stop.signum == signal.SIGTERM


async def _numbers(n: int) -> AsyncIterator[int]:
    for i in range(n):
        yield i


async def test_the_gate_hands_seeds_on_until_a_stop_and_counts_no_host() -> None:
    # Issue 46 item 3: the hosts in flight are bounded in one place, the shard's
    # Admission; the gate only checks the stop, however many hosts have not reported.
    stop = Stop()
    source = seed_gate(_numbers(10), stop)
    assert [await anext(source) for _ in range(5)] == [0, 1, 2, 3, 4]
    stop.set()
    with pytest.raises(StopAsyncIteration):
        await anext(source)  # a stop ends the seeds


async def test_run_until_stopped_lets_the_shard_finish_within_the_grace() -> None:
    stop = Stop()
    finished = False

    async def shard() -> None:
        nonlocal finished
        stop.set()
        await asyncio.sleep(0.05)
        finished = True

    await run_until_stopped(shard(), stop.is_set, grace=5.0)
    assert finished


async def test_run_until_stopped_cancels_at_the_end_of_the_grace() -> None:
    stop = Stop()
    cancelled = False

    async def shard() -> None:
        nonlocal cancelled
        stop.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled = True
            raise

    loop = asyncio.get_running_loop()
    start = loop.time()
    await run_until_stopped(shard(), stop.is_set, grace=0.1)
    assert cancelled  # it did not run its 60 s out
    assert loop.time() - start >= 0.1  # the grace was given first


async def test_run_until_stopped_reraises_a_bug() -> None:
    async def shard() -> None:
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        await run_until_stopped(shard(), lambda: False, grace=1.0)
