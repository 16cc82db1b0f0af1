"""What the forkserver of ``--scheduler local`` imports before it forks the workers.

Imported there only (``forkserver.PRELOAD``): importing it imports Dask and the
shard task's modules, then freezes every object they made out of the garbage
collector's sight (``gc.freeze``), so that the workers forked from the server
never walk them in a collection. A walk writes to each object it visits, and a
written page is copied into the worker: unfrozen, the worker's first full
collection made its own copy of every page of the imports it shares with the server.

It also asks ``platform.uname()`` for the processor once: a Dask worker reports its
platform when it registers (``distributed.versions``), and the first ask runs
``uname -p`` in a subprocess, a fork of the whole worker at its start; asked here,
every forked worker inherits the answer.
"""

from __future__ import annotations

import gc
import platform

import distributed  # noqa: F401

import harvester.distributed.task
import harvester.run.pipeline  # noqa: F401

__all__: list[str] = []

platform.uname().processor  # noqa: B018 - cached by platform for the forked workers
gc.collect()
gc.freeze()
