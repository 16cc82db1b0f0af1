"""One host admission for every shard run on one event loop.

In: the shards that start and end on the loop (``LoopAdmission.joined``, in the
loop's thread), each with its config and its fetcher. Out: the ``Admission`` and
its ``changed`` event they all admit hosts through, sampled by one ``watch``.

Why: a distributed worker runs its shards on one loop (harvester.distributed.occupancy),
a new one beside the previous ones' stragglers. The admission measures the loop and
the process (CPU, lag, memory), which the shards share, so one admission, as in a
pool worker whose hosts all come from one shard: a host ending in any shard lets a
host of any shard start, and a shard starting beside others finds the ceiling that
the process learned instead of ramping up again from ``START`` (per-shard
admissions each restarted at 64 and grew from there, and the worker's hosts in
flight, which set its throughput at a politeness rate, stayed a fraction of the pool's).
The admission outlives the shards (kept for the next one); its watcher runs while
any shard does, and counts the connections queued on every live shard's fetcher.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from harvester.run.admission import Admission, for_run, host_limit, stop_watching, watch

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from harvester.config import Config
    from harvester.crawl.fetch import Fetcher

__all__ = ["LoopAdmission"]


class LoopAdmission:
    """The admission of one event loop's shards (create and use it in the loop's thread)."""

    def __init__(self) -> None:
        self.admission: Admission | None = None
        self.changed = asyncio.Event()
        self._fetchers: list[Fetcher] = []
        self._watcher: asyncio.Task[None] | None = None
        self._bounds: tuple[int, int, float, float] | None = None

    @contextlib.asynccontextmanager
    async def joined(self, cfg: Config, fetcher: Fetcher) -> AsyncIterator[Admission]:
        """The shared admission while one shard runs. Its bounds are those of the
        config it was made with, made anew from a shard's whose bounds differ once no
        shard runs (a later run of other settings on a long-lived cluster)."""
        bounds = (host_limit(cfg), cfg.run.memory_budget, cfg.run.max_loop_lag, cfg.run.max_cpu)
        if self.admission is None or (not self._fetchers and bounds != self._bounds):
            self._bounds = bounds
            self.admission = for_run(cfg, asyncio.get_running_loop().time)
        self._fetchers.append(fetcher)
        if self._watcher is None:
            self._watcher = asyncio.create_task(
                watch(self.admission, self.changed, queued=self._queued)
            )
        try:
            yield self.admission
        finally:
            self._fetchers.remove(fetcher)
            if not self._fetchers and self._watcher is not None:
                watcher, self._watcher = self._watcher, None
                await stop_watching(watcher)

    def _queued(self) -> int:
        return sum(f.queued for f in self._fetchers)
