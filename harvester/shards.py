"""Shards: run the pipeline on all cores, with one writer owning the output.

In: the config, the input lines (read lazily), the output path. Out: the JSON
Lines file (written as ``OUT.part`` and renamed when the run completes), a
per-host report file and the run report; returns the ``RunReport``.

Parsing is CPU-bound, so hosts are partitioned by a stable hash of their host
key across ``run.workers`` processes, each running ``pipeline.run_shard`` with
its own event loop, session and limiters: a host lives in exactly one shard,
so per-host politeness stays exact. The parent process is the one writer:

    parent: dispatcher thread ──seed queue (bounded, per worker)──► worker i
            main thread ◄──result queue (bounded): encoded record blocks,
                                                   host reports, done/error── workers

Workers encode records to JSON Lines themselves and send blocks of about
256 KiB, so the parent only copies bytes into the output file. The dispatcher
is a thread so the parent can keep draining results while it waits on a full
seed queue (waiting on both in one thread could deadlock). With one worker
the shard runs in the parent process and writes directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import multiprocessing
import queue
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING, Any

from harvester.errors import HarvesterError
from harvester.report import Progress, RunReport, write_report
from harvester.seeds import Seed, SeedReader
from harvester.sink import JsonlSink, encode_record

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from aiohttp.abc import AbstractResolver

    from harvester.config import Config
    from harvester.pipeline import OutputItem

# harvester.pipeline (aiohttp, lxml: ~30 MB) is imported inside the functions that
# run shards, so the parent process, which only dispatches and writes, stays small.

__all__ = ["RunFailed", "run_job", "shard_of", "tune_gc"]

_BLOCK = 256 * 1024  # bytes of encoded records per message from a worker
_SEED_QUEUE = 256  # seeds buffered per worker
_RESULT_QUEUE = 64  # messages buffered for the writer


class RunFailed(HarvesterError):
    """The run itself failed (a worker crashed, the output could not be written)."""

    kind = "run_failed"


def shard_of(host: str, shards: int) -> int:
    """Stable shard index of a host (the same in every process and every run)."""
    digest = hashlib.blake2b(host.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


class _Writer:
    """The parent's side: owns the output file, the host-report file and the run report."""

    def __init__(
        self, output: str, hosts_path: str | None, run: RunReport, progress: Progress
    ) -> None:
        self.sink = JsonlSink(output)
        self.hosts = JsonlSink(hosts_path) if hosts_path else None
        self.run = run
        self.progress = progress
        self._last_update = 0.0
        self.pending_urls = 0  # records written for hosts that have not reported yet

    def records(self, data: bytes, count: int) -> None:
        # run.urls is summed from host reports (add_host); count is for progress only.
        self.sink.write(data)
        self.pending_urls += count
        self._tick()

    def host(self, report: dict[str, Any]) -> None:
        if self.hosts is not None:
            self.hosts.write(encode_record(report))
        self.run.add_host(report)
        self.pending_urls -= report.get("urls", 0)
        self._tick()

    def _tick(self) -> None:
        now = time.monotonic()
        if now - self._last_update > 0.2:
            self._last_update = now
            self.progress.update(self.run)

    def close(self, *, complete: bool) -> None:
        self.sink.close(complete=complete)
        if self.hosts is not None:
            self.hosts.close(complete=complete)
        self.progress.update(self.run)
        self.progress.close()


def run_job(
    cfg: Config,
    lines: Iterable[str],
    output: str,
    *,
    report_path: str | None = None,
    hosts_path: str | None = None,
    progress: bool | None = None,
    resolver: AbstractResolver | None = None,
) -> RunReport:
    """Harvest every host of ``lines`` into ``output``; return the run report.

    ``resolver`` (tests) is only honoured with one worker, in-process.
    Raises ``RunFailed`` when the run itself fails; per-host failures are in the report.
    """
    workers = cfg.run.workers or multiprocessing.cpu_count()
    run = RunReport(workers=workers)
    seeds = SeedReader(lines)
    if hosts_path is None and report_path:
        hosts_path = report_path.removesuffix(".json").removesuffix(".report") + ".hosts.jsonl"
    writer = _Writer(output, hosts_path, run, Progress(enabled=progress))
    complete = interrupted = False
    try:
        if workers == 1:
            _run_inline(cfg, seeds, writer, resolver)
        else:
            _run_processes(cfg, seeds, writer, workers)
        complete = True
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        run.input_invalid = seeds.invalid
        run.input_duplicates = seeds.duplicates
        run.finish(complete=complete, interrupted=interrupted)
        writer.close(complete=complete)
        if report_path:
            write_report(report_path, run, hosts_path)
    return run


# -- one worker, in-process ---------------------------------------------------------


def _run_inline(
    cfg: Config, seeds: SeedReader, writer: _Writer, resolver: AbstractResolver | None
) -> None:
    from harvester.pipeline import RecordBatch, run_shard

    async def send(item: OutputItem) -> None:
        if isinstance(item, RecordBatch):
            writer.records(b"".join(map(encode_record, item.records)), len(item.records))
        else:
            writer.host(item.report)

    async def main() -> None:
        await run_shard(_aiter(seeds), cfg, send, resolver=resolver)

    # No tune_gc() here: the CLI calls it; a library caller's process is not ours.
    _event_loop_runner(cfg)(main())


async def _aiter(seeds: Iterable[Seed | HarvesterError]) -> AsyncIterator[Seed]:
    for seed in seeds:
        if isinstance(seed, Seed):
            yield seed
            await asyncio.sleep(0)  # let workers run between lines of a long input
        else:
            _invalid_line(seed)


