"""The client side of a distributed run: cut the seeds, run one task per shard, report.

In: a Dask ``Client``, the seeds (a path, or input lines), the output directory (on
storage every worker shares), the config. Out: every shard committed (or reported
failed), ``out/report.json``, ``out/crosshost.ndjson`` and ``out/_SUCCESS``; returns
a ``DistributedRun`` (the merged ``RunReport`` and each shard's outcome).

Example::

    from distributed import Client
    from harvester import load_config, run_distributed

    with Client("tcp://scheduler:8786") as client:
        result = run_distributed(client, "/shared/domains.txt", "/shared/out", load_config())
    print(result.run.urls, result.failed)
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import uuid
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from distributed import Event, KilledWorker, as_completed

from harvester.config import Config
from harvester.distributed.layout import open_layout, read_layout, split_seeds
from harvester.distributed.manifest import DISCARDED, read_manifest, sweep
from harvester.distributed.merge import CrossHostCount, combine
from harvester.distributed.task import ShardSpec, run_shard_task
from harvester.errors import ConfigError
from harvester.output.parts import write_atomic
from harvester.output.remote import is_remote
from harvester.output.report import RunReport
from harvester.run.shutdown import POLL

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from distributed import Client

    from harvester.distributed.layout import Layout
    from harvester.run.shutdown import StopFlag

__all__ = ["DistributedRun", "run_distributed"]

SHARDS_PER_WORKER = 4  # default shard count per Dask worker (a directory's first run)


@dataclass(slots=True)
class DistributedRun:
    """What a distributed run did: the merged run report and each shard's outcome."""

    run: RunReport
    layout: Layout
    shards: list[dict[str, Any]] = field(default_factory=list)  # one per shard, shard order

    @property
    def failed(self) -> list[int]:
        """The shards that failed every attempt (their hosts are not in the output)."""
        return [s["shard"] for s in self.shards if s["status"] == "failed"]

    def as_dict(self) -> dict[str, Any]:
        """The JSON form written to ``out/report.json``."""
        out = self.run.as_dict()
        out["distributed"] = {
            "run": self.layout.run,
            "shards": self.layout.shards,
            "shard_by": self.layout.shard_by,
            "shards_committed": sum(1 for s in self.shards if s["status"] != "failed"),
            "shards_failed": self.failed,
            "outcomes": self.shards,
        }
        return out


def run_distributed(
    client: Client,
    seeds: str | Iterable[str],
    output: str,
    config: Config | None = None,
    *,
    shards: int | None = None,
    on_shard: Callable[[dict[str, Any]], None] | None = None,
    stop: StopFlag | None = None,
) -> DistributedRun:
    """Harvest ``seeds`` on the cluster behind ``client`` into the directory ``output``.

    ``seeds``: a domains file's path, or input lines (then written into ``output``
    first: tasks read seeds from files, never through the scheduler). ``shards``
    overrides ``distributed.shards`` (fixed by the directory's first run). ``on_shard``
    gets each shard's outcome as it ends (``status`` committed, failed or
    ``duplicate attempt discarded``). Setting ``stop`` stops every shard gracefully.
    Raises ``ConfigError`` for a shard count or key that the directory does not have.
    """
    cfg = config or Config()
    _check(output, cfg)
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    wanted = cfg.distributed.shards if shards is None else shards
    if not wanted and read_layout(output) is None:
        wanted = SHARDS_PER_WORKER * workers
    layout = open_layout(output, wanted, cfg.distributed.shard_by)
    _start(layout)
    result = DistributedRun(_cut_seeds(seeds, layout, RunReport(workers=workers)), layout)
    event = Event(f"harvester-stop-{uuid.uuid4().hex}", client=client)
    prefix = hashlib.blake2b(os.path.abspath(output).encode(), digest_size=4).hexdigest()
    key = f"harvester-{prefix}-r{layout.run}-shard-"
    specs = [ShardSpec(layout, n, cfg, event.name) for n in range(layout.shards)]
    futures = client.map(
        run_shard_task,
        specs,
        key=[f"{key}{n:05d}" for n in range(layout.shards)],
        pure=False,
        retries=cfg.distributed.shard_retries,
    )
    outcomes: dict[int, dict[str, Any]] = {}
    cross = CrossHostCount(cfg.dedupe)
    finished = threading.Event()
    relay = threading.Thread(target=_relay_stop, args=(stop, event, finished), daemon=True)
    relay.start()
    try:
        _collect(client, futures, specs, key, layout, outcomes, cross, on_shard)
    except BaseException:
        client.cancel(futures)
        cross.finish()
        raise
    finally:
        finished.set()
        relay.join(timeout=1)
    _finish(result, outcomes, cross.finish(), interrupted=stop is not None and stop.is_set())
    return result


def _check(output: str, cfg: Config) -> None:
    """Refuse (``ConfigError``) an output or a config a distributed run cannot take."""
    if is_remote(output):
        raise ConfigError(
            f"{output}: a distributed run's directory is on storage its workers share; give"
            " one (harvester run -o URL --scheduler local stages it and publishes the URL)",
            key="output",
        )
    if cfg.state.path:
        raise ConfigError(
            "a distributed run keeps one state file per shard in its output directory;"
            " leave state.path unset",
            key="state.path",
        )


