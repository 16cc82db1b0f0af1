"""Late attempts: fail fast on first contact, then try once more, patiently (issue 51).

In: a host whose harvest ended on a first-contact timeout (``HostReport.first_contact_timeout``:
its connect, or the wait for its first response byte, ran out; the fetcher gives up
on such a host at once, which keeps a run with dead hosts fast) and found nothing.
Out: the host harvested once more, late, by a second fetcher whose first-byte wait (and
connect wait: TCP and TLS handshake) is ``fetch.late_first_byte_timeout``; after an
https connect timeout of a bare domain, over plain http. Its report is the host's
report, with ``first_contact_timeout`` kept, ``recovered_late`` (the late attempt
reached the host) and ``late_seconds``.

Why a pool beside the admission: a late attempt spends its time waiting (on a CMS
that builds its sitemap on request, on a firewall), not computing, so it does not
count against the shard's hosts in flight: the host's admission is released when its
first attempt ends, and the late attempt starts at once, in one of the shard's late
slots (``fetch.late_slots``; by default ``late_slots``: a share of the descriptor
limit, at most ``LATE_SLOTS``). It has its own session and connections (one per
slot), so its long waits never hold a connection a first attempt needs. A run's wall
thus grows by about one late timeout, not by one per slow host, as long as the slots
outnumber the hosts that fail first contact within one late timeout (hundreds on a
20,000-domain list: the bound is sized for that, and a waiting slot costs a socket
and a parked coroutine, not CPU).

Example::

    async with LatePool(cfg, resolver) as late:
        worker = await first(seed)
        if (again := late.wanted(seed, worker.report)) is not None:
            worker = await late.retry(again, worker.report, make)
"""

from __future__ import annotations

import asyncio
import dataclasses
import resource
from typing import TYPE_CHECKING

from harvester.crawl.fetch import Fetcher

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from types import TracebackType

    from aiohttp.abc import AbstractResolver

    from harvester.config import Config
    from harvester.crawl.host import HostWorker
    from harvester.crawl.report import HostReport
    from harvester.crawl.seed import Seed

__all__ = ["LATE_SLOTS", "LatePool", "late_slots"]

# Late attempts of a shard at once, at most. Each mostly waits (its first byte, up to the
# late timeout): the bound keeps their sockets and memory small beside the admission's
# hosts, and is what a run's end waits on when many hosts fail first contact (each slot
# serves one host per late timeout), so it is well above the hosts failing per timeout.
LATE_SLOTS = 512
# The share of the descriptor limit the late slots may take (1/16: 64 at a soft limit
# of 1,024, the bound this replaced; the admission's hosts keep the rest).
_NOFILE_SHARE = 16


def late_slots(nofile: int | None = None) -> int:
    """A shard's late-attempt slots for the soft descriptor limit ``nofile`` (read when
    None): ``nofile // 16``, at least 8, at most ``LATE_SLOTS``.

    >>> late_slots(1024), late_slots(4096), late_slots(65536), late_slots(64)
    (64, 256, 512, 8)
    """
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if nofile == resource.RLIM_INFINITY:
            nofile = 1 << 20
    return max(8, min(LATE_SLOTS, nofile // _NOFILE_SHARE))


class LatePool:
    """A shard's late attempts: ``wanted`` says whether (and how) a host is tried again,
    ``retry`` runs that attempt in one of ``slots`` slots (``fetch.late_slots``, or
    ``late_slots()`` for 0).

    ``cfg`` is the run's config (``fetch.late_first_byte_timeout`` 0: never wanted);
    ``resolver`` as the shard's fetcher's (tests map names to loopback; not closed here).
    """

    def __init__(self, cfg: Config, resolver: AbstractResolver | None = None) -> None:
        fetch = cfg.fetch
        self.slots = fetch.late_slots or late_slots()
        self._fetcher: Fetcher | None = None
        if fetch.late_first_byte_timeout > 0:
            patient = dataclasses.replace(
                fetch,
                # Patient on the connect too (TCP and TLS handshake): on a loaded machine
                # (its own, or the site's) handshakes take longer than connect_timeout for
                # a while, and an attempt that gives up as fast as the first one meets the
                # same wall and loses the host.
                connect_timeout=max(fetch.connect_timeout, fetch.late_first_byte_timeout),
                first_byte_timeout=fetch.late_first_byte_timeout,
                # A site slow to its first byte is as slow on each file: as patient there.
                read_timeout=max(fetch.read_timeout, fetch.late_first_byte_timeout),
                # One connection per slot: a slot waits on its own socket, and a
                # connection bound below the slots would queue late attempts there.
                max_connections=self.slots,
            )
            self._fetcher = Fetcher(patient, resolver=resolver, hosts=cfg.politeness)
        self._slots = asyncio.Semaphore(self.slots)
        self.started = 0  # late attempts begun (tests, debugging)

    async def __aenter__(self) -> LatePool:
        if self._fetcher is not None:
            await self._fetcher.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fetcher is not None:
            await self._fetcher.__aexit__(exc_type, exc, tb)

    def wanted(
        self, seed: Seed, report: HostReport, due: Callable[[], bool] | None = None
    ) -> Seed | None:
        """The seed of the host's late attempt, or None when it gets none.

        Wanted when its first contact timed out and nothing of it was read (no URL, no
        sitemap: a late attempt starts the host over, so nothing may be emitted twice),
        it did not ask to be left alone (``deferred``), and it is ``due`` (the state's
        backoff after failed late attempts, ``LateAttempts.due``; None: always,
        without a state file). After a connect timeout on
        https, a bare domain's late attempt is over http (old sites behind a firewall
        that drops 443); otherwise it is the same seed, with the patient first-byte wait.
        """
        if self._fetcher is None or report.first_contact_timeout is None:
            return None
        if report.urls or report.sitemaps_fetched or report.deferred:
            return None
        if due is not None and not due():
            return None
        https = seed.origin.startswith("https://")
        if report.first_contact_timeout == "connect" and https and not seed.explicit_scheme:
            origin = "http://" + seed.origin.removeprefix("https://")
            return dataclasses.replace(seed, origin=origin, explicit_scheme=True)
        return seed

    async def retry(
        self,
        seed: Seed,
        first: HostReport,
        run: Callable[[Seed, Fetcher], Awaitable[HostWorker]],
    ) -> HostWorker:
        """Run the late attempt of ``seed`` (``run`` harvests it with the given fetcher
        and returns its finished worker); its report takes over the first one's fields
        ``first_contact_timeout`` and ``seconds`` (added), and says ``recovered_late``."""
        assert self._fetcher is not None  # (wanted() said yes)
        async with self._slots:
            self.started += 1
            worker = await run(seed, self._fetcher)
        report = worker.report
        # Reached: the late attempt met no first-contact timeout of its own, or read URLs.
        report.recovered_late = report.first_contact_timeout is None or report.urls > 0
        report.first_contact_timeout = first.first_contact_timeout
        report.late_seconds = report.seconds
        report.seconds = round(first.seconds + report.seconds, 3)
        if worker.incremental is not None:  # failed: the next one waits (issue 53)
            worker.incremental.late.tried(report.recovered_late)
        return worker
