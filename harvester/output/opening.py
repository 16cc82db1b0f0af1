"""Opening a run's output: the state file's run, and the sink it goes on with.

In: the config, the output path, the run report to note the state's run in.
Out: the sink, the state store, the workers' view of the state and a resumed
run's finished hosts (``open_output``). ``writer.Writer`` then takes what the
shards send.

What a resumed run does with its output, by what the state says and what is
on disk (``state/lifecycle.py`` has the statuses):

* stopped while ``publishing``: every record was written and committed. Its
  temporary file is renamed now if it is still there; if the output is there
  already, only the state was behind. Either way nothing is harvested again
  (``open_output`` returns no sink). If neither is there, its output was lost.
* running, interrupted or failed, its ``OUT.part`` holding what the state
  committed: cut back to that and continued (``formats.py``), or, when this
  invocation writes another output, cut back and left, the run going on in the
  new one (of any format: no file mixes two).
* its ``OUT.part`` missing or shorter than what the state committed: the records
  the state says were written are not on disk. The run says so and starts over
  (``StateStore.redo``): every URL of the lost output is written again, with the
  events it had (``--emit new`` gives the same new URLs again).

An ``-o`` that names a directory is refused before the state file is opened: the
run would fail only when it renames its output, after the whole harvest. A
missing parent directory is created (as Scrapy's feed exports do), or, when it
cannot be, refused naming it.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from harvester.errors import ConfigError
from harvester.output.formats import output_sink, resolve_format
from harvester.output.parts import cut_back, discard, holds, publish_leftover
from harvester.output.remote import is_remote
from harvester.output.sink import JsonlSink
from harvester.state.ledger import Incremental
from harvester.state.runs import default_state_path
from harvester.state.store import StateStore

if TYPE_CHECKING:
    from harvester.config import Config
    from harvester.output.formats import Sink
    from harvester.output.report import RunReport
    from harvester.state.runs import FinishedHosts, RunInfo

__all__ = ["check_output", "open_output", "open_sink", "open_state"]


def check_output(output: str) -> None:
    """Create ``output``'s missing parent directories; refuse (``ConfigError``, exit 2) an
    output path that can never take the output (a directory, an uncreatable parent)."""
    if output == "-":
        return
    if is_remote(output):  # a run writes local files; the CLI stages and publishes a URL
        raise ConfigError(
            f"-o {output}: a run writes to a local path; the harvester command publishes to"
            " object storage (output/remote.py), or publish a local output with Remote.publish",
            key="output",
        )
    if os.path.isdir(output):
        raise ConfigError(
            f"-o {output} is a directory: give the path of a file (say {output}/urls.jsonl)",
            key="output",
        )
    parent = os.path.dirname(os.path.abspath(output))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"-o {output}: cannot create the directory {parent}: {exc.strerror}", key="output"
        ) from None


def open_state(cfg: Config, output: str) -> StateStore | None:
    """Open (lock, migrate) the state file and start or resume its run; None without state."""
    emit = cfg.output.emit
    path = cfg.state.path or default_state_path(output) if cfg.state.enabled else None
    if path is None:
        if emit != "all":
            raise ConfigError(
                f"--emit {emit} needs a state file: give --state PATH (or an output file)",
                key="output.emit",
            )
        return None
    store = StateStore(path)
    try:
        fmt = resolve_format(output, cfg.output.format)
        info = store.start_run(emit=emit, output=output, resume=cfg.state.resume, fmt=fmt)
        if info.resumed and info.emit != emit:
            _say(f"resuming run {info.id} with its own --emit {info.emit} (not {emit})")
        elif info.resumed:
            _say(f"resuming unfinished run {info.id}")
    except BaseException:
        store.close()
        raise
    return store


def open_sink(output: str, store: StateStore | None, cfg: Config | None = None) -> Sink:
    """The output sink (format from ``cfg.output``; JSON Lines without ``cfg``); a resumed
    run continues (cut back to what the state committed), or starts over when the
    output it committed is lost (the module docstring says which)."""
    run = store.run if store is not None else None
    fmt = resolve_format(output, cfg.output.format) if cfg is not None else "jsonl"

    def sink(resume_at: int | None = None) -> Sink:
        return (
            output_sink(cfg, output, resume_at) if cfg else JsonlSink(output, resume_at=resume_at)
        )

    if store is None or run is None or not run.resumed or run.output in (None, "-"):
        return sink()
    assert run.output is not None
    part = run.output + ".part"
    if not holds(part, run.output_bytes, parquet=_parquet(run, part)):
        _say(
            f"WARNING: run {run.id} had committed records to {run.output}, but {part} is"
            " missing or shorter than committed: that output is lost. The run starts over"
            " from the state the last complete run left, and writes its records again."
        )
        discard(part)  # what is left of it (torn): its records are all written again
        store.redo(output)
        return sink()
    if run.output != output:
        # Another output this time: cut the interrupted run's file (or Parquet parts) back
        # to its committed records, so the two outputs together hold each URL once.
        cut_back(part, run.output_bytes)
        store.switch_output(output, fmt)
        return sink()
    if run.format is None and os.path.exists(part) and os.path.isdir(part) != (fmt == "parquet"):
        # (A run begun before the format was stored: what is on disk says which it was.)
        raise ConfigError(
            f"the run to resume wrote {output}.part in another format: give its --format"
            " again, or --no-resume",
            key="output.format",
        )
    return sink(run.output_bytes)


def _parquet(run: RunInfo, part: str) -> bool:
    """Whether ``run`` writes Parquet (a run from before schema 5: its ``.part`` says)."""
    return run.format == "parquet" if run.format is not None else os.path.isdir(part)


def finish_publishing(store: StateStore, output: str) -> bool:
    """For a run stopped while ``publishing``: publish what it left; True when its output
    is published now (nothing to harvest), False when it was lost (the run starts over).
    """
    run = store.run
    assert run is not None
    recorded = run.output
    if recorded in (None, "-"):
        published = True  # standard output: nothing to rename
    else:
        assert recorded is not None
        published = publish_leftover(recorded, parquet=_parquet(run, recorded + ".part"))
    if published:
        _say(
            f"run {run.id} had written all its records and was stopped while publishing"
            f" {recorded}: it is published now, nothing was harvested again"
        )
        return True
    _say(
        f"WARNING: run {run.id} was stopped while publishing {recorded}, and neither it nor"
        f" {recorded}.part is there: that output is lost. The run starts over from the state"
        " the last complete run left, and writes its records again."
    )
    store.redo(output)
    return False


def open_output(
    cfg: Config, output: str, run: RunReport
) -> tuple[Sink | None, StateStore | None, Incremental | None, FinishedHosts | None]:
    """Open a run's state file and output; note the state's run in ``run``.

    Returns the sink, the state store, the workers' read-only view of the state
    (``Incremental``) and, for a resumed run, the hosts it already finished (the
    last three None without a state file). The sink is None for a run that was
    stopped while publishing and is published now (``finish_publishing``): there
    is nothing to harvest. Nothing is left open when it raises.
    """
    check_output(output)
    store = open_state(cfg, output)
    incremental: Incremental | None = None
    finished: FinishedHosts | None = None
    try:
        publishing = (
            store is not None and store.run is not None and store.run.status == "publishing"
        )
        sink: Sink | None = None
        if not (publishing and store is not None and finish_publishing(store, output)):
            sink = open_sink(output, store, cfg)
        if store is not None:
            assert store.run is not None
            incremental = Incremental(store.path, store.run.id, store.run.emit)
            run.state = store.path
            run.run_id = store.run.id
            run.resumed = store.run.resumed
            if store.run.resumed and sink is not None:
                finished = store.finished_hosts()
    except BaseException:
        if store is not None:
            store.close()
        raise
    return sink, store, incremental, finished


def _say(text: str) -> None:
    print(f"harvester: {text}", file=sys.stderr)
