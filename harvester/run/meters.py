"""Load meters: what ``admission.py`` samples to decide how many hosts may run.

In: this process's ``/proc`` files and clocks. Out: ``read_rss()``, the resident
set size in bytes; ``CpuMeter``, how busy the event loop's thread is (a share of
wall time, and its moving average). Sampled every ``POLL`` by ``admission.watch``.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["SMOOTHING", "CpuMeter", "read_rss"]

_PAGE = os.sysconf("SC_PAGE_SIZE")
# Weight of a new sample in the CPU meter's moving average: over ~4 samples (0.4 s at
# POLL), so one busy burst (a big document parsed) does not hold the ceiling alone.
SMOOTHING = 0.25


def read_rss() -> int:
    """The process's resident set size in bytes (``/proc/self/statm``; 0 where missing)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _thread_demand() -> float | None:
    """Seconds the calling thread has been on a CPU or runnable and waiting for one
    (``/proc/thread-self/schedstat``: run and run-queue nanoseconds), or None."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as fh:
            run, wait = fh.read().split()[:2]
        return (int(run) + int(wait)) / 1e9
    except (OSError, ValueError):
        return None


class CpuMeter:
    """How busy the event loop's thread is, as a share in [0, 1] of wall time: the
    time it ran or was ready to run and waited for a core (the scheduler's
    ``schedstat``), else (no such file) the process's CPU time; and its moving average.

    In: nothing (it reads ``/proc/thread-self/schedstat`` and ``time.process_time``;
    tests pass ``demand``, ``process`` and ``clock``). Create and sample it in the
    loop's thread. Out: ``sample()``, the share since the last call, and ``share``,
    its moving average (updated by ``sample``). Why the wait counts: a loop that
    always has work is saturated whether it runs or queues for a core behind other
    processes (the web's servers in a benchmark, other workers); and a loop idle in
    ``epoll`` counts neither, so a machine busy with other work does not look like
    this run's limit. At 1.0, another host in flight only waits longer.

    >>> meter = CpuMeter(demand=lambda: None, process=lambda: 0.0, clock=lambda: 0.0)
    >>> meter.sample()
    0.0
    """

    def __init__(
        self,
        *,
        demand: Callable[[], float | None] = _thread_demand,
        process: Callable[[], float] = time.process_time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._demand = demand
        self._process = process
        self._clock = clock
        self._last_demand = demand()  # run + wait seconds of the thread at the last sample
        self._last_process = process()  # CPU seconds of this process at the last sample
        self._last_wall = clock()  # wall seconds at the last sample
        self.share = 0.0  # the moving average of what ``sample`` returned

    def sample(self) -> float:
        """The busy share since the last sample (0.0 before any time passed)."""
        demand, cpu, wall = self._demand(), self._process(), self._clock()
        elapsed = wall - self._last_wall
        if demand is not None and self._last_demand is not None:
            used = demand - self._last_demand
        else:
            used = cpu - self._last_process
        self._last_demand, self._last_process, self._last_wall = demand, cpu, wall
        now = min(1.0, max(0.0, used / elapsed)) if elapsed > 0 else 0.0
        self.share += SMOOTHING * (now - self.share)
        return now
