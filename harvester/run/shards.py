"""Shards: run the pipeline on all cores, with one writer owning the output.

In: the config, the input lines (read lazily), the output path. Out: the JSON
Lines file (written as ``OUT.part`` and renamed when the run completes), a
per-host report file and the run report; returns the ``RunReport``.

Parsing is CPU-bound, so hosts are partitioned by a stable hash of their host
key (``seeds.shard_of``) across ``run.workers`` processes, each running
``pipeline.run_shard`` with its own event loop, session and limiters: a host lives in
exactly one shard, so per-host politeness stays exact. The parent process is the one
writer (``pool.py`` runs the worker processes and drains what they send). Workers
encode records to JSON Lines themselves and send blocks of about 256 KiB, so the
parent only copies bytes into the output file. With one worker the shard runs in the
parent process and writes directly (``_Inline``, its ``ShardOutput``).

Shutdown (``harvester run`` on SIGINT/SIGTERM; ``Stop`` is set by the CLI's
signal handler): no new host is started, hosts in flight get
``run.shutdown_grace`` seconds to finish and are then cancelled, the records
already produced are written, and the output stays ``OUT.part`` with whole
lines only; the report says ``interrupted``. Workers ignore SIGINT (a Ctrl-C
reaches the whole process group): the parent tells them to stop through a
pipe, so they never die mid-write on their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvester.crawl.seed import Seed
from harvester.output.display import Progress
from harvester.output.formats import resolved
from harvester.output.opening import open_output
from harvester.output.report import RunReport
from harvester.output.writer import Writer, close_run, finish_published, unless, writer_error
from harvester.run.pool import run_processes
from harvester.run.runtime import event_loop_runner
from harvester.run.seeds import SeedReader, invalid_line
from harvester.run.shutdown import POLL, Stop, run_until_stopped, seed_gate
from harvester.urls.crosshost import CrossHostTracker

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Coroutine, Iterable

    from aiohttp.abc import AbstractResolver

    from harvester.config import Config
    from harvester.crawl.batch import RecordBatch
    from harvester.run.loopadmission import LoopAdmission
    from harvester.run.pipeline import HostDone
    from harvester.state.ledger import Incremental
    from harvester.state.store import StateStore

# harvester.run.pipeline (aiohttp, lxml) is imported inside the functions that run
# shards, so the parent process, which only dispatches and writes, stays small.

__all__ = ["Beside", "Stop", "run_job"]


@dataclass(frozen=True, slots=True)
class Beside:
    """A one-worker run that shares its event loop with other runs (a distributed
    worker's shards, harvester.distributed.occupancy).

    ``runner`` runs the shard's coroutine on that loop and returns when it ends;
    ``admission`` is the loop's shards' one host admission (``loopadmission.py``). The
    writer is called on that loop, as in a one-worker run: a thread of its own for it
    cost more than it saved (each batch handed over took the GIL from the loop).
    """

    runner: Callable[[Coroutine[Any, Any, None]], None]
    admission: LoopAdmission


def run_job(
    cfg: Config,
    lines: Iterable[str],
    output: str,
    *,
    report_path: str | None = None,
    hosts_path: str | None = None,
    progress: bool | None = None,
    resolver: AbstractResolver | None = None,
    stop: Stop | None = None,
    cross: CrossHostTracker | None = None,
    beside: Beside | None = None,
) -> RunReport:
    """Harvest every host of ``lines`` into ``output``; return the run report.

    ``resolver`` (tests) is only honoured with one worker, in-process. Setting
    ``stop`` ends the run early and gracefully (see the module docstring): the
    report then has ``interrupted`` set and the output stays ``.part``.
    Raises ``RunFailed`` when the run itself fails; per-host failures are in the report.
    ``cross``: the run's cross-host tracker (default: a new one; a distributed shard
    passes one that also logs the fingerprints, see harvester.distributed.fingerprints).
    ``beside`` (one worker only): how the shard runs beside others on one loop (a
    distributed worker's); default: on a new event loop in this thread.
    """
    stop = stop or Stop()
    cfg = resolved(cfg, output)  # the output format, for worker processes that encode for it
    workers = cfg.run.workers or os.cpu_count() or 1
    run = RunReport(workers=workers)
    if hosts_path is None and report_path:
        hosts_path = report_path.removesuffix(".json").removesuffix(".report") + ".hosts.jsonl"
    sink, store, incremental, finished = open_output(cfg, output, run)
    if sink is None:  # a run stopped while publishing, published now: nothing to harvest
        assert store is not None
        return finish_published(run, store, output, report_path, hosts_path)
    seeds = SeedReader(lines, skip=finished)
    cross = cross or CrossHostTracker(cfg.dedupe)
    interval = cfg.state.commit_interval
    writer = Writer(sink, hosts_path, run, Progress(enabled=progress), cross, store, interval)
    complete = interrupted = False
    failure: BaseException | None = None  # what ended the run, the error to report
    try:
        if workers == 1:
            _run_inline(cfg, seeds, writer, resolver, stop, incremental, beside)
        else:
            run_processes(cfg, seeds, writer, workers, stop, incremental)
        interrupted = stop.is_set()
        complete = not interrupted
    except BaseException as exc:
        failure = exc
        interrupted = isinstance(exc, KeyboardInterrupt)
        raise
    finally:
        if finished is not None:
            finished.close()
        paths = (report_path, hosts_path)
        _close(writer, store, seeds, paths, failure, complete=complete, interrupted=interrupted)
    return run


def _close(
    writer: Writer,
    store: StateStore | None,
    seeds: SeedReader,
    paths: tuple[str | None, str | None],
    failure: BaseException | None,
    *,
    complete: bool,
    interrupted: bool,
) -> None:
    """The run's end: its input counted, its report finished, its files closed in their
    order (``writer.close_run``); ``paths``: the run report's and the host report's."""
    run = writer.run
    run.resumed_hosts_skipped = seeds.skipped
    run.input_invalid = seeds.invalid
    run.input_duplicates = seeds.duplicates
    if seeds.exhausted:  # (an interrupted run may not have read all of its input)
        run.hosts_total = seeds.seeds
    # Records written for hosts that never reported (cancelled at the end of a
    # shutdown grace): they are in the output, so they count (0 on a complete run).
    run.urls += writer.pending_urls
    run.finish(complete=complete, interrupted=interrupted)
    # A close that fails after the run failed (the disk that filled up fails every
    # later write too) must not replace the run's error: the first one is the cause.
    with unless(failure):
        close_run(writer, store, run, *paths, complete, interrupted)


# -- one worker, in-process ---------------------------------------------------------


def _run_inline(
    cfg: Config,
    seeds: SeedReader,
    writer: Writer,
    resolver: AbstractResolver | None,
    stop: Stop,
    incremental: Incremental | None = None,
    beside: Beside | None = None,
) -> None:
    from harvester.run.pipeline import run_shard

    writer.run.workers_started = 1
    out = _Inline(writer)

    async def commits() -> None:
        while True:  # (cancelled when the shard ends)
            await asyncio.sleep(POLL)
            writer.tick()

    async def main() -> None:
        ticker = asyncio.create_task(commits())
        try:
            await _shard()
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker

    async def _shard() -> None:
        await run_until_stopped(
            run_shard(
                seed_gate(_aiter(seeds), stop),
                cfg,
                out,
                resolver=resolver,
                incremental=incremental,
                encoded=True,
                shared=beside.admission if beside else None,
                stopped=stop.is_set,
            ),
            stop.is_set,
            cfg.run.shutdown_grace,
        )

    # No tune_gc() here: the CLI calls it; a library caller's process is not ours.
    try:
        (beside.runner if beside else event_loop_runner(cfg))(main())
    except BaseExceptionGroup as group:
        # The writer is called from the shard's host tasks: an error of its own (the
        # output or the state file cannot be written) reaches here wrapped by the
        # shard's TaskGroup. It is the run's failure, to be reported as itself.
        error = writer_error(group)
        if error is None:
            raise
        raise error from group


class _Inline:
    """A one-worker run's ``ShardOutput``: the shard's results straight to the writer."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer

    async def records(self, batch: RecordBatch) -> None:
        rows = None if batch.rows is None else [(batch.host, batch.rows)]
        fingerprints = [(batch.host, batch.fingerprints.tobytes())]
        self._writer.records(batch.encoded(), batch.size(), fingerprints, rows)

    async def host_done(self, done: HostDone) -> None:
        self._writer.host(done.report, done.state)


async def _aiter(seeds: SeedReader) -> AsyncIterator[Seed]:
    for seed in seeds:
        if isinstance(seed, Seed):
            yield seed
            await asyncio.sleep(0)  # let workers run between lines of a long input
        else:
            invalid_line(seed, seeds.invalid)
