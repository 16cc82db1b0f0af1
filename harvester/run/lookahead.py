"""The shard's lookahead: robots.txt of upcoming seeds read ahead, long chains admitted first.

In: the shard's seeds (an async iterator, in input order), a ``start(seed)`` that starts
a ``crawl.probe.RobotsProbe`` for a seed (or returns None: nothing to read ahead, e.g. a
sitemap seed or a host the state file remembers), ``run.lookahead`` (seeds held, at
most), ``run.lookahead_results`` (seeds probed and not taken, at most) and
``run.lookahead_probes`` (probes in flight, at most). Out: an async iterator of
``Looked`` (the seed and its probe, or None), taken one by one as the shard's admission
lets hosts start (``admission.admitted``).

Why: a host whose politeness chain is long (a robots.txt Crawl-delay times many
sitemaps) sets the end of a run when it is admitted late; nothing else can then use the
machine. Its robots.txt says so in one small request, so that request is made while the
host waits in the window, and among the hosts looked at the one with the longest
predicted chain (``RobotsProbe.chain``) is admitted first: longest processing time
first (LPT). The request is not repeated: the host worker awaits the probe's discovery.

Which seeds are probed: the oldest not probed (the front: what the admission takes
next), and, while the admission leaves probes done untaken (it is at its ceiling, so
the front is ahead of it), also the newest (the back: scouts, at most half the probes).
The back is where a chain learned late costs most: in input order it would start last.

The order of taking, when the admission lets one host start:

1. a host whose probe failed (dead, refused, 5xx robots.txt): it ends at once, and it
   frees its place in the window;
2. else the host with the longest predicted chain among the probes done (ties: the
   probe done first, so a host starts soon after its robots.txt, its connection and
   DNS answer still fresh), or a seed without a probe (chain 0);
3. else, no probe done yet, the oldest seed of the window, its probe still running
   (the host awaits it): the lookahead never makes the admission wait.

Bounds: at most ``window`` seeds held (a ``Seed`` each), of which at most ``results``
probed (a probe with its robots.txt, at most ``fetch.max_robots_bytes``), at most
``probes`` probes in flight, those of hosts taken and still awaiting theirs included:
so a run's start (the admission's first hosts all discovering at once) asks DNS and the
network no more than without a lookahead (a burst of twice as many lookups made a
loopback DNS server time out); scouts start only once a probe is done and untaken, never
in that first burst. A stop (``stopped()``) ends the iterator at once; ``close`` cancels
the probes of seeds never taken and gives back their slots.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import itertools
import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harvester.crawl.probe import RobotsProbe

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from harvester.config.run import RunConfig
    from harvester.crawl.discovery import Discovered
    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.scheduler import Scheduler
    from harvester.crawl.seed import Seed
    from harvester.crawl.settings import HostSettings
    from harvester.state.ledger import LedgerReader

__all__ = ["Lookahead", "Looked", "looking_ahead", "passthrough"]


@dataclass(frozen=True, slots=True)
class Looked:
    """A seed taken from the lookahead, with the probe of its discovery (None: none)."""

    seed: Seed
    probe: RobotsProbe | None = None

    @property
    def found(self) -> Awaitable[Discovered] | None:
        """The host's discovery under way (``HostWorker.run``'s ``found``), or None."""
        return self.probe.task if self.probe is not None else None

    def close(self) -> None:
        """The host ended: its probe gives back its hold on the host's slot."""
        if self.probe is not None:
            self.probe.close()


@dataclass(slots=True, eq=False)
class _Entry:
    """A seed held in the window: its input order, its probe once started."""

    order: int
    seed: Seed
    probe: RobotsProbe | None = None
    taken: bool = False
    scout: bool = False  # its probe was started from the back (module docstring)


async def passthrough(seeds: AsyncIterator[Seed]) -> AsyncIterator[Looked]:
    """The seeds as they come, without probes (``run.lookahead`` = 0)."""
    async for seed in seeds:
        yield Looked(seed)


