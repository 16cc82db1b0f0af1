"""Process runtime: the event loop a shard runs on and the tuning of a process of ours.

In: the config (``run.uvloop``). Out: ``event_loop_runner`` (``asyncio.run`` or
uvloop's), and ``tune_gc`` / ``tune_malloc``, which the CLI's process and each worker
process call once at start. A library caller's process is not ours: ``run_job``
never tunes it.

Kept apart from ``shards`` (which runs the pool) and ``workers`` (the worker
process) so that both import it and neither imports the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import platform
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

    from harvester.config import Config

__all__ = ["GEN0_THROUGHPUT", "event_loop_runner", "new_event_loop", "tune_gc", "tune_malloc"]

GEN0_THROUGHPUT = 10_000  # a worker's gen-0 threshold when its CPU is the limit


def tune_gc(*, throughput: bool = False) -> None:
    """Take the objects created by imports out of the garbage collector's sight.

    They live for the whole run; without ``gc.freeze`` every full collection
    walks them again. ``throughput`` (a worker process) also raises the gen-0
    threshold from 700 to 10,000: in a worker, whose CPU is what limits the run,
    collections of the short-lived entries and records were a visible share of
    its samples (benchmarks/README.md has the measurements).
    """
    gc.freeze()
    if throughput:
        _, gen1, gen2 = gc.get_threshold()
        gc.set_threshold(GEN0_THROUGHPUT, gen1, gen2)


# glibc's mallopt parameters (malloc.h)
_M_ARENA_MAX = -8
_M_MMAP_THRESHOLD = -3
# Blocks this large or larger get their own mapping, returned to the system when freed.
MMAP_THRESHOLD = 128 * 1024


def tune_malloc() -> None:
    """glibc's malloc set to give freed memory back (else: nothing).

    Two settings, because a long run allocates and frees per host (TLS buffers,
    bodies, parsers) while longer-lived objects land between those blocks:

    * one arena for all of this process's threads: glibc gives each thread that
      allocates while another holds the main arena an arena of its own (up to 8
      per core), whose freed memory mostly stays resident. Here the threads are
      aiohttp's resolver threads in a worker and the dispatcher thread in the
      parent; the GIL already serialises nearly all their allocations, so one
      arena serves them without contention.
    * a fixed mmap threshold (``MMAP_THRESHOLD``, glibc's initial value): by
      default glibc raises it to the size of every mapped block freed (up to 32
      MiB), after which such blocks come from the heap, and a heap only shrinks
      from its top: a worker's RSS then grew with every host it had finished
      (~20 KB a host on the realweb, flat with this; benchmarks/README.md).
      Setting it also stops glibc adjusting the trim threshold.

    Call it before any thread starts.
    """
    if platform.libc_ver()[0] != "glibc":
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this interpreter runs on
    except (OSError, AttributeError):
        return
    mallopt(_M_ARENA_MAX, 1)
    mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def event_loop_runner(cfg: Config) -> Any:
    """``asyncio.run``, with uvloop when installed and enabled (faster sockets and timers)."""
    uv = _uvloop(cfg)
    return uv.run if uv is not None else asyncio.run


def new_event_loop(cfg: Config) -> asyncio.AbstractEventLoop:
    """A new event loop, uvloop's when installed and enabled (as ``event_loop_runner``)."""
    uv = _uvloop(cfg)
    loop: asyncio.AbstractEventLoop = (
        uv.new_event_loop() if uv is not None else asyncio.new_event_loop()
    )
    return loop


def _uvloop(cfg: Config) -> ModuleType | None:
    """The uvloop module when ``run.uvloop`` is on and it is installed, else None."""
    if cfg.run.uvloop:
        with contextlib.suppress(ImportError):
            import uvloop

            return uvloop
    return None
