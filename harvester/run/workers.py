"""Worker processes, and the pipes between them and the parent (the one writer).

In: a worker's index, the config and the state-file settings (``Incremental``).
Out: a child process running one shard (``pipeline.run_shard``) and three pipes:

    parent ──seeds───► worker   frames: (index, Config, Incremental), then Seeds, then None
    parent ──stop────► worker   one byte, or end of file (the parent is gone): stop
    parent ◄─results── worker   frames: transport.Message (RecordsMessage + its lines,
                                HostMessage, DoneMessage, ErrorMessage)

A seed frame is ``multiprocessing.connection``'s: a 4-byte big-endian signed
length, then that many bytes of pickle. The results pipe and its frames are
``transport.py``'s.

Why plain pipes and ``subprocess`` rather than multiprocessing's spawn, Queue and
Event (as before): spawn always starts a resource-tracker process (a whole
interpreter, resident for the run's lifetime), there only to clean up the named
semaphores of those queues and events; each worker's Queue ran a feeder thread
that pickled and wrote every message while contending for the GIL with the event
loop; and the worker read
seeds and polled the stop event from executor threads. Here the event loop does
it all: results go out through non-blocking writes (``Results``), seeds and the
stop arrive as loop callbacks.

Bounds: the seed pipe (the kernel's 64 KiB, a few hundred seeds) blocks the
parent's dispatcher when a worker is behind; what a worker sent and the parent has
not written is bounded by its results pipe (``transport.py``), and while it is
full its hosts wait before parsing their next chunk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import struct
import subprocess
import sys
import traceback
from typing import TYPE_CHECKING

from harvester.output.formats import block_encoder
from harvester.run.runtime import event_loop_runner, tune_gc, tune_malloc
from harvester.run.transport import (
    BLOCK,
    DoneMessage,
    HostMessage,
    RecordsMessage,
    ResultPipe,
    Results,
    widen_pipe,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from multiprocessing.connection import Connection

    from harvester.config import Config
    from harvester.crawl.batch import RecordBatch
    from harvester.crawl.seed import Seed
    from harvester.run.pipeline import HostDone
    from harvester.state.ledger import Incremental
    from harvester.state.rows import LedgerRows

__all__ = ["WorkerProcess", "main"]

_HEADER = struct.Struct("!i")  # a seed frame's header (multiprocessing.connection's)
_ROLE = "harvester-worker"  # in the worker's command line, for ps and the benchmarks

# The worker's program: the parent's copy of the package comes first on its path.
_PROGRAM = (
    "import sys; sys.path.insert(0, {root!r}); from harvester.run.workers import main; main()"
)


# -- the parent's side ---------------------------------------------------------------


class WorkerProcess:
    """The parent's handle on one worker: its process and the parent's ends of its pipes.

    ``start`` runs in the dispatcher thread, as do ``send``s of seeds; the main
    thread reads ``results``, calls ``stop`` and, last, ``end``.
    """

    def __init__(self, index: int, cfg: Config, incremental: Incremental | None) -> None:
        self.index = index
        self._init = (index, cfg, incremental)
        self._proc: subprocess.Popen[bytes] | None = None
        self._seeds: Connection | None = None
        self._stop_fd: int | None = None
        self.results: ResultPipe | None = None  # set once started

    def start(self) -> None:
        """Start the process and send it its config (blocks until the pipe takes it)."""
        seeds_r, seeds_w = os.pipe()
        results_r, results_w = os.pipe()
        stop_r, stop_w = os.pipe()
        widen_pipe(results_r)
        child_fds = (seeds_r, results_w, stop_r)
        # The folder that holds the harvester package (this file is harvester/run/workers.py).
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        command = [
            sys.executable,
            *_interpreter_flags(),
            "-c",
            _PROGRAM.format(root=root),
            _ROLE,
            str(self.index),
            *map(str, child_fds),
        ]
        # At most two glibc malloc arenas in the worker: each thread that allocates
        # (aiohttp's resolver threads, executor threads) would otherwise get its own
        # 64 MiB arena, and fragmented arenas stay resident.
        env = dict(os.environ)
        env.setdefault("MALLOC_ARENA_MAX", "2")
        try:
            self._proc = subprocess.Popen(  # noqa: S603 - this interpreter, our own program
                command,
                pass_fds=child_fds,
                env=env,
                stdin=subprocess.DEVNULL,  # `-i -` is the parent's: a worker never reads it
                stdout=subprocess.DEVNULL,  # `-o -` is the parent's: nothing may mix into it
            )
        except BaseException:
            for fd in (seeds_w, results_r, stop_w):
                os.close(fd)
            raise
        finally:
            for fd in child_fds:  # the child has its copies; ours would hide its exit (no EOF)
                os.close(fd)
        # Imported here: only the parent writes seed frames (multiprocessing.connection
        # brings tempfile, shutil and random into every worker's start-up otherwise).
        from multiprocessing.connection import Connection

        self._seeds = Connection(seeds_w, readable=False)
        self._stop_fd = stop_w
        os.set_blocking(stop_w, False)
        self.results = ResultPipe(results_r)
        self.send(self._init)

    def send(self, item: object) -> bool:
        """Send a seed (or None: no more). Blocks while the worker is behind; False once
        the worker is gone (it exited or stopped reading for good).
        """
        if self._seeds is None:
            return False
        try:
            self._seeds.send_bytes(pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:  # BrokenPipeError: the worker exited
            return False
        return True

    def stop(self) -> None:
        """Tell the worker to stop (it stops taking seeds; its hosts get the grace)."""
        if self._stop_fd is not None:
            with contextlib.suppress(OSError):  # gone already, or told already (pipe full)
                os.write(self._stop_fd, b"s")

    def exit_status(self, timeout: float = 5.0) -> int | None:
        """The exit status of a worker whose results pipe ended (it is exiting)."""
        if self._proc is None:
            return None
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self._proc.wait(timeout)
        return None

    def end(self, *, terminate: bool) -> None:
        """Wait for the process to exit (``terminate``: send it SIGTERM first)."""
        if self._proc is not None:
            if terminate and self._proc.poll() is None:
                self._proc.terminate()  # our own child only
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def close(self) -> None:
        """Close the parent's ends of the pipes (after ``end``, once no thread uses them)."""
        for conn in (self._seeds, self.results):
            if conn is not None:
                conn.close()
        if self._stop_fd is not None:
            os.close(self._stop_fd)
            self._stop_fd = None


