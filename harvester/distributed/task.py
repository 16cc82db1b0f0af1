"""The shard task: what a Dask worker runs for one shard of one run.

In: a ``ShardSpec`` (the layout, the shard, the config, the name of the run's stop
``Event``). Out: the shard's committed files (``manifest.py``) and a small result
dict for the client: the status (``committed`` or ``duplicate attempt discarded``),
the manifest and the shard's run report. Records never go back through Dask.

The shard is the one-process run of ``shards.run_job`` (one worker, no process of
its own: a Dask worker must not fork processes) over the shard's seed file, with
its records, host reports and report written to the attempt's own files and its
state on local disk (SQLite must not be written over a network filesystem), copied
back at the commit. Any exception deletes the attempt's files and propagates, so
Dask retries the task (``--shard-retries``).
The shard's coroutine runs on its process's one shard loop, and once the shard has
taken its last seed the task secedes from the worker's threads, so the worker starts
its next shard beside this one's stragglers; an attempt marked ``alone`` (the retry
of a shard Dask gave up on) runs alone in its process instead (``occupancy.py``).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import shutil
import signal
import socket
import tempfile
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from harvester.distributed.fingerprints import FingerprintLog
from harvester.distributed.manifest import DISCARDED, Attempt, latest_manifest
from harvester.distributed.occupancy import OCCUPANCY
from harvester.errors import StateError
from harvester.output.formats import resolve_format
from harvester.output.parts import fsync_dir, fsync_file
from harvester.run.shards import Beside, run_job
from harvester.run.shutdown import Stop

if TYPE_CHECKING:
    from harvester.config import Config
    from harvester.distributed.layout import Layout
    from harvester.output.report import RunReport

__all__ = ["TEST_KILL_ENV", "ShardSpec", "run_shard_task"]

_POLL = 1.0  # seconds between looks at the run's stop event (a call to the scheduler)
# TEST ONLY (tests/integration/test_distributed_faults.py): a directory whose file "spec"
# holds "SHARD TIMES" makes the task of shard SHARD SIGKILL its own worker process once
# it has written part of its output, on its first TIMES attempts (counted by marker
# files in that directory). Not a user knob: no flag or config key sets it.
TEST_KILL_ENV = "HARVESTER_TEST_KILL_SHARD"


@dataclass(frozen=True, slots=True)
class ShardSpec:
    """Everything a shard task needs: small, so the scheduler carries only this."""

    layout: Layout
    shard: int
    cfg: Config
    stop_event: str | None = None  # name of the run's Dask Event (None: no stop)
    alone: bool = False  # the attempt Dask gave up on, again alone in its worker (occupancy.py)


def run_shard_task(spec: ShardSpec) -> dict[str, Any]:
    """Run one attempt at ``spec.shard`` and commit it; return the client's result.

    The result: ``{"shard", "attempt", "status", "manifest", "report"}``, ``status``
    being ``committed`` or ``duplicate attempt discarded`` (another attempt had
    committed; this one's files are deleted). Raises whatever the run raised (the
    attempt's files deleted first), for Dask to retry.
    """
    _freeze_imports()
    attempt = Attempt.new(spec.layout, spec.shard, resolve_format("", spec.cfg.output.format))
    local = tempfile.mkdtemp(prefix=f"harvester-shard-{spec.shard:05d}-")
    stop = Stop()
    done = threading.Event()
    watchers = [_watch_stop(spec.stop_event, stop, done), _test_kill(spec, attempt, done)]
    try:
        state = _local_state(spec, local)
        run = _run(spec, attempt, state, stop)
        done.set()
        manifest = _manifest(spec, attempt, run.as_dict(), state)
        status = "committed" if attempt.commit(manifest) else DISCARDED
        return {
            "shard": spec.shard,
            "attempt": attempt.token,
            "status": status,
            "manifest": manifest,
            "report": run.as_dict(parts=True),
        }
    except BaseException:
        attempt.discard()
        raise
    finally:
        done.set()
        for watcher in watchers:
            if watcher is not None:
                watcher.join(timeout=2)
        shutil.rmtree(local, ignore_errors=True)


@functools.cache
def _freeze_imports() -> None:
    """Once per worker process: what exists before its first shard out of GC's sight.

    As in the pool's worker processes (``runtime.tune_gc``): those objects (Dask's
    and harvester's modules, mostly) live as long as the process, and every full
    collection during a shard walked them again; a Dask worker has ~1.8 times a
    pool worker's (numpy, tornado, Dask's own state).
    """
    gc.collect()
    gc.freeze()


def _committed_state(spec: ShardSpec) -> str | None:
    """The shard's committed state file (None: it has none yet)."""
    previous = latest_manifest(spec.layout, spec.shard)
    if previous is None or not previous.get("state"):
        return None
    return os.path.join(spec.layout.shard_dir(spec.shard), previous["state"])


