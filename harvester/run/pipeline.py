"""Pipeline wiring for one shard: a set of hosts harvested by one event loop.

Data flow (one shard = one process = one loop; ``shards.py`` runs N of them):

1. seeds (an async iterator, read lazily) → the **feeder** asks the shard's
   ``Admission`` (admission.py) whether another host may start, waits until it
   may, and only then takes the next ``Seed`` and starts a host task for it. No
   host queue: a seed taken is a host started (so ``seed_gate``'s stop check
   sits right before the start).
2. Each host task runs ``HostWorker``: discovery (robots.txt) → per-host
   frontier → fetch (``Fetcher``, paced by the host's ``HostSlot`` from the
   ``Scheduler``) → decompress → sniff → parse → normalize → per-host dedupe →
   records; then it releases its admission. A host whose first contact timed out
   is then tried once more, patiently, outside the admission (``late.py``).
3. Record batches (``RecordBatch``, up to 512 records, flushed at each
   sitemap's end, as ``UrlBatch.flush`` made them) and finished hosts (``HostDone``)
   go to the shard's ``ShardOutput``, its only way out: the writer (in this process,
   or through a worker's pipe) writes them, the Python API yields them.

Bounds: hosts in flight (``Admission``: at most ``run.hosts_in_flight``, 0 =
what the descriptor limit allows, fewer while RSS is over ``run.memory_budget``,
the loop lags more than ``run.max_loop_lag`` or the CPU is busier than
``run.max_cpu``), the global connection limit (``fetch.max_connections``) and
per-host concurrency and rate (exact: a host lives in one task of one shard).
``watch`` samples RSS, lag and CPU every ``POLL``.

Why it cannot deadlock: a host's frontier is its own (index children never go
back through a shared queue); the feeder waits only on the admission, which
every host task releases in ``finally`` and which always admits a host when
none is in flight, and on the seed source; host tasks wait only on the network,
their politeness and the output, whose consumer never waits on hosts. The first
unexpected exception (a bug, not a ``HarvesterError``) cancels the whole TaskGroup.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from harvester.config import Config
from harvester.crawl.batch import RecordBatch
from harvester.crawl.fetch import Fetcher
from harvester.crawl.host import HostWorker
from harvester.crawl.scheduler import Scheduler
from harvester.crawl.settings import HostSettings
from harvester.errors import InputError
from harvester.run.admission import Admission, admitted, for_run, stop_watching, watch
from harvester.run.late import LatePool
from harvester.run.lookahead import looking_ahead
from harvester.run.seeds import iter_seeds
from harvester.state.ledger import Incremental, LedgerReader
from harvester.urls.crosshost import CrossHostTracker

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterable

    from aiohttp.abc import AbstractResolver

    from harvester.crawl.discovery import Discovered
    from harvester.crawl.seed import Seed
    from harvester.run.lookahead import Looked
    from harvester.run.loopadmission import LoopAdmission
    from harvester.state.memory import HostState

__all__ = ["HostDone", "Incremental", "Kept", "ShardOutput", "harvest", "run_shard"]

logger = logging.getLogger(__name__)
# Seeds read per turn of the event loop: one a turn held the lookahead's window to the pace
# of the loop's turns (about that of the admission), so it never read ahead.
_SEEDS_PER_TURN = 64


@dataclass(frozen=True, slots=True)
class HostDone:
    """A host finished; ``report`` is its ``HostReport.as_dict()``, ``state`` its update."""

    report: dict[str, Any]
    state: HostState | None = None


class ShardOutput(Protocol):
    """Where a shard's results go, in the order its hosts produce them.

    Implemented by the writer of a one-worker run (``shards``), a worker process's
    outbox (``workers``), ``harvest``'s queue and ``Kept``. A host waits while
    ``records`` does: that is the shard's backpressure.
    """

    async def records(self, batch: RecordBatch) -> None:
        """A batch of a host's records (as ``UrlBatch.flush`` made it)."""

    async def host_done(self, done: HostDone) -> None:
        """A host finished; every batch of its records came before."""


class Kept:
    """A ``ShardOutput`` that keeps everything, in lists (``harvester tree``, tests)."""

    def __init__(self) -> None:
        self.batches: list[RecordBatch] = []
        self.hosts: list[HostDone] = []

    async def records(self, batch: RecordBatch) -> None:
        """Keep the batch."""
        self.batches.append(batch)

    async def host_done(self, done: HostDone) -> None:
        """Keep the finished host."""
        self.hosts.append(done)