def _interpreter_flags() -> list[str]:
    # The interpreter options of this process (-B, -X ..., -W ...), as multiprocessing
    # gives its children; a private helper of subprocess, hence the lookup.
    flags: Callable[[], list[str]] = getattr(subprocess, "_args_from_interpreter_flags", list)
    return flags()


def main() -> None:
    """Entry point of a worker process: ``python -c PROGRAM harvester-worker INDEX FD FD
    FD`` (its seeds, results and stop pipes). Runs one shard until its seeds end or a
    stop.
    """
    # Ctrl-C signals the whole process group: the parent decides, and tells us to stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    index, seeds_fd, results_fd, stop_fd = (int(arg) for arg in sys.argv[2:6])
    results = Results(results_fd)
    try:
        _, cfg, incremental = pickle.loads(_read_frame(seeds_fd))  # noqa: S301 - our parent
        tune_gc(throughput=True)
        tune_malloc()
        event_loop_runner(cfg)(_serve(index, cfg, incremental, seeds_fd, results, stop_fd))
    except BaseException:  # report any crash to the parent, then exit non-zero
        results.report_crash(index, traceback.format_exc())
        raise


def _read_frame(fd: int) -> bytes:
    """One whole frame from a blocking pipe (the worker's config, before its loop runs)."""
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    return _read_exact(fd, size)