_MAX_INVALID_SHOWN = 100
_invalid_shown = 0


def _invalid_line(error: HarvesterError) -> None:
    """Tell the user about a bad input line (the first 100; the report counts them all)."""
    global _invalid_shown
    _invalid_shown += 1
    if _invalid_shown <= _MAX_INVALID_SHOWN:
        print(f"harvester: skipped input {error.message}", file=sys.stderr)
    elif _invalid_shown == _MAX_INVALID_SHOWN + 1:
        print(
            "harvester: more invalid input lines; see input_invalid in the report", file=sys.stderr
        )


def tune_gc() -> None:
    """Take the objects created by imports out of the garbage collector's sight.

    They live for the whole run; without ``gc.freeze`` every full collection
    walks them again. Thresholds stay at their defaults on purpose: raising the
    gen-0 threshold bought ~7% parse speed but cost ~30 MB per worker
    (measured on bench_pipeline's 2,000 hosts), and memory is the tighter target.
    """
    gc.freeze()


def _event_loop_runner(cfg: Config) -> Any:
    """``asyncio.run``, with uvloop when installed and enabled (faster sockets and timers)."""
    if cfg.run.uvloop:
        with contextlib.suppress(ImportError):
            import uvloop

            return uvloop.run
    return asyncio.run


# -- N worker processes ------------------------------------------------------------


def _run_processes(cfg: Config, seeds: SeedReader, writer: _Writer, workers: int) -> None:
    ctx = multiprocessing.get_context("spawn")
    seed_queues = [ctx.Queue(maxsize=_SEED_QUEUE) for _ in range(workers)]
    results = ctx.Queue(maxsize=_RESULT_QUEUE)
    procs = [
        ctx.Process(target=_worker_main, args=(i, cfg, seed_queues[i], results), daemon=True)
        for i in range(workers)
    ]
    for proc in procs:
        proc.start()
    stop = threading.Event()
    dispatcher = threading.Thread(
        target=_dispatch, args=(seeds, seed_queues, stop), name="harvester-dispatch", daemon=True
    )
    dispatcher.start()
    finished: set[int] = set()  # workers that sent "done"
    try:
        while len(finished) < workers:
            try:
                msg = results.get(timeout=0.5)
            except queue.Empty:
                # A worker that exited without saying "done" (killed, or a crash before
                # its loop started) would otherwise leave the writer waiting forever.
                for i, proc in enumerate(procs):
                    if proc.exitcode is not None and i not in finished:
                        raise RunFailed(
                            f"worker {i} exited with status {proc.exitcode} before finishing"
                        ) from None
                continue
            tag = msg[0]
            if tag == "records":
                writer.records(msg[1], msg[2])
            elif tag == "host":
                writer.host(msg[1])
            elif tag == "done":
                finished.add(msg[1])
            elif tag == "error":
                raise RunFailed(f"worker {msg[1]} failed:\n{msg[2]}")
    finally:
        stop.set()
        for i, proc in enumerate(procs):
            if i not in finished and proc.is_alive():
                proc.terminate()  # our own children only
            proc.join(timeout=10)
        dispatcher.join(timeout=1)


def _dispatch(seeds: SeedReader, queues: list[Any], stop: threading.Event) -> None:
    """Parent thread: send each seed to the shard that owns its host, then an end marker."""
    n = len(queues)
    for seed in seeds:
        if stop.is_set():
            return
        if isinstance(seed, Seed):
            _put(queues[shard_of(seed.host, n)], seed, stop)
        else:
            _invalid_line(seed)
    for q in queues:
        _put(q, None, stop)


def _put(q: Any, item: object, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            q.put(item, timeout=0.5)
            return
        except queue.Full:
            continue


def _worker_main(index: int, cfg: Config, seeds: Any, results: Any) -> None:
    """Entry point of a worker process: run one shard, stream encoded records to the parent."""
    try:
        tune_gc()
        _event_loop_runner(cfg)(_worker(index, cfg, seeds, results))
    except BaseException:  # report any crash to the parent, then exit non-zero
        results.put(("error", index, traceback.format_exc()))
        raise


async def _worker(index: int, cfg: Config, seeds: Any, results: Any) -> None:
    from harvester.pipeline import HostDone, RecordBatch, run_shard

    loop = asyncio.get_running_loop()
    buffer: list[bytes] = []
    size = 0
    count = 0

    async def put(msg: tuple[Any, ...]) -> None:
        # mp.Queue.put blocks when the parent is behind: do it off the loop.
        await loop.run_in_executor(None, results.put, msg)

    async def flush() -> None:
        nonlocal size, count
        if buffer:
            data = b"".join(buffer)
            buffer.clear()
            n, size, count = count, 0, 0
            await put(("records", data, n))

    async def send(item: OutputItem) -> None:
        nonlocal size, count
        if isinstance(item, RecordBatch):
            data = b"".join(map(encode_record, item.records))
            buffer.append(data)
            size += len(data)
            count += len(item.records)
            if size >= _BLOCK:
                await flush()
        elif isinstance(item, HostDone):
            await flush()  # a host's records reach the writer before its report
            await put(("host", item.report))

    async def from_queue() -> AsyncIterator[Seed]:
        while (seed := await loop.run_in_executor(None, seeds.get)) is not None:
            yield seed

    await run_shard(from_queue(), cfg, send)
    await flush()
    await put(("done", index))