def _cut_seeds(seeds: str | Iterable[str], layout: Layout, run: RunReport) -> RunReport:
    """Cut ``seeds`` (a file's path, or lines) into the run's seed files; count them in
    ``run``."""
    if isinstance(seeds, str):
        with open(seeds, encoding="utf-8", errors="replace") as lines:
            split = split_seeds(lines, layout)
    else:
        split = split_seeds(seeds, layout)
    run.hosts_total = sum(split.per_shard)
    run.input_invalid, run.input_duplicates = split.invalid, split.duplicates
    return run


def _collect(
    client: Client,
    futures: list[Any],
    specs: list[ShardSpec],
    key: str,
    layout: Layout,
    outcomes: dict[int, dict[str, Any]],
    cross: CrossHostCount,
    on_shard: Callable[[dict[str, Any]], None] | None,
) -> None:
    """Each shard's outcome into ``outcomes`` as its task ends (its fingerprints into
    ``cross``); a shard Dask gave up on is submitted once more, alone (``futures`` grows)."""
    shard_of_key = {f.key: n for n, f in enumerate(futures)}
    running = as_completed(futures, loop=client.loop)
    for future in running:
        shard = shard_of_key[future.key]
        if _killed(future) and not specs[shard].alone:
            # Dask gave up on it: its workers died, maybe beside the shard that
            # killed them (occupancy.py). Once more, alone in its worker.
            specs[shard] = replace(specs[shard], alone=True)
            again = client.submit(
                run_shard_task,
                specs[shard],
                key=f"{key}{shard:05d}-alone",
                pure=False,
                retries=specs[shard].cfg.distributed.shard_retries,
            )
            shard_of_key[again.key] = shard
            futures.append(again)
            running.add(again)
            continue
        outcome = _outcome(future, shard, layout)
        outcomes[shard] = outcome
        if outcome["status"] != "failed":
            shard_dir = layout.shard_dir(shard)
            cross.add(os.path.join(shard_dir, outcome["manifest"]["fingerprints"]))
        if on_shard is not None:
            on_shard(outcome)


def _killed(future: Any) -> bool:
    """Whether the task ended because its workers died too often (``KilledWorker``)."""
    return future.status == "error" and isinstance(future.exception(), KilledWorker)


def _outcome(future: Any, shard: int, layout: Layout) -> dict[str, Any]:
    """A finished task's outcome: its result, or ``failed`` with the error.

    A result ``duplicate attempt discarded`` (a zombie attempt had committed first)
    gets the committed attempt's manifest and report: the shard is committed all the same.
    """
    alone = {"alone": True} if str(future.key).endswith("-alone") else {}
    try:
        result: dict[str, Any] = future.result()
    except Exception as exc:  # the task failed every attempt (or its workers died)
        error = f"{type(exc).__name__}: {exc}"
        return {"shard": shard, "status": "failed", "error": error, **alone}
    result.update(alone)
    if result["status"] == DISCARDED:
        manifest = read_manifest(layout, shard)
        assert manifest is not None  # (EEXIST: it exists, and manifests are never deleted)
        with open(os.path.join(layout.shard_dir(shard), manifest["report"]), "rb") as fh:
            result.update(manifest=manifest, report=json.load(fh), attempt=manifest["attempt"])
    return result


def _start(layout: Layout) -> None:
    """A new run: no ``_SUCCESS`` until it ends; every shard swept of uncommitted files."""
    for path in (layout.success_path, os.path.join(layout.root, "crosshost.ndjson")):
        if os.path.exists(path):
            os.unlink(path)
    for shard in range(layout.shards):
        sweep(layout, shard)


def _relay_stop(stop: StopFlag | None, event: Event, finished: threading.Event) -> None:
    """Set the run's Dask Event once ``stop`` is (Ctrl-C on the client)."""
    if stop is None:
        return
    while not finished.wait(POLL):
        if stop.is_set():
            event.set()
            return


def _finish(
    result: DistributedRun,
    outcomes: dict[int, dict[str, Any]],
    counts: dict[str, int],
    *,
    interrupted: bool,
) -> None:
    """Merge the reports, count cross-host duplicates, sweep, write the run's files."""
    layout, run = result.layout, result.run
    result.shards = [
        {k: v for k, v in outcomes[n].items() if k != "report"} for n in sorted(outcomes)
    ]
    combine([o["report"] for o in outcomes.values() if "report" in o], run)
    run.workers_started = len(
        {o["manifest"]["worker"] for o in outcomes.values() if "manifest" in o}
    )
    run.cross_host_duplicates = sum(counts.values())
    write_atomic(
        os.path.join(layout.root, "crosshost.ndjson"),
        "".join(
            json.dumps({"host": h, "cross_host_duplicates": c}) + "\n" for h, c in counts.items()
        ),
    )
    complete = not interrupted and all(
        o["status"] != "failed" and o["manifest"]["complete"] for o in outcomes.values()
    )
    run.finish(complete=complete, interrupted=interrupted)
    for shard in range(layout.shards):
        sweep(layout, shard)
    write_atomic(layout.report_path, json.dumps(result.as_dict(), indent=2) + "\n")
    if not interrupted:
        write_atomic(layout.success_path, "")