class Lookahead:
    """Seeds in longest-predicted-chain-first order over a bounded window (module docstring).

    Use as ``async with Lookahead(...) as looked: async for item in looked: ...``.
    """

    def __init__(
        self,
        seeds: AsyncIterator[Seed],
        start: Callable[[Seed], RobotsProbe | None],
        *,
        window: int,
        probes: int,
        results: int | None = None,
        stopped: Callable[[], bool] | None = None,
    ) -> None:
        """``results``: seeds probed and not taken, at most (None: ``window``)."""
        results = window if results is None else results
        if window < 1 or probes < 1 or results < 1:
            raise ValueError("a lookahead needs a window, results and probes of at least 1")
        self._source = aiter(seeds)
        self._start = start
        self._window = window
        self._probes = probes
        self._results = results
        self._stopped = stopped
        self._pending: deque[_Entry] = deque()  # input order; taken ones dropped lazily
        self._unprobed: deque[_Entry] = deque()  # not started yet, input order
        self._ready: list[tuple[float, int, _Entry]] = []  # heap: (-priority, done, entry)
        self._held = 0  # entries not taken
        self._probed = 0  # entries not taken whose probe started (running or done)
        self._probing = 0  # probes in flight, of hosts taken and awaiting theirs included
        self._scouts = 0  # of those, started from the back
        self._done = itertools.count()  # the order in which entries became ready
        self._exhausted = False
        self._order = itertools.count()
        self._arrived = asyncio.Event()  # a seed came in, a probe ended, or the source ended
        self._space = asyncio.Event()  # a seed was taken: the window has room
        self._filler: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Lookahead:
        self._filler = asyncio.create_task(self._fill())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __aiter__(self) -> Lookahead:
        return self

    async def __anext__(self) -> Looked:
        """The next seed to start (see the module docstring for the order)."""
        while True:
            if self._stopped is not None and self._stopped():
                raise StopAsyncIteration
            entry = self._pick()
            if entry is not None:
                return self._take(entry)
            if self._exhausted and not self._held:
                if self._filler is not None and self._filler.done():
                    self._filler.result()  # the source's error, if it raised
                raise StopAsyncIteration
            self._arrived.clear()
            await self._arrived.wait()

    async def close(self) -> None:
        """Stop reading seeds; cancel the probes of the seeds never taken."""
        if self._filler is not None and not self._filler.done():
            self._filler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._filler
        for entry in self._pending:
            if not entry.taken and entry.probe is not None:
                entry.probe.close()
            entry.taken = True
        self._pending.clear()
        self._unprobed.clear()
        self._ready.clear()

    # -- the window ------------------------------------------------------------------

    async def _fill(self) -> None:
        """Read seeds while the window has room; start their probes."""
        try:
            while True:
                while self._held >= self._window:
                    self._space.clear()
                    await self._space.wait()
                seed = await anext(self._source, None)
                if seed is None:
                    return
                entry = _Entry(next(self._order), seed)
                self._pending.append(entry)
                self._unprobed.append(entry)
                self._held += 1
                self._start_probes()
                self._arrived.set()
        finally:
            self._exhausted = True
            self._arrived.set()

    def _start_probes(self) -> None:
        unprobed = self._unprobed
        while self._probing < self._probes and self._probed < self._results and unprobed:
            scout = self._scouting()
            entry = unprobed.pop() if scout else unprobed.popleft()
            if entry.taken:
                continue
            entry.probe = self._start(entry.seed)
            if entry.probe is None:
                self._queue(entry, 0.0)
                continue
            self._probed += 1
            self._probing += 1
            if scout:
                entry.scout = True
                self._scouts += 1
            entry.probe.task.add_done_callback(functools.partial(self._probe_ended, entry))

    def _scouting(self) -> bool:
        """Does the next probe go to the back? Only while a probe done waits untaken (the
        admission is at its ceiling: the front is ahead of it) and half the probes at most
        are scouts (module docstring)."""
        return bool(self._ready) and self._scouts < self._probes // 2 and len(self._unprobed) > 1

    def _probe_ended(self, entry: _Entry, _task: object) -> None:
        self._probing -= 1  # taken or not: its request is over
        if entry.scout:
            self._scouts -= 1
        if not entry.taken:
            probe = entry.probe
            assert probe is not None
            self._queue(entry, math.inf if probe.failed() else probe.chain())
        self._start_probes()

    def _queue(self, entry: _Entry, priority: float) -> None:
        heapq.heappush(self._ready, (-priority, next(self._done), entry))
        self._arrived.set()

    def _pick(self) -> _Entry | None:
        """The entry to take now: the ready one of highest priority, else the oldest."""
        while self._ready:
            entry = heapq.heappop(self._ready)[2]
            if not entry.taken:
                return entry
        while self._pending:
            entry = self._pending.popleft()
            if not entry.taken:
                return entry
        return None

    def _take(self, entry: _Entry) -> Looked:
        entry.taken = True
        self._held -= 1
        probe = entry.probe
        entry.probe = None  # the host owns it now (and its robots.txt)
        pending = self._pending
        while pending and pending[0].taken:  # (an old seed not taken keeps those behind)
            pending.popleft()
        self._space.set()
        if probe is not None:
            self._probed -= 1
            self._start_probes()  # (its place among the results is free)
        return Looked(entry.seed, probe)


@contextlib.asynccontextmanager
async def looking_ahead(
    seeds: AsyncIterator[Seed],
    cfg: RunConfig,
    scheduler: Scheduler,
    fetcher: Fetcher,
    settings: HostSettings,
    ledger: LedgerReader | None,
    stopped: Callable[[], bool] | None,
) -> AsyncIterator[AsyncIterator[Looked]]:
    """The shard's seeds through a ``Lookahead`` (``run.lookahead`` > 0), else as they come.

    A seed gets a probe unless it is a sitemap URL (no discovery) or a host the state
    file remembers (``recall`` may need no request at all; a deferred host none).
    """
    if not cfg.lookahead:
        yield passthrough(seeds)
        return

    def start(seed: Seed) -> RobotsProbe | None:
        host, sitemap = seed.host, seed.sitemap
        if sitemap is not None or (ledger is not None and ledger.host(host).host_id is not None):
            return None
        tdmrep = settings.policy.tdmrep  # (a chain counts tdmrep.json's interval too)
        return RobotsProbe(seed, fetcher, scheduler, settings.discovery, tdmrep=tdmrep)

    async with Lookahead(
        seeds,
        start,
        window=cfg.lookahead,
        probes=cfg.lookahead_probes,
        results=cfg.lookahead_results,
        stopped=stopped,
    ) as looked:
        yield looked