async def run_shard(
    seeds: AsyncIterator[Seed],
    cfg: Config,
    out: ShardOutput,
    *,
    resolver: AbstractResolver | None = None,
    incremental: Incremental | None = None,
    encoded: bool = False,
    ready: Callable[[], Awaitable[object]] | None = None,
    blocked: Callable[[], float] | None = None,
    shared: LoopAdmission | None = None,
    stopped: Callable[[], bool] | None = None,
) -> None:
    """Harvest every seed of ``seeds``; deliver record batches and finished hosts to ``out``.

    ``encoded``: ``out`` writes JSON Lines, so a ``RecordBatch`` may carry its records
    already encoded (``data``; ``RecordBatch.encoded()``). ``ready``: awaited before each
    body chunk is parsed; it returns when the output can take more (a slow consumer holds
    the hosts before parsing, not after). ``blocked``: seconds so far that the output was
    behind (``Results.blocked``); the admission holds, then shrinks, the hosts in flight
    while it is. ``shared``: the loop's one admission of its shards (``loopadmission``; a
    distributed worker's), used instead of the shard's own. ``stopped``: the stop flag.
    """
    ledger = LedgerReader(incremental.path, incremental.run_id) if incremental else None
    emit_mode = incremental.emit if incremental else "all"
    changed = shared.changed if shared is not None else asyncio.Event()  # host end, ceiling
    scheduler = Scheduler(cfg.politeness)
    settings = HostSettings.of(cfg)  # read (and compiled) once, shared by the shard's hosts

    run_host = _host_runner(settings, scheduler, out, ledger, emit_mode, encoded, ready)

    async def harvest_host(item: Looked, fetcher: Fetcher) -> None:
        try:
            host = await run_host(item.seed, fetcher, item.found)
            due = host.incremental.late.due if host.incremental is not None else None
            if (again := late.wanted(item.seed, host.report, due)) is None:
                await out.host_done(HostDone(host.report.as_dict(), host.state))
                return
        finally:
            item.close()  # (its probe's hold on the host's slot)
            admission.released()
            changed.set()
        # A first contact that timed out: once more, patiently, outside the admission.
        host = await late.retry(again, host.report, run_host)
        await out.host_done(HostDone(host.report.as_dict(), host.state))

    fetcher = Fetcher(cfg.fetch, resolver=resolver, hosts=cfg.politeness)
    late = LatePool(cfg, resolver)
    async with _admission(cfg, fetcher, changed, blocked, shared) as admission:
        try:
            looked = looking_ahead(seeds, cfg.run, scheduler, fetcher, settings, ledger, stopped)
            async with fetcher, late, asyncio.TaskGroup() as tg, looked as source:
                async for item in admitted(source, admission, changed):  # the feeder
                    tg.create_task(harvest_host(item, fetcher))  # a host (admitted() counted)
        finally:
            logger.debug("shard done: %r", admission)
            if ledger is not None:
                ledger.close()


def _host_runner(
    settings: HostSettings,
    scheduler: Scheduler,
    out: ShardOutput,
    ledger: LedgerReader | None,
    emit_mode: str,
    encoded: bool,
    ready: Callable[[], Awaitable[object]] | None,
) -> Callable[..., Awaitable[HostWorker]]:
    """How the shard harvests one seed with a fetcher (the shard's, or the late pool's)
    and, from the lookahead, its discovery's outcome (None: discover it now): the finished
    ``HostWorker`` (its report, its state update)."""

    async def run_host(
        seed: Seed, fetcher: Fetcher, found: Awaitable[Discovered] | None = None
    ) -> HostWorker:
        host = HostWorker(
            seed,
            settings,
            fetcher,
            scheduler,
            out.records,
            ledger=ledger,
            emit_mode=emit_mode,
            encoded=encoded,
            ready=ready,
        )
        await host.run(found)
        return host

    return run_host


@contextlib.asynccontextmanager
async def _admission(
    cfg: Config,
    fetcher: Fetcher,
    changed: asyncio.Event,
    blocked: Callable[[], float] | None,
    shared: LoopAdmission | None,
) -> AsyncIterator[Admission]:
    """The shard's admission while it runs: the loop's (``shared``), or its own, watched."""
    if shared is not None:
        async with shared.joined(cfg, fetcher) as admission:
            yield admission
        return
    admission = for_run(cfg, asyncio.get_running_loop().time)
    watcher = asyncio.create_task(
        watch(admission, changed, blocked=blocked, queued=lambda: fetcher.queued)
    )
    try:
        yield admission
    finally:
        await stop_watching(watcher)


async def aiter_seeds(
    lines: Iterable[str], on_invalid: Callable[[InputError], None] | None = None
) -> AsyncIterator[Seed]:
    """Seeds from input lines, lazily; invalid lines go to ``on_invalid`` (never fatal)."""
    for count, item in enumerate(iter_seeds(lines), 1):
        if isinstance(item, InputError):
            if on_invalid is not None:
                on_invalid(item)
            continue
        yield item
        if not count % _SEEDS_PER_TURN:
            await asyncio.sleep(0)  # a long run of seeds must not starve the workers


class _Queued(asyncio.Queue["RecordBatch | HostDone | None"]):
    """``harvest``'s ``ShardOutput``: a bounded queue its consumer drains (None: the end)."""

    async def records(self, batch: RecordBatch) -> None:
        await self.put(batch)

    async def host_done(self, done: HostDone) -> None:
        await self.put(done)


async def harvest(
    domains: Iterable[str],
    config: Config | None = None,
    *,
    resolver: AbstractResolver | None = None,
    on_host: Callable[[dict[str, Any]], None] | None = None,
    on_invalid: Callable[[InputError], None] | None = None,
) -> AsyncIterator[dict[str, Any]]:
    """Harvest ``domains`` in this process; yield one record (dict) per URL.

    ``domains`` are input lines as in a domains file (domain, origin, robots.txt
    or sitemap URL). ``on_host`` receives each finished host's report.

    Example::

        async for record in harvest(["example.com"], load_config()):
            print(record["loc"], record["lastmod"])
    """
    cfg = config or Config()
    queue = _Queued(max(1, cfg.run.queue_size))

    async def produce() -> None:
        try:
            await run_shard(aiter_seeds(domains, on_invalid), cfg, queue, resolver=resolver)
        except Exception:
            await queue.put(None)  # wake the consumer; it re-raises via `await task`
            raise
        await queue.put(None)

    task = asyncio.create_task(produce())
    cross = CrossHostTracker(cfg.dedupe)
    try:
        while (item := await queue.get()) is not None:
            if isinstance(item, RecordBatch):
                cross.add(item.host, item.fingerprints)
                for rec in item.records:
                    yield rec
            elif on_host is not None:
                item.report["cross_host_duplicates"] = cross.take(item.report["host"])
                on_host(item.report)
        await task  # re-raise a bug in the pipeline, if any
    finally:
        cross.close()
        if not task.done():
            # The consumer stopped early (break, cancellation): stop the producer too.
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
