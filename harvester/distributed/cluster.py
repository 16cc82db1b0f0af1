"""Which Dask cluster a distributed run uses: ``--scheduler`` and ``--scheduler-file``.

In: ``distributed.scheduler`` (``local``, ``local:N`` or a scheduler address such as
``tcp://HOST:8786``) or ``distributed.scheduler_file``. Out: a connected Dask
``Client`` (for ``local``, on a ``LocalCluster`` it starts and closes: one worker
process per core, or N, one thread each: a shard's event loop owns its thread; the
workers forked from a preloaded forkserver, ``forkserver.py``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from typing import TYPE_CHECKING, Any

import dask.config
from distributed import Client, LocalCluster

from harvester.distributed import forkserver
from harvester.errors import ConfigError
from harvester.version import install_hint

if TYPE_CHECKING:
    from collections.abc import Iterator

    from harvester.config import DistributedConfig

__all__ = ["local_cluster_config", "local_workers", "open_client"]


def local_workers(scheduler: str) -> int | None:
    """Workers of a ``local`` / ``local:N`` scheduler (None: not a local one).

    Raises ``ConfigError`` for ``local:`` followed by anything but a positive integer.
    """
    if scheduler == "local":
        return os.cpu_count() or 1
    if not scheduler.startswith("local:"):
        return None
    count = scheduler.partition(":")[2]
    if not count.isdigit() or int(count) < 1:
        raise ConfigError(
            f"{scheduler!r}: local:N needs a number of workers N >= 1", key="distributed.scheduler"
        )
    return int(count)


@contextlib.contextmanager
def open_client(cfg: DistributedConfig) -> Iterator[Client]:
    """A client of the cluster ``cfg`` names (a ``LocalCluster`` started for ``local``)."""
    if cfg.scheduler_file:
        with Client(scheduler_file=cfg.scheduler_file) as client:
            yield client
        return
    workers = local_workers(cfg.scheduler)
    if workers is None:
        if "://" not in cfg.scheduler:
            raise ConfigError(
                f"{cfg.scheduler!r} is not local, local:N or a scheduler address (tcp://HOST:8786)",
                key="distributed.scheduler",
            )
        with Client(cfg.scheduler) as client:
            yield client
        return
    forkserver.start()  # (the CLI started it already, before importing Dask)
    try:
        with (
            dask.config.set({**local_cluster_config(), **forkserver.dask_config()}),
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=cfg.dashboard_address or None,
            ) as cluster,
            Client(cluster) as client,
        ):
            _tell_dashboard(cfg.dashboard_address, client)
            yield client
    finally:
        forkserver.stop()  # after the cluster closed: its workers have exited


def _tell_dashboard(address: str, client: Client) -> None:
    """Print where the dashboard is, or why there is none (Dask serves a page saying so)."""
    if not address:
        return
    if importlib.util.find_spec("bokeh") is None:
        print(
            f"harvester: no Dask dashboard: it needs bokeh ({install_hint('dask')})",
            file=sys.stderr,
        )
        return
    print(f"harvester: Dask dashboard at {client.dashboard_link}", file=sys.stderr)


def local_cluster_config() -> dict[str, Any]:
    """The Dask settings of the ``LocalCluster`` that ``--scheduler local`` starts.

    A real cluster sets the same in its own Dask config (README: Beyond one machine).
    """
    return {
        # One shard task per worker thread at a time (not 1.1, Dask's default): a worker
        # that dies then takes no queued shard down with it (each death counts against a
        # task's distributed.scheduler.allowed-failures).
        "distributed.scheduler.worker-saturation": 1.0,
        # A shard is one long task whose CPU is the run's limit. Dask's statistical
        # profiler samples every thread's stack every 10 ms and its system monitor polls
        # psutil (disk counters included) every 0.5 s, in the worker process, taking the
        # GIL from the shard: the profiler off, the monitor every 2 s without the disk.
        "distributed.worker.profile.enabled": False,
        "distributed.admin.system-monitor.interval": "2s",
        "distributed.admin.system-monitor.disk": False,
        # The same for the worker's own periodic checks, each a wake-up of its event
        # loop thread that takes the GIL from the shard loop (and makes it wait up to a
        # switch interval to get it back): the loop-blocked check (it still warns past
        # its limit, which is longer than a second) and the memory monitor (a shard's
        # memory grows with the hosts in flight, not in bursts a second could miss),
        # many times a second by Dask's defaults, once a second here.
        "distributed.admin.tick.interval": "1s",
        "distributed.worker.memory.monitor-interval": "1s",
    }
