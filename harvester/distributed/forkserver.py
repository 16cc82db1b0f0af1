"""Worker processes of ``--scheduler local`` forked from a server that imported them.

In: nothing (``start``: called first thing by a ``local`` run, before the client
imports Dask). Out: multiprocessing's forkserver running, its preload
(``PRELOAD``, ``preload.py``: Dask and the shard task's modules, then frozen out of
the garbage collector's sight) being imported in its own process while the client
imports Dask in this one; ``dask_config`` the settings that make
the LocalCluster's nannies fork their workers from it.

Why: with Dask's default (``spawn``) each worker process starts a new interpreter
and imports Dask and then harvester (~0.65 CPU s each), after the client has
imported Dask, so a ``local`` run paid that start before its first shard. Forked
from one preloaded server the workers start in milliseconds, with the shard's
modules already imported; ``fork`` from the client itself would be faster still, but
the client has threads by then (Dask's event loop), and a process forked with
threads keeps their locks and executors (Dask's offload executor) in a broken state.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.forkserver
import os
import signal
from typing import Any, Final

__all__ = ["PRELOAD", "available", "dask_config", "start", "stop"]

PRELOAD: Final = ("harvester.distributed.preload",)


def available() -> bool:
    """Whether this platform has a forkserver (not Windows): else Dask's default."""
    return "forkserver" in multiprocessing.get_all_start_methods()


def start() -> None:
    """Start the forkserver with ``PRELOAD`` (it imports them in the background)."""
    if not available():
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    multiprocessing.forkserver.ensure_running()


def dask_config() -> dict[str, Any]:
    """The Dask settings that make the nannies use the forkserver ``start`` began.

    Also tells Dask its own preload is set: Dask would otherwise import numpy,
    pandas and lz4 in the client to preload them into a server already running.
    """
    if not available():
        return {}
    import distributed.utils

    distributed.utils._forkserver_preload_set = True  # (a private flag; see above)
    return {"distributed.worker.multiprocessing-method": "forkserver"}


def stop() -> None:
    """Stop the forkserver (once the cluster is closed: its workers have exited); reap it.

    Without this it ends by itself when this process does, but then not as this
    process's child: its CPU (and its workers') would be missing from what a
    parent measures of the run (``benchmarks/bench_distributed.py``). SIGTERM first:
    told by closing its socket alone, it exits through the interpreter's shutdown
    (Dask's exit handlers: ~0.15 s at the end of every run).
    """
    server = multiprocessing.forkserver._forkserver
    pid = getattr(server, "_forkserver_pid", None)  # (private: the server we started)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    halt = getattr(server, "_stop", None)  # (closes its socket and waits for it)
    if halt is not None:
        halt()
