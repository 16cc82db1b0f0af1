"""Shards: run the pipeline on all cores, with one writer owning the output.

In: the config, the input lines (read lazily), the output path. Out: the JSON
Lines file (written as ``OUT.part`` and renamed when the run completes), a
per-host report file and the run report; returns the ``RunReport``.

Parsing is CPU-bound, so hosts are partitioned by a stable hash of their host
key across ``run.workers`` processes, each running ``pipeline.run_shard`` with
its own event loop, session and limiters: a host lives in exactly one shard,
so per-host politeness stays exact. The parent process is the one writer:

    parent: dispatcher thread ──seed pipe (bounded, per worker)──► worker i
            main thread ◄──results pipe (bounded, per worker): encoded record
                                         blocks, host reports, done/error── worker i

(``workers.py`` has the processes and pipes; ``transport.py`` the results' frames.)
Workers encode records to JSON Lines themselves and send blocks of about 256 KiB, so the parent only
copies bytes into the output file. The dispatcher is a thread so the parent
can keep draining results while it waits on a full seed pipe (waiting on both
in one thread could deadlock). With one worker the shard runs in the parent
process and writes directly.

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
import ctypes
import gc
import hashlib
import os
import platform
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from harvester.crosshost import CrossHostTracker
from harvester.errors import ConfigError, HarvesterError
from harvester.ledger import EMIT_EVENTS, Incremental
from harvester.report import Progress, RunReport, write_report
from harvester.seeds import Seed, SeedReader
from harvester.shutdown import POLL, SeedGate, Stop, run_until_stopped
from harvester.sink import JsonlSink, encode_record, encode_records
from harvester.state import StateStore, default_state_path

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from aiohttp.abc import AbstractResolver

    from harvester.config import Config
    from harvester.ledger import HostState, LedgerRows
    from harvester.pipeline import OutputItem
    from harvester.state import FinishedHosts
    from harvester.workers import WorkerProcess

# harvester.pipeline (aiohttp, lxml: ~30 MB) is imported inside the functions that
# run shards, so the parent process, which only dispatches and writes, stays small.

__all__ = ["RunFailed", "Stop", "event_loop_runner", "run_job", "shard_of", "tune_gc"]

_EXIT_MARGIN = 5.0  # seconds past the grace a stopping worker gets to flush and say "done"


class RunFailed(HarvesterError):
    """The run itself failed (a worker crashed, the output could not be written)."""

    kind = "run_failed"


def shard_of(host: str, shards: int) -> int:
    """Stable shard index of a host (the same in every process and every run)."""
    digest = hashlib.blake2b(host.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


class _Writer:
    """The parent's side: owns the output file, the host-report file, the run report and
    the state file (the one writer of each; see ``state.py`` for the commit protocol).
    """

    def __init__(
        self,
        sink: JsonlSink,
        hosts_path: str | None,
        run: RunReport,
        progress: Progress,
        cross: CrossHostTracker,
        store: StateStore | None = None,
        commit_interval: float = 2.0,
    ) -> None:
        self.sink = sink
        self.hosts = JsonlSink(hosts_path) if hosts_path else None
        self.run = run
        self.progress = progress
        self._last_update = 0.0
        self.pending_urls = 0  # records written for hosts that have not reported yet
        self.cross = cross  # URLs listed by more than one host (only the writer sees all)
        self.store = store
        self._emit_removed = store is not None and "removed" in EMIT_EVENTS[store.run_emit]
        self._commit_interval = commit_interval
        self._last_commit = time.monotonic()

    def records(
        self,
        data: bytes | bytearray | memoryview,
        count: int,
        fingerprints: list[tuple[str, bytes]],
        rows: list[tuple[str, LedgerRows]] | None = None,
    ) -> None:
        # run.urls is summed from host reports (add_host); count is for progress only.
        self.sink.write(data, count)
        for host, fps in fingerprints:
            self.cross.add(host, fps)
        if self.store is not None and rows:
            self.store.add_many(rows)
        self.pending_urls += count
        self._tick()

    def host(self, report: dict[str, Any], state: HostState | None = None) -> None:
        # A host's records always reach the writer before its report, so its count is final.
        report["cross_host_duplicates"] = self.cross.take(report["host"])
        if self.store is not None and state is not None:
            removed = self.store.finish_host(state)
            report["removed"] = len(removed)
            self.store.count({k: report.get(k, 0) for k in ("new", "changed", "unchanged")})
            if removed and self._emit_removed:
                self.sink.write(encode_records(removed))
                report["urls"] = report.get("urls", 0) + len(removed)
                self.pending_urls += len(removed)
        if self.hosts is not None:
            self.hosts.write(encode_record(report))
        self.run.add_host(report)
        self.pending_urls -= report.get("urls", 0)
        self._tick()

    def commit(self) -> None:
        """Make the output durable, then commit the state that describes it (in that order)."""
        if self.store is not None:
            self.sink.sync()
            self.store.commit(self.sink.bytes)
            self._last_commit = time.monotonic()

    def _tick(self) -> None:
        now = time.monotonic()
        if self.store is not None and now - self._last_commit > self._commit_interval:
            self.commit()
        if now - self._last_update > 0.2:
            self._last_update = now
            self.progress.update(self.run)

    def close(self, *, complete: bool, interrupted: bool = False) -> None:
        # The records of an interrupted run stay .part (they are not the whole result);
        # its per-host report is final: every line is a host that finished, and the
        # run report (marked interrupted) names the file.
        if self.store is not None:
            self.commit()  # before the rename: a crash in between resumes, not repeats
            self.store.finish_run(
                "complete" if complete else "interrupted" if interrupted else "failed"
            )
        self.sink.close(complete=complete)
        if self.hosts is not None:
            self.hosts.close(complete=complete or interrupted)
        self.progress.update(self.run)
        self.progress.close()
        self.cross.close()


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
) -> RunReport:
    """Harvest every host of ``lines`` into ``output``; return the run report.

    ``resolver`` (tests) is only honoured with one worker, in-process. Setting
    ``stop`` ends the run early and gracefully (see the module docstring): the
    report then has ``interrupted`` set and the output stays ``.part``.
    Raises ``RunFailed`` when the run itself fails; per-host failures are in the report.
    """
    stop = stop or Stop()
    workers = cfg.run.workers or os.cpu_count() or 1
    run = RunReport(workers=workers)
    if hosts_path is None and report_path:
        hosts_path = report_path.removesuffix(".json").removesuffix(".report") + ".hosts.jsonl"
    store = _open_state(cfg, output)
    incremental: Incremental | None = None
    finished: FinishedHosts | None = None
    try:
        sink = _open_sink(output, store)
        if store is not None:
            assert store.run is not None
            incremental = Incremental(store.path, store.run.id, store.run.emit)
            run.state = store.path
            run.run_id = store.run.id
            run.resumed = store.run.resumed
            if store.run.resumed:
                finished = store.finished_hosts()
    except BaseException:
        if store is not None:
            store.close()
        raise
    seeds = SeedReader(lines, skip=finished)
    writer = _Writer(
        sink,
        hosts_path,
        run,
        Progress(enabled=progress),
        CrossHostTracker(cfg.dedupe),
        store,
        cfg.state.commit_interval,
    )
    complete = interrupted = False
    try:
        if workers == 1:
            run.workers_started = 1
            _run_inline(cfg, seeds, writer, resolver, stop, incremental)
        else:
            _run_processes(cfg, seeds, writer, workers, stop, incremental)
        interrupted = stop.is_set()
        complete = not interrupted
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if finished is not None:
            finished.close()
        run.resumed_hosts_skipped = seeds.skipped
        run.input_invalid = seeds.invalid
        run.input_duplicates = seeds.duplicates
        # Records written for hosts that never reported (cancelled at the end of a
        # shutdown grace): they are in the output, so they count (0 on a complete run).
        run.urls += writer.pending_urls
        run.finish(complete=complete, interrupted=interrupted)
        try:
            writer.close(complete=complete, interrupted=interrupted)
        finally:
            if store is not None:
                run.events = dict(store.counts)
                store.close()
        if report_path:
            write_report(report_path, run, hosts_path)
    return run


def _open_state(cfg: Config, output: str) -> StateStore | None:
    """Open (lock, migrate) the state file and start or resume its run; None without state."""
    emit = cfg.output.emit
    path = cfg.state.path or default_state_path(output) if cfg.state.enabled else None
    if path is None:
        if emit != "all":
            raise ConfigError(
                f"--emit {emit} needs a state file: give --state PATH (or an output file)",
                key="output.emit",
            )
        return None
    store = StateStore(path)
    try:
        info = store.start_run(emit=emit, output=output, resume=cfg.state.resume)
        if info.resumed and info.emit != emit:
            print(
                f"harvester: resuming run {info.id} with its own --emit {info.emit} (not {emit})",
                file=sys.stderr,
            )
        elif info.resumed:
            print(f"harvester: resuming unfinished run {info.id}", file=sys.stderr)
    except BaseException:
        store.close()
        raise
    return store


def _open_sink(output: str, store: StateStore | None) -> JsonlSink:
    """The output sink; a resumed run continues (cut back to what the state committed)."""
    run = store.run if store is not None else None
    if run is None or not run.resumed or run.output is None or run.output == "-":
        return JsonlSink(output)
    if run.output != output:
        # Another output this time: cut the interrupted run's file back to its committed
        # records, so the two files together hold each URL once.
        part = run.output + ".part"
        if os.path.exists(part) and os.path.getsize(part) > run.output_bytes:
            os.truncate(part, run.output_bytes)
        return JsonlSink(output)
    return JsonlSink(output, resume_at=run.output_bytes)


# -- one worker, in-process ---------------------------------------------------------


def _run_inline(
    cfg: Config,
    seeds: SeedReader,
    writer: _Writer,
    resolver: AbstractResolver | None,
    stop: Stop,
    incremental: Incremental | None = None,
) -> None:
    from harvester.pipeline import RecordBatch, run_shard

    gate = SeedGate(cfg.run.hosts_in_flight)

    async def send(item: OutputItem) -> None:
        if isinstance(item, RecordBatch):
            writer.records(
                item.encoded(),
                item.size(),
                [(item.host, item.fingerprints.tobytes())],
                None if item.rows is None else [(item.host, item.rows)],
            )
        else:
            gate.done()
            writer.host(item.report, item.state)

    async def main() -> None:
        await run_until_stopped(
            run_shard(
                gate.seeds(_aiter(seeds), stop),
                cfg,
                send,
                resolver=resolver,
                incremental=incremental,
                encoded=True,
            ),
            stop.is_set,
            cfg.run.shutdown_grace,
        )

    # No tune_gc() here: the CLI calls it; a library caller's process is not ours.
    event_loop_runner(cfg)(main())


async def _aiter(seeds: SeedReader) -> AsyncIterator[Seed]:
    for seed in seeds:
        if isinstance(seed, Seed):
            yield seed
            await asyncio.sleep(0)  # let workers run between lines of a long input
        else:
            _invalid_line(seed, seeds.invalid)


_MAX_INVALID_SHOWN = 100


def _invalid_line(error: HarvesterError, count: int) -> None:
    """Tell the user about the ``count``-th bad input line (first 100; the report counts all)."""
    if count <= _MAX_INVALID_SHOWN:
        print(f"harvester: skipped input {error.message}", file=sys.stderr)
    elif count == _MAX_INVALID_SHOWN + 1:
        print(
            "harvester: more invalid input lines; see input_invalid in the report", file=sys.stderr
        )


_GEN0_THROUGHPUT = 10_000  # a worker's gen-0 threshold when its CPU is the limit


def tune_gc(*, throughput: bool = False) -> None:
    """Take the objects created by imports out of the garbage collector's sight.

    They live for the whole run; without ``gc.freeze`` every full collection
    walks them again. ``throughput`` (a worker process) also raises the gen-0
    threshold from 700 to 10,000: collections (``gc_collect_main``,
    ``visit_decref``) were 3-4 % of a worker's samples, and the workers' CPU is
    what limits the run.

    Measured (``bench_pipeline --hosts 2000 --only harvester``, alternated, 3 runs
    each): state off, 13.18-15.00 s and 22.5-25.0 CPU s against 14.37-15.95 s and
    24.0-26.8 CPU s, peak RSS 222-225 MB against 217-220. With the state file it
    was left at 700 while the writer's SQLite was the limit; since the ledger is
    chunks (d4d0605) the workers' CPU is the limit there too, and perf put
    collections at 2.8 % of a state-on worker's samples against 0.5 % state off.
    """
    gc.freeze()
    if throughput:
        _, gen1, gen2 = gc.get_threshold()
        gc.set_threshold(_GEN0_THROUGHPUT, gen1, gen2)


_M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)


def tune_malloc() -> None:
    """One glibc malloc arena for all of this process's threads (else: nothing).

    glibc gives each thread that allocates while another holds the main arena an
    arena of its own (up to 8 per core), whose freed memory mostly stays resident.
    Here the threads are aiohttp's resolver threads in a worker and the
    dispatcher thread in the parent (before ``workers.py``, also each worker's
    queue feeder, which pickled every ~256 KiB message); the GIL already
    serialises nearly all their allocations, so one arena serves them without
    contention.

    Measured (``bench_pipeline --hosts 2000 --only harvester``, as the environment
    variable ``MALLOC_ARENA_MAX=1``, runs alternated): state on, peak RSS of all
    processes 291-292 MB against 297-304; state off, wall 14.7-18.9 s against
    15.4-19.5 s (5 runs each): no cost seen. Call it before any thread starts.
    """
    if platform.libc_ver()[0] != "glibc":
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this interpreter runs on
    except (OSError, AttributeError):
        return
    mallopt(_M_ARENA_MAX, 1)


def event_loop_runner(cfg: Config) -> Any:
    """``asyncio.run``, with uvloop when installed and enabled (faster sockets and timers)."""
    if cfg.run.uvloop:
        with contextlib.suppress(ImportError):
            import uvloop

            return uvloop.run
    return asyncio.run


# -- N worker processes ------------------------------------------------------------


def _run_processes(
    cfg: Config,
    seeds: SeedReader,
    writer: _Writer,
    workers: int,
    user_stop: Stop,
    incremental: Incremental | None = None,
) -> None:
    from multiprocessing.connection import wait

    from harvester.workers import WorkerProcess

    pool = _Pool([WorkerProcess(i, cfg, incremental) for i in range(workers)])
    stop = threading.Event()
    dispatcher = threading.Thread(
        target=_dispatch,
        args=(seeds, stop, user_stop, pool),
        name="harvester-dispatch",
        daemon=True,
    )
    dispatcher.start()
    finished: set[int] = set()  # workers that sent "done"
    give_up: float | None = None  # monotonic time to stop waiting for workers, once stopping
    try:
        # Until every seed was dispatched and every worker that got one has finished.
        while not (pool.dispatched.is_set() and pool.running() <= finished):
            _check_dispatch(pool)
            if user_stop.is_set() and give_up is None:
                pool.stop()
                give_up = time.monotonic() + cfg.run.shutdown_grace + _EXIT_MARGIN
            if give_up is not None and time.monotonic() > give_up:
                break  # the finally terminates the workers that did not finish
            live = {
                w.results.fileno(): w
                for w in pool.started()
                if w.results is not None and w.index not in finished
            }
            ready = wait(list(live), timeout=POLL) if live else _idle()
            for fd in ready:
                assert isinstance(fd, int)
                worker = live[fd]
                pipe = worker.results
                assert pipe is not None
                try:
                    messages = pipe.messages()
                except EOFError:
                    # It exited (killed, or crashed before its loop ran) without "done".
                    status = worker.exit_status()
                    raise RunFailed(
                        f"worker {worker.index} exited with status {status} before finishing"
                    ) from None
                for msg, data in messages:
                    tag = msg[0]
                    if tag == "records":
                        writer.records(data, msg[1], msg[2], msg[3])
                    elif tag == "host":
                        writer.host(msg[1], msg[2])
                    elif tag == "done":
                        finished.add(msg[1])
                    elif tag == "error":
                        raise RunFailed(f"worker {msg[1]} failed:\n{msg[2]}")
                pipe.release()  # the worker may reuse the ring room of what was written
        _check_dispatch(pool)  # (it may have failed before any worker started)
    finally:
        stop.set()
        started = pool.close()
        writer.run.workers_started = len(started)
        for w in started:
            w.end(terminate=w.index not in finished)
        dispatcher.join(timeout=1)  # its writes fail now that no worker reads them
        if not dispatcher.is_alive():  # else it may still use a pipe: leave them open
            for w in started:
                w.close()


def _check_dispatch(pool: _Pool) -> None:
    if pool.failure is not None:
        raise RunFailed(f"dispatching hosts failed: {pool.failure!r}") from pool.failure


def _idle() -> list[Any]:
    time.sleep(POLL)  # no worker started yet: the dispatcher is reading the input
    return []


class _Pool:
    """The worker processes, each started when its shard gets its first seed.

    So a run over fewer hosts than ``--workers`` (one big site) does not pay for
    idle interpreters (~45-50 MB each). The dispatcher thread starts them; the
    main thread asks which are running, relays a stop; ``close`` stops further starts.
    """

    def __init__(self, workers: list[WorkerProcess]) -> None:
        self.workers = workers
        self._lock = threading.Lock()
        self._started: list[WorkerProcess] = []
        self._closed = False
        self._stopping = False
        self.dispatched = threading.Event()  # set when the dispatcher is done
        self.failure: BaseException | None = None  # what ended the dispatcher early

    def start(self, index: int) -> bool:
        """Start worker ``index`` unless it runs already; False once closed."""
        with self._lock:
            if self._closed:
                return False
            worker = self.workers[index]
            if worker not in self._started:
                worker.start()
                self._started.append(worker)
                if self._stopping:
                    worker.stop()
            return True

    def started(self) -> list[WorkerProcess]:
        """The workers started so far."""
        with self._lock:
            return list(self._started)

    def running(self) -> set[int]:
        """The indices of the workers started so far."""
        with self._lock:
            return {w.index for w in self._started}

    def stop(self) -> None:
        """Tell every worker, started or yet to start, to stop."""
        with self._lock:
            self._stopping = True
            for worker in self._started:
                worker.stop()

    def close(self) -> list[WorkerProcess]:
        """No more starts; return the workers that were started."""
        with self._lock:
            self._closed = True
            return list(self._started)


def _dispatch(seeds: SeedReader, stop: threading.Event, user_stop: Stop, pool: _Pool) -> None:
    """Parent thread: send each seed to the shard that owns its host (starting its worker
    on the first one), then an end marker to every started worker.

    A send blocks while that worker is behind (its seed pipe is full); it fails once the
    worker is gone, and the finally of ``_run_processes`` ends every worker.
    """
    n = len(pool.workers)
    try:
        for seed in seeds:
            if stop.is_set() or user_stop.is_set():
                return
            if isinstance(seed, Seed):
                shard = shard_of(seed.host, n)
                if not pool.start(shard):
                    return
                pool.workers[shard].send(seed)
            else:
                _invalid_line(seed, seeds.invalid)
        for worker in pool.started():
            worker.send(None)
    except BaseException as exc:  # a worker that cannot start, an input that cannot be read
        pool.failure = exc  # the main thread fails the run with it
    finally:
        pool.dispatched.set()
