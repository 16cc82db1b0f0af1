"""Graceful shutdown primitives: a signal-safe stop flag, a seed gate, a grace deadline.

In: a ``Stop`` that the CLI's SIGINT/SIGTERM handler sets (or, in a worker
process, ``workers.PipeStop``, set by the parent through a pipe). Out: seeds stop flowing to the
pipeline at once (``seed_gate``), and the shard is cancelled when the grace ends
(``run_until_stopped``). Used by ``shards.py``; the pipeline itself knows
nothing about signals.

Example::

    stop = Stop()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set(signum))
    await run_until_stopped(
        run_shard(seed_gate(seeds, stop), cfg, output),
        stop.is_set,
        cfg.run.shutdown_grace,
    )
"""

from __future__ import annotations

import asyncio
import signal
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

__all__ = ["POLL", "Stop", "StopFlag", "run_until_stopped", "seed_gate"]

T = TypeVar("T")  # the seed type (any: the gate only passes them on)

POLL = 0.1  # seconds between looks at a stop flag (a signal handler sets no asyncio event)


class StopFlag(Protocol):
    """What is polled for a stop: a ``Stop``, or a worker's ``workers.PipeStop``."""

    def is_set(self) -> bool:
        """True once a stop was asked for."""
        ...


class Stop:
    """A stop request, safe to set from a signal handler (a plain attribute, no lock).

    ``signum`` is the first signal that asked (None until one did). Everything
    that must react polls ``is_set()``: the seed feeders, the grace watchers and
    the parent's result loop.
    """

    __slots__ = ("signum",)

    def __init__(self) -> None:
        self.signum: int | None = None

    def set(self, signum: int = signal.SIGINT) -> None:
        """Ask the run to stop (the first caller's ``signum`` is kept)."""
        if self.signum is None:
            self.signum = signum

    def is_set(self) -> bool:
        """True once a stop was asked for."""
        return self.signum is not None


async def seed_gate(seeds: AsyncIterator[T], stop: StopFlag) -> AsyncIterator[T]:
    """Yield from ``seeds`` while ``stop`` is not set; none once it is.

    So that a stop request leaves no host half-started: ``run_shard`` asks its
    ``Admission`` (admission.py) whether a host may start *before* it takes the next
    seed, and starts every seed it takes, so the check here sits right before a host
    would start. How many hosts are in flight is the admission's alone.
    """
    async for seed in seeds:
        if stop.is_set():
            return
        yield seed


async def run_until_stopped(
    shard: Awaitable[None], stopped: Callable[[], bool], grace: float
) -> None:
    """Run ``shard``; once ``stopped()`` turns true, give it ``grace`` seconds, then cancel it.

    The shard ends by itself when its seeds run out (the gate stops them); the
    hosts in flight then finish, or are cancelled here at the end of the grace.
    A cancelled host's records already sent are kept; its report is not sent.
    """
    task = asyncio.ensure_future(shard)
    try:
        while not task.done() and not stopped():
            await asyncio.wait({task}, timeout=POLL)
        if not task.done():
            await asyncio.wait({task}, timeout=grace)
    except asyncio.CancelledError:
        # We are cancelled ourselves: cancel the shard, let it clean up, pass it on.
        task.cancel()
        await asyncio.wait({task})
        raise
    if not task.done():
        task.cancel()  # the grace is over
        await asyncio.wait({task})
    if not task.cancelled():
        task.result()  # re-raises a bug in the shard