def _read_exact(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            raise EOFError("the parent closed the pipe mid-frame")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


class PipeStop:
    """The worker's stop flag: set when the parent writes to the stop pipe or closes it.

    ``is_set`` is what the shard polls (a ``shutdown.StopFlag``); ``wake`` lets a wait
    on seeds end at once.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._set = False
        self._waiters: list[asyncio.Future[None]] = []

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        os.set_blocking(self._fd, False)
        loop.add_reader(self._fd, self._fire, loop)

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.remove_reader(self._fd)
        self._set = True
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    def is_set(self) -> bool:
        return self._set

    def wake(self, waiter: asyncio.Future[None]) -> None:
        """Complete ``waiter`` when the stop comes (at once if it came)."""
        if self._set:
            if not waiter.done():
                waiter.set_result(None)
        else:
            self._waiters.append(waiter)


class SeedPipe:
    """The worker's seed pipe, read by the event loop: ``get`` returns the next seed, or
    None at the end (the parent's None, end of file, or a stop).

    It reads only when a seed is wanted, so unread seeds stay in the kernel's pipe and a
    parent with a long input blocks there instead of growing this buffer.
    """

    def __init__(self, fd: int, stop: PipeStop) -> None:
        self._fd = fd
        self._stop = stop
        self._buf = bytearray()
        self._eof = False

    async def get(self) -> Seed | None:
        loop = asyncio.get_running_loop()
        while not self._stop.is_set():
            frame = self._take()
            if frame is not None:
                seed: Seed | None = pickle.loads(frame)  # noqa: S301 - from our parent
                return seed
            if self._eof:
                return None
            readable: asyncio.Future[None] = loop.create_future()
            loop.add_reader(self._fd, _done, readable)
            self._stop.wake(readable)
            try:
                await readable
            finally:
                loop.remove_reader(self._fd)
            with contextlib.suppress(BlockingIOError):
                data = os.read(self._fd, 65536)
                self._eof = not data
                self._buf += data
        return None

    def _take(self) -> bytes | None:
        if len(self._buf) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack_from(self._buf)
        end = _HEADER.size + size
        if len(self._buf) < end:
            return None
        frame = bytes(self._buf[_HEADER.size : end])
        del self._buf[:end]
        return frame


def _done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Outbox:
    """A worker's ``ShardOutput``: its record batches gathered into messages of about
    ``BLOCK`` bytes (fewer, larger frames), and its finished hosts, sent through
    ``results`` in order (a host's records before its report).
    """

    def __init__(self, results: Results, *, ledger: bool, fmt: str) -> None:
        self._results = results
        self._ledger = ledger  # a state file: the messages carry ledger rows
        self._encode = block_encoder(fmt)  # CSV: rows made here, not by the writer
        self._buffer: list[bytes | bytearray] = []
        self._fingerprints: list[tuple[str, bytes]] = []  # (host, fps) of what is buffered
        self._rows: list[tuple[str, LedgerRows]] = []  # (host, ledger rows) of the same
        self._size = 0  # bytes buffered, lines and ledger blobs
        self._count = 0  # records buffered

    async def records(self, batch: RecordBatch) -> None:
        """Buffer one host's batch; send a message once the buffer holds ``BLOCK``."""
        data = batch.encoded() if self._encode is None else self._encode(batch.encoded())
        self._buffer.append(data)
        self._fingerprints.append((batch.host, batch.fingerprints.tobytes()))
        self._size += len(data)
        self._count += batch.size()
        if batch.rows:
            self._rows.append((batch.host, batch.rows))
            self._size += batch.rows.nbytes  # ledger chunks weigh on the message too
        if self._size >= BLOCK:
            await self.flush()

    async def host_done(self, done: HostDone) -> None:
        """Send what is buffered, then the host's report and state."""
        await self.flush()  # a host's records reach the writer before its report
        await self._results.put(HostMessage(done.report, done.state))

    async def flush(self) -> None:
        """Send what is buffered (nothing: no message)."""
        if self._buffer or self._rows:
            ledger = list(self._rows) if self._ledger else None
            msg = RecordsMessage(self._count, list(self._fingerprints), ledger)
            chunks = list(self._buffer)
            self._buffer.clear()
            self._fingerprints.clear()
            self._rows.clear()
            self._size = self._count = 0
            await self._results.put(msg, chunks)


async def _serve(
    index: int,
    cfg: Config,
    incremental: Incremental | None,
    seeds_fd: int,
    results: Results,
    stop_fd: int,
) -> None:
    """The worker's loop: seeds from the pipe through ``run_shard``; records, host reports
    and a last ``DoneMessage`` (or ``ErrorMessage``) out through ``results``.
    """
    from harvester.run.pipeline import run_shard
    from harvester.run.shutdown import run_until_stopped, seed_gate

    loop = asyncio.get_running_loop()
    stop = PipeStop(stop_fd)
    stop.watch(loop)
    os.set_blocking(seeds_fd, False)
    seeds = SeedPipe(seeds_fd, stop)
    await results.open()
    outbox = _Outbox(results, ledger=incremental is not None, fmt=cfg.output.format)

    async def from_pipe() -> AsyncIterator[Seed]:
        while (seed := await seeds.get()) is not None:
            yield seed

    try:
        # Backpressure: while the parent is behind, hosts wait before parsing their
        # next chunk (``run_shard``'s ``ready``): unparsed XML is smaller than records
        # waiting to be sent (with a state file, ~390 bytes a URL with its ledger chunk).
        await run_until_stopped(
            run_shard(
                seed_gate(from_pipe(), stop),
                cfg,
                outbox,
                incremental=incremental,
                encoded=True,
                ready=results.ready.wait,
                blocked=results.blocked,
                stopped=stop.is_set,
            ),
            stop.is_set,
            cfg.run.shutdown_grace,
        )
        await outbox.flush()
        await results.put(DoneMessage(index))
    except BaseException:
        await results.report(index, traceback.format_exc())
        raise
    await results.close()
