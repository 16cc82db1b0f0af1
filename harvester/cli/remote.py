"""``harvester run -o s3://bucket/prefix/``: a run into object storage (any fsspec URL).

In: the parsed ``run`` arguments with an ``-o`` URL, the config, the command that
runs into a local path (``run.command``). Out: the run made in the URL's local stage
directory (``output/remote.py``), then, when it finished (exit 0), its files
published under the URL; the exit status. An interrupted or failed run publishes
nothing (its files stay staged: the next run resumes there).

A distributed run: ``--scheduler local`` stages its output directory the same way
(its workers share this machine's disk) and publishes each committed shard's
records as ``part-NNNNN.FMT``; a remote scheduler (``tcp://``) needs storage every
machine shares, so an ``-o`` URL is refused there with a hint.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from harvester.cli.exits import EXIT_OK, EXIT_USAGE, JOB_ERRORS, fail

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from harvester.config import Config
    from harvester.output.formats import Format

__all__ = ["command"]


def command(
    ns: argparse.Namespace, cfg: Config, run: Callable[[argparse.Namespace, Config], int]
) -> int:
    """``run(ns, cfg)``; for an ``-o`` URL, into its stage directory, published when the
    run exits 0. Returns the exit status."""
    from harvester.output.remote import is_remote

    if not is_remote(ns.output):
        return run(ns, cfg)
    return _staged(ns, cfg, run)


def _staged(
    ns: argparse.Namespace, cfg: Config, run: Callable[[argparse.Namespace, Config], int]
) -> int:
    """Run into the URL's stage directory with ``run``; publish when it exits 0."""
    from harvester.output.formats import resolve_format
    from harvester.output.remote import remote_target, stage_dir

    url = ns.output
    scheduler = cfg.distributed.scheduler or ""
    distributed = bool(scheduler or cfg.distributed.scheduler_file)
    if distributed and (scheduler.partition(":")[0] != "local" or cfg.distributed.scheduler_file):
        print(
            f"harvester run: -o {url} works with --scheduler local only; on a cluster give"
            " -o a directory every machine shares, then copy it to the store"
            " (or run one --scheduler local per machine, each to its own prefix)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        fmt = resolve_format(url.rstrip("/"), cfg.output.format)
        remote, name = remote_target(url, fmt)
        if distributed and not remote.prefix:
            raise _usage(f"-o {url}: a distributed run writes a prefix: end the URL with /")
        stage = stage_dir(url)
        os.makedirs(stage, exist_ok=True)
        local = stage if distributed else os.path.join(stage, name)
        ns.output = local
        if ns.report is None and not distributed:
            ns.report = os.path.join(stage, "report.json")
        if not cfg.output.format:  # the URL named the format; the local name may not
            cfg = _with_format(cfg, fmt)
        status = run(ns, cfg)
        if status != EXIT_OK:
            return status
        print(f"harvester: publishing {url}", file=sys.stderr)
        _publish(remote, stage, local, name, distributed=distributed)
    except JOB_ERRORS as exc:
        return fail("run", exc)
    finally:
        ns.output = url
    return EXIT_OK


def _publish(remote: object, stage: str, local: str, name: str, *, distributed: bool) -> None:
    """Upload what the finished run wrote (``output/remote.py`` commits it)."""
    from harvester.output.remote import Remote

    assert isinstance(remote, Remote)
    if distributed:
        from harvester.distributed.layout import read_layout
        from harvester.distributed.manifest import committed

        layout = read_layout(stage)
        assert layout is not None
        data = [
            (path, f"part-{shard:05d}{os.path.splitext(path)[1]}")
            for shard, manifest in committed(layout)
            if (path := os.path.join(layout.shard_dir(shard), manifest["records"]))
        ]
        extra = [(layout.report_path, "report.json")]
        crosshost = os.path.join(stage, "crosshost.ndjson")
        extra += [(crosshost, "crosshost.ndjson")] if os.path.exists(crosshost) else []
    else:
        data = [(local, name)]
        report = os.path.join(stage, "report.json")
        hosts = os.path.join(stage, "report.hosts.jsonl")
        extra = [(p, n) for p, n in ((report, "report.json"), (hosts, "hosts.ndjson"))]
        extra = [(p, n) for p, n in extra if os.path.exists(p)]
    try:
        remote.publish(data, extra)
    except OSError:
        raise
    except Exception as exc:  # the store's client errors (botocore's are not OSErrors)
        raise OSError(f"upload to {remote.url} failed: {type(exc).__name__}: {exc}") from exc


def _usage(message: str) -> Exception:
    from harvester.errors import ConfigError

    return ConfigError(message, key="output")


def _with_format(cfg: Config, fmt: Format) -> Config:
    import dataclasses

    return dataclasses.replace(cfg, output=dataclasses.replace(cfg.output, format=fmt))
