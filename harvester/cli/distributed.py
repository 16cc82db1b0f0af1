"""``harvester run --scheduler ...``: the run's shards on a Dask cluster.

In: the parsed ``run`` arguments, the config (``[distributed]``), the CLI's ``Stop``.
Out: the output directory's committed shards, ``OUT/report.json``, the summary
table on stderr and the exit status (``exits.py``; failed shards, like failed hosts,
are in the report, not in the status). ``run.py`` owns the signals and calls this.
"""

from __future__ import annotations

import atexit
import gc
import signal
import sys
from typing import TYPE_CHECKING

from harvester.cli.exits import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    JOB_ERRORS,
    fail,
)
from harvester.cli.options import typed_flags
from harvester.version import install_hint

if TYPE_CHECKING:
    import argparse
    from typing import Any

    from harvester.config import Config
    from harvester.run.shutdown import Stop

__all__ = ["add_arguments", "command", "wanted"]


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The distributed flags of ``run``: --scheduler, --scheduler-file, --shards, ..."""
    typed_flags(
        group,
        [
            (
                "--scheduler",
                "distributed.scheduler",
                str,
                'run the shards on Dask: "local" (a LocalCluster, one worker per core),'
                ' "local:N" or a scheduler address tcp://HOST:8786; -o is then a directory'
                f" ({install_hint('dask')})",
            ),
            ("--scheduler-file", "distributed.scheduler_file", str, "a Dask scheduler file"),
            (
                "--shards",
                "distributed.shards",
                int,
                "shards of the run (default 4 per Dask worker; fixed by the output"
                " directory's first run)",
            ),
            ("--shard-retries", "distributed.shard_retries", int, "runs of a failing shard task"),
            (
                "--dashboard-address",
                "distributed.dashboard_address",
                str,
                'where --scheduler local serves Dask\'s dashboard ("" = none)',
            ),
        ],
    )
    group.add_argument(
        "--shard-by",
        dest="distributed.shard_by",
        choices=("host", "domain"),
        help="shard by host, or by registrable domain (a site's subdomains in one shard)"
        " (config: distributed.shard_by)",
    )


def wanted(cfg: Config) -> bool:
    """Does the config ask for a distributed run?"""
    return bool(cfg.distributed.scheduler or cfg.distributed.scheduler_file)


def command(ns: argparse.Namespace, cfg: Config, stop: Stop) -> int:
    """Run the shards on the cluster; print the summary; return the exit status."""
    if ns.output == "-":
        print(
            "harvester run: --scheduler needs -o DIRECTORY (shared by the workers)", file=sys.stderr
        )
        return EXIT_USAGE
    # Dask's modules leave a large object graph that the interpreter's exit walks in
    # its cyclic collections, a visible share of a run's wall time (benchmarks/README.md,
    # bench_distributed): frozen at exit, out of the collector's sight, it is freed
    # with the process instead.
    atexit.unregister(gc.freeze)  # (once, however many runs a process makes)
    atexit.register(gc.freeze)
    local = cfg.distributed.scheduler.partition(":")[0] == "local"
    if local and not cfg.distributed.scheduler_file:
        from harvester.distributed import forkserver

        forkserver.start()  # its imports run while this process imports Dask below
    try:
        from harvester.distributed.client import run_distributed
        from harvester.distributed.cluster import open_client
    except ImportError as exc:
        print(
            f"harvester run: --scheduler needs Dask ({exc}): {install_hint('dask')}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from harvester.distributed.layout import check_layout
    from harvester.output.display import summary_table
    from harvester.run.seeds import open_lines

    seeds: Any = ns.input if ns.input not in (None, "-") and not ns.domains else None
    try:
        # Before a cluster starts: a directory cut into other shards is a usage error.
        check_layout(ns.output, cfg.distributed.shards, cfg.distributed.shard_by)
        with open_client(cfg.distributed) as client:
            result = run_distributed(
                client,
                seeds if seeds is not None else open_lines(ns.domains, ns.input),
                ns.output,
                cfg,
                stop=stop,
                on_shard=_tell,
            )
    except KeyboardInterrupt:
        print("harvester: interrupted; the shards committed so far stay", file=sys.stderr)
        return EXIT_TERMINATED if stop.signum == signal.SIGTERM else EXIT_INTERRUPTED
    except JOB_ERRORS as exc:
        return fail("run", exc)
    print(summary_table(result.run), file=sys.stderr)
    if result.failed:
        print(f"harvester: shards failed: {result.failed} (see report.json)", file=sys.stderr)
    if result.run.interrupted:
        print("harvester: interrupted; report marked interrupted, no _SUCCESS", file=sys.stderr)
        return EXIT_TERMINATED if stop.signum == signal.SIGTERM else EXIT_INTERRUPTED
    return EXIT_OK


def _tell(outcome: dict[str, Any]) -> None:
    """One stderr line per shard as it ends."""
    error = f": {outcome['error']}" if "error" in outcome else ""
    print(f"harvester: shard {outcome['shard']:05d} {outcome['status']}{error}", file=sys.stderr)
