"""N worker processes: the parent's side of a run over them.

In: the config, the seeds (read lazily), the run's ``Writer``, the number of workers.
Out: every seed sent to the worker whose shard owns its host (``seeds.shard_of``),
each worker started on its shard's first seed; what the workers send written as it
comes (``run_processes``), until every worker that got a seed said it is done, or a
stop's grace (and a margin) ran out.

    parent: dispatcher thread ──seed pipe (bounded, per worker)──► worker i
            main thread ◄──results pipe (bounded, per worker): encoded record
                                         blocks, host reports, done/error── worker i

The dispatcher is a thread so the parent can keep draining results while it waits on
a full seed pipe (waiting on both in one thread could deadlock). ``workers.py`` has
the processes and their pipes; ``transport.py`` the results' frames.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from harvester.crawl.seed import Seed
from harvester.errors import RunFailed
from harvester.run.seeds import invalid_line, shard_of
from harvester.run.shutdown import POLL

if TYPE_CHECKING:
    from harvester.config import Config
    from harvester.output.writer import Writer
    from harvester.run.seeds import SeedReader
    from harvester.run.shutdown import Stop
    from harvester.run.workers import WorkerProcess
    from harvester.state.ledger import Incremental

__all__ = ["run_processes"]

_EXIT_MARGIN = 5.0  # seconds past the grace a stopping worker gets to flush and say "done"


def run_processes(
    cfg: Config,
    seeds: SeedReader,
    writer: Writer,
    workers: int,
    user_stop: Stop,
    incremental: Incremental | None = None,
) -> None:
    """Run ``seeds`` on ``workers`` worker processes; write what they send through
    ``writer`` (module docstring). ``user_stop`` stops them gracefully."""
    from multiprocessing.connection import wait

    from harvester.run.workers import WorkerProcess

    pool = _Pool([WorkerProcess(i, cfg, incremental) for i in range(workers)])
    stop = threading.Event()
    dispatcher = threading.Thread(
        target=_dispatch,
        args=(seeds, stop, user_stop, pool),
        name="harvester-dispatch",
        daemon=True,
    )
    dispatcher.start()
    finished: set[int] = set()  # workers that sent their DoneMessage
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
                _drain(live[fd], writer, finished)
            writer.tick()  # commits on time even while no worker sends anything
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


def _drain(worker: WorkerProcess, writer: Writer, finished: set[int]) -> None:
    """Write what ``worker`` sent so far; note its end (``DoneMessage``) in ``finished``."""
    from harvester.run.transport import DoneMessage, ErrorMessage, HostMessage, RecordsMessage

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
        match msg:
            case RecordsMessage(count, fingerprints, rows):
                writer.records(data, count, fingerprints, rows, encoded=True)
            case HostMessage(report, state):
                writer.host(report, state)
            case DoneMessage(index):
                finished.add(index)
            case ErrorMessage(index, tb):
                raise RunFailed(f"worker {index} failed:\n{tb}")


def _check_dispatch(pool: _Pool) -> None:
    if pool.failure is not None:
        raise RunFailed(f"dispatching hosts failed: {pool.failure!r}") from pool.failure


def _idle() -> list[Any]:
    time.sleep(POLL)  # no worker started yet: the dispatcher is reading the input
    return []


class _Pool:
    """The worker processes, each started when its shard gets its first seed.

    So a run over fewer hosts than ``--workers`` (one big site) does not pay for
    idle interpreters. The dispatcher thread starts them; the
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
                invalid_line(seed, seeds.invalid)
        for worker in pool.started():
            worker.send(None)
    except BaseException as exc:  # a worker that cannot start, an input that cannot be read
        pool.failure = exc  # the main thread fails the run with it
    finally:
        pool.dispatched.set()