def _run(spec: ShardSpec, attempt: Attempt, state: str | None, stop: Stop) -> RunReport:
    """The shard's one-worker run, into the attempt's files (``state``: its local copy of
    the shard's state file, None without one)."""
    cfg = replace(
        spec.cfg,
        run=replace(spec.cfg.run, workers=1),
        state=replace(spec.cfg.state, path=state or "", resume=False),
    )
    with (
        open(spec.layout.seeds_path(spec.shard), encoding="utf-8") as lines,
        OCCUPANCY.attempt(cfg, spec.alone) as occupant,
    ):
        cross = FingerprintLog(spec.cfg.dedupe, attempt.fingerprints)
        try:
            return run_job(
                cfg,
                occupant.seeds(lines),
                attempt.records,
                report_path=attempt.report,
                hosts_path=attempt.hosts,
                progress=False,
                stop=stop,
                cross=cross,
                beside=Beside(occupant.run, occupant.admission),
            )
        except StateError as exc:  # name the shard's file, not the local copy
            raise StateError(
                f"shard {spec.shard:05d}: {exc.message}", url=_committed_state(spec)
            ) from exc
        finally:  # a run that raised before its writer closed it leaves the file open
            cross.close()


def _local_state(spec: ShardSpec, local: str) -> str | None:
    """The shard's state on local disk: a copy of the committed one (or a new file)."""
    if not spec.cfg.state.enabled:
        return None
    path = os.path.join(local, "state.sqlite")
    committed = _committed_state(spec)
    if committed is not None:
        shutil.copyfile(committed, path)
    return path


def _manifest(
    spec: ShardSpec, attempt: Attempt, report: dict[str, Any], state: str | None
) -> dict[str, Any]:
    """Finish the attempt's files (the state copied in) and describe them."""
    records = attempt.records if os.path.exists(attempt.records) else attempt.records + ".part"
    state_name = None
    if state is not None and os.path.exists(state):
        part = attempt.state + ".part"
        shutil.copyfile(state, part)
        fsync_file(part)
        os.replace(part, attempt.state)
        fsync_dir(spec.layout.shard_dir(spec.shard))
        state_name = os.path.basename(attempt.state)
    return {
        "shard": spec.shard,
        "run": spec.layout.run,
        "attempt": attempt.token,
        "records": os.path.basename(records),
        "records_bytes": _size(records),
        "format": attempt.fmt,
        "hosts": os.path.basename(attempt.hosts),
        "fingerprints": os.path.basename(attempt.fingerprints),
        "report": os.path.basename(attempt.report),
        "state": state_name,
        "complete": report["complete"],
        "interrupted": report["interrupted"],
        "urls": report["urls"],
        "hosts_done": report["hosts_done"],
        "worker": f"{socket.gethostname()}:{os.getpid()}",
    }


def _size(path: str) -> int:
    """Bytes of a file, or of the files of a directory (an unfinished Parquet ``.part``)."""
    if os.path.isdir(path):
        return sum(e.stat().st_size for e in os.scandir(path) if e.is_file())
    return os.path.getsize(path)


def _watch_stop(name: str | None, stop: Stop, done: threading.Event) -> threading.Thread | None:
    """A thread that sets ``stop`` once the run's Dask Event ``name`` is set."""
    if name is None:
        return None
    from distributed import Event, get_client

    # The worker's client, looked up here in the task's thread (the polling thread has
    # none of its own: an Event made without one fails there).
    event = Event(name, client=get_client())

    def poll() -> None:
        while not done.wait(_POLL):
            with contextlib.suppress(Exception):  # a scheduler hiccup: look again later
                if event.is_set():
                    stop.set()
                    return

    thread = threading.Thread(target=poll, name=f"harvester-stop-{name}", daemon=True)
    thread.start()
    return thread


def _test_kill(spec: ShardSpec, attempt: Attempt, done: threading.Event) -> threading.Thread | None:
    """TEST ONLY (``TEST_KILL_ENV``): SIGKILL this worker once the attempt wrote records."""
    directory = os.environ.get(TEST_KILL_ENV)
    if not directory or not os.path.exists(os.path.join(directory, "spec")):
        return None
    with open(os.path.join(directory, "spec"), encoding="utf-8") as fh:
        shard, times = map(int, fh.read().split())
    if shard != spec.shard:
        return None
    if sum(1 for n in os.listdir(directory) if n.startswith(f"kill-{shard}-")) >= times:
        return None

    def watch() -> None:
        part = attempt.records + ".part"
        while not done.wait(0.01):
            with contextlib.suppress(FileNotFoundError):
                if os.path.getsize(part) > 0:
                    marker = os.path.join(directory, f"kill-{shard}-{attempt.token}")
                    open(marker, "w").close()  # an empty marker file: one kill counted
                    os.kill(os.getpid(), signal.SIGKILL)

    thread = threading.Thread(target=watch, name="harvester-test-kill", daemon=True)
    thread.start()
    return thread
