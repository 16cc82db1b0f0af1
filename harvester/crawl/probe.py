"""A host's discovery read ahead of its admission: robots.txt early, and its predicted chain.

In: a ``Seed``, the shard's ``Fetcher`` and ``Scheduler`` and the ``DiscoverySettings``.
Out: a ``RobotsProbe`` whose ``task`` is the host's discovery (``discovery.discover``:
robots.txt, with its https→http fallback) started now, and, once it is done, ``chain``:
the seconds the host's politeness alone will need for the requests still to come
(``HostSlot.interval`` x (tdmrep.json + sitemaps)). ``run.lookahead`` (run/lookahead.py)
starts probes of upcoming seeds and admits the hosts with the longest chains first
(docs/scheduling.md).

Politeness stays exact: the probe takes the host's ``HostSlot`` from the shard's
scheduler and holds it until ``close``, so the request it makes is the host's first one
through that slot (rate, Crawl-delay, "answered" all carry over) and the host worker,
which acquires the same slot, never repeats it: it awaits ``task`` instead of
discovering (``HostWorker(found=...)``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from harvester.crawl.discovery import discover

if TYPE_CHECKING:
    from harvester.crawl.discovery import Discovered
    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.scheduler import Scheduler
    from harvester.crawl.seed import Seed
    from harvester.crawl.settings import DiscoverySettings

__all__ = ["RobotsProbe", "predicted_chain"]


def predicted_chain(found: Discovered, interval: float, *, tdmrep: bool = False) -> float:
    """Seconds of politeness a discovered host still needs: ``interval`` (its slot's
    spacing between two requests) times the requests it will make at least: the sitemaps
    robots.txt announced (else the first fallback location: one), and with ``tdmrep``
    (``policy.tdmrep``) its tdmrep.json, asked under the same slot unless robots.txt
    was a bot wall (crawl/tdmrep.py)."""
    asks_tdmrep = tdmrep and found.wall.robots is None
    return interval * (max(1, len(found.refs)) + asks_tdmrep)


class RobotsProbe:
    """One seed's discovery, started ahead of its admission (see the module docstring).

    ``task`` raises what ``discover`` raises (a classified ``FetchError``), for the host
    worker to report. ``close()`` gives the slot back (and cancels a discovery nobody
    will await); call it once, when the host ended or will never start.
    """

    __slots__ = ("_closed", "_scheduler", "_tdmrep", "seed", "slot", "task")

    def __init__(
        self,
        seed: Seed,
        fetcher: Fetcher,
        scheduler: Scheduler,
        settings: DiscoverySettings,
        *,
        tdmrep: bool = False,
    ) -> None:
        """``tdmrep``: the host will ask tdmrep.json (``policy.tdmrep``; the chain counts it)."""
        self.seed = seed
        self._tdmrep = tdmrep
        self._scheduler = scheduler
        self._closed = False
        self.slot = scheduler.acquire(seed.host)
        self.task: asyncio.Task[Discovered] = asyncio.ensure_future(
            discover(seed, fetcher, self.slot, settings)
        )

    def done(self) -> bool:
        """Has the discovery ended (found, or failed)?"""
        return self.task.done()

    def failed(self) -> bool:
        """Did the discovery end in a failure (the host will end at once when started)?"""
        return self.task.done() and (self.task.cancelled() or self.task.exception() is not None)

    def chain(self) -> float:
        """The predicted chain in seconds (``predicted_chain``); 0 until done or if failed."""
        if not self.task.done() or self.failed():
            return 0.0
        return predicted_chain(self.task.result(), self.slot.interval, tdmrep=self._tdmrep)

    def close(self) -> None:
        """Give the host's slot back; a discovery still running is cancelled."""
        if self._closed:
            return
        self._closed = True
        if not self.task.done():
            self.task.cancel()
        self.task.add_done_callback(_retrieve)  # no "exception never retrieved" at exit
        self._scheduler.release(self.seed.host)


def _retrieve(task: asyncio.Task[Discovered]) -> None:
    if not task.cancelled():
        task.exception()
