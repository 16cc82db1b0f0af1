"""How shard attempts share a Dask worker process: one event loop, tails beside the next shard.

In: a shard attempt's coroutine (``shards.run_job``'s ``runner``) and whether the
attempt must run alone. Out: ``Occupancy.run``, which runs the coroutine on the
process's shard loop and blocks until it ends, stepping aside (Dask's ``secede``)
once the shard has taken its last seed (``Occupancy.seeds``).

Why one loop: a shard ends with its slowest host (a host of many sitemaps at its
politeness rate, a slow server), and once its last seed is taken it only waits for
those. A worker's one thread held till then ran its shards' tails one after another
with the CPU near idle (with harvester's default politeness a shard's tail is long),
where each pool worker is one loop taking new hosts beside its stragglers
(benchmarks/README.md, bench_distributed, has the figures). So every attempt of a
process runs on one event loop in one thread (the "shard loop"), as a pool worker's
hosts do: their hosts share the loop's CPU without
fighting for the GIL, and one admission (``run.loopadmission``) measures that loop's
load, which is the process's, for all of them. The task's own thread, once the shard has
taken its last seed, secedes from the worker's threads, so Dask starts the worker's
next shard while this one's stragglers finish; it then just waits for the result.

Why alone: a worker process that dies (SIGKILL, out of memory, a crash in C) takes
every attempt in it along, and Dask counts the death against each of them
(``distributed.scheduler.allowed-failures``): beside a shard that kills its worker
every time, an innocent shard could use up its allowed failures and be reported
failed. So a shard that Dask gives up on (``KilledWorker``) gets one more attempt
that runs alone in its process: it waits until no other attempt runs there and
keeps new ones out until it ends, and it never secedes (the worker's thread stays
taken). A shard that kills its worker alone too is the one at fault and is
reported failed; one that was only beside it commits.

The state is per process (module state): attempts of one worker process, whatever
threads they come from. Waiting attempts hold their Dask thread, which is the point.
While any attempt runs, the garbage collector's gen-0 threshold is raised, as in the
pool's workers (``runtime.tune_gc``: fewer collections of the short-lived entries
and records), and restored when the last one ends (an attempt restoring it as it
ended, the others ran on at 700).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
from typing import TYPE_CHECKING, Any

from harvester.run.loopadmission import LoopAdmission
from harvester.run.runtime import GEN0_THROUGHPUT, new_event_loop

if TYPE_CHECKING:
    from collections.abc import Coroutine, Iterable, Iterator

    from harvester.config import Config

__all__ = ["OCCUPANCY", "Attempt", "Occupancy"]

_LOOK = 1.0  # seconds between looks at the shard loop thread (alive) while waiting


class Attempt:
    """One attempt's part in the process: its seeds and its run on the shard loop.

    ``alone``: the attempt runs with no other in the process and never secedes.
    """

    def __init__(self, occupancy: Occupancy, cfg: Config, alone: bool) -> None:
        self._occupancy = occupancy
        self._cfg = cfg
        self.alone = alone
        self.taken = threading.Event()  # the shard took its last seed
        self._wake = threading.Event()  # taken, or the run ended: look again

    @property
    def admission(self) -> LoopAdmission:
        """The admission of every shard on the shard loop (``run.loopadmission``)."""
        return self._occupancy.loop(self._cfg)[2]

    def seeds(self, lines: Iterable[str]) -> Iterator[str]:
        """``lines``, then ``taken`` is set (iterated on the shard loop by the feeder)."""
        yield from lines
        self.taken.set()
        self._wake.set()

    def run(self, main: Coroutine[Any, Any, None]) -> None:
        """Run ``main`` on the shard loop; return when it ends (raise what it raised).

        Called in the Dask task's thread, which secedes once the seeds are taken
        (unless ``alone``; outside a Dask worker there is nothing to secede from).
        It sleeps until one of those happens (not polling: each wake-up of a thread
        takes the GIL from the shard loop).
        """
        loop, thread, _ = self._occupancy.loop(self._cfg)
        future = asyncio.run_coroutine_threadsafe(main, loop)
        future.add_done_callback(lambda _: self._wake.set())
        seceded = self.alone
        while True:
            self._wake.wait(_LOOK)
            self._wake.clear()  # (what set it is looked at below, after the clear)
            if future.done():
                future.result()
                return
            if not thread.is_alive():
                future.cancel()
                raise RuntimeError("the worker's shard loop ended while a shard ran")
            if not seceded and self.taken.is_set():
                seceded = True
                from distributed import secede

                with contextlib.suppress(ValueError):  # (not in a Dask worker's thread)
                    secede()


class Occupancy:
    """The attempts running in this process, the shard loop they run on, the alone one."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.running = 0  # attempts between enter and exit, alone or not
        self.alone = False  # an alone attempt is running
        self.waiting_alone = 0  # alone attempts waiting for the others to end
        self.threshold = gc.get_threshold()  # the GC's, saved while attempts run
        self._loop: tuple[asyncio.AbstractEventLoop, threading.Thread, LoopAdmission] | None = None

    @contextlib.contextmanager
    def attempt(self, cfg: Config, alone: bool) -> Iterator[Attempt]:
        """Held around one attempt's run in this process.

        ``alone``: wait until no other attempt runs here, and keep others out until this
        one ends. Otherwise: wait while an alone attempt runs or waits here.
        """
        with self.changed:
            if alone:
                self.waiting_alone += 1
                self.changed.wait_for(lambda: self.running == 0)
                self.waiting_alone -= 1
                self.alone = True
            else:  # an alone attempt waiting goes first: it waits for fewer each time
                self.changed.wait_for(lambda: not self.alone and not self.waiting_alone)
            if not self.running:
                self.threshold = gc.get_threshold()
                gc.set_threshold(GEN0_THROUGHPUT, *self.threshold[1:])
            self.running += 1
        try:
            yield Attempt(self, cfg, alone)
        finally:
            with self.changed:
                self.running -= 1
                if not self.running:
                    gc.set_threshold(*self.threshold)
                if alone:
                    self.alone = False
                self.changed.notify_all()

    def loop(
        self, cfg: Config
    ) -> tuple[asyncio.AbstractEventLoop, threading.Thread, LoopAdmission]:
        """The process's shard loop, its thread and its shards' admission, started on
        first use (with ``cfg``'s loop choice: uvloop or not), and again if it ended."""
        with self.changed:
            if self._loop is None or not self._loop[1].is_alive():
                loop = new_event_loop(cfg)
                thread = threading.Thread(
                    target=loop.run_forever, name="harvester-shard-loop", daemon=True
                )
                thread.start()
                self._loop = (loop, thread, LoopAdmission())
            return self._loop


OCCUPANCY = Occupancy()  # this process's
