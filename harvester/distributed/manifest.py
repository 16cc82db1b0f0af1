"""A shard attempt's files and its commit: the manifest, published first-writer-wins.

In: the layout, a shard, a finished attempt's files. Out: ``MANIFEST.rK.json`` of the
shard (the commit), or the attempt's files deleted when another attempt committed
first; ``sweep`` deletes what no manifest names; ``committed`` reads the manifests.

The commit protocol, for storage shared by many machines (a local disk, NFS, a
cluster filesystem that has POSIX ``link``):

1. the attempt writes its files under names of its own (``ATTEMPT.jsonl``, ``.csv``
   or ``.parquet`` as the run's format says, ``ATTEMPT.hosts.ndjson``, ...),
   fsyncs them and renames each from its ``.part`` name (``shards.run_job`` does
   that for the records, host reports and report; the state file is copied here);
2. it writes its manifest to ``ATTEMPT.manifest.part`` and fsyncs it;
3. ``os.link(ATTEMPT.manifest.part, MANIFEST.rK.json)``: atomic, and it never
   replaces an existing name. ``EEXIST``: another attempt of the shard (a retry
   that overtook a zombie, or the zombie itself) committed; this one deletes its
   files. A manifest is never written in place, so a reader sees a whole one or none.

Readers (``harvester merge``, the next run, the client's cross-host count) use
only the files a manifest names.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvester.output.parts import fsync_dir

if TYPE_CHECKING:
    from harvester.distributed.layout import Layout

__all__ = ["DISCARDED", "Attempt", "committed", "latest_manifest", "read_manifest", "sweep"]

DISCARDED = "duplicate attempt discarded"
_MANIFEST = re.compile(r"MANIFEST\.r(\d+)\.json")
# The manifest's fields that name files of the shard directory.
FILE_FIELDS = ("records", "hosts", "fingerprints", "report", "state")


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt at one shard of one run: the names of its files, its commit."""

    layout: Layout
    shard: int
    token: str  # rK-<random>: unique to the attempt, so attempts never share a file
    fmt: str = "jsonl"  # the records' format, and their file's extension

    @classmethod
    def new(cls, layout: Layout, shard: int, fmt: str = "jsonl") -> Attempt:
        """A fresh attempt writing records of format ``fmt`` (its shard directory created)."""
        os.makedirs(layout.shard_dir(shard), exist_ok=True)
        return cls(layout, shard, f"r{layout.run}-{uuid.uuid4().hex[:12]}", fmt)

    def path(self, suffix: str) -> str:
        """The attempt's file ending in ``suffix`` (``.parquet``, ``.hosts.ndjson``, ...)."""
        return os.path.join(self.layout.shard_dir(self.shard), self.token + suffix)

    @property
    def records(self) -> str:
        """The records file, ``TOKEN.jsonl``, ``.csv`` or ``.parquet`` (``.part`` while
        being written: a file, or Parquet's directory of parts)."""
        return self.path("." + self.fmt)

    @property
    def hosts(self) -> str:
        """The per-host report lines: ``.ndjson``, so that no glob of the records
        (``out/**/*.jsonl``) takes them for records."""
        return self.path(".hosts.ndjson")

    @property
    def fingerprints(self) -> str:
        """The fingerprint log of the records (``fingerprints.py``)."""
        return self.path(".fps")

    @property
    def report(self) -> str:
        """The shard's run report (JSON)."""
        return self.path(".report.json")

    @property
    def state(self) -> str:
        """The shard's new state file (copied from local disk at the commit)."""
        return self.path(".sqlite")

    def own_files(self) -> list[str]:
        """Every file of the attempt that exists (whatever stage it reached)."""
        directory = self.layout.shard_dir(self.shard)
        with contextlib.suppress(FileNotFoundError):
            return [
                os.path.join(directory, name)
                for name in os.listdir(directory)
                if name.startswith(self.token + ".")
            ]
        return []

    def discard(self) -> None:
        """Delete every file of the attempt (and Parquet's ``.part`` directory)."""
        for path in self.own_files():
            remove(path)

    def commit(self, manifest: dict[str, Any]) -> bool:
        """Publish ``manifest`` as the shard's commit of this run; False (and this
        attempt's files deleted) when another attempt had committed first.
        """
        temp = self.path(".manifest.part")
        with open(temp, "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=2)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(temp, self.layout.manifest_path(self.shard))
        except FileExistsError:
            self.discard()
            return False
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
        fsync_dir(self.layout.shard_dir(self.shard))
        return True


def remove(path: str) -> None:
    """Delete a file, or a directory with what it holds (a killed Parquet attempt's
    ``.part``); nothing there is fine."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def read_manifest(layout: Layout, shard: int, run: int | None = None) -> dict[str, Any] | None:
    """Run ``run``'s (default: the layout's) manifest of ``shard``; None if not committed."""
    try:
        with open(layout.manifest_path(shard, run), encoding="utf-8") as fh:
            data: dict[str, Any] = json.load(fh)
    except FileNotFoundError:
        return None
    return data


def latest_manifest(layout: Layout, shard: int) -> dict[str, Any] | None:
    """The newest manifest of ``shard``, of any run (None: it never committed)."""
    runs = _manifest_runs(layout.shard_dir(shard))
    return read_manifest(layout, shard, max(runs)) if runs else None


def _manifest_runs(directory: str) -> list[int]:
    with contextlib.suppress(FileNotFoundError):
        return [int(m[1]) for name in os.listdir(directory) if (m := _MANIFEST.fullmatch(name))]
    return []


def committed(layout: Layout) -> list[tuple[int, dict[str, Any]]]:
    """(shard, manifest) of every shard this run committed, in shard order."""
    out = []
    for shard in range(layout.shards):
        manifest = read_manifest(layout, shard)
        if manifest is not None:
            out.append((shard, manifest))
    return out


def sweep(layout: Layout, shard: int) -> list[str]:
    """Delete the shard's files that its newest manifest does not name (older manifests
    included); return their names.

    Safe while a zombie attempt still runs: it cannot commit over the newest manifest of
    this run, and a zombie of an older run links a name no reader of this run reads.
    """
    directory = layout.shard_dir(shard)
    runs = _manifest_runs(directory)
    keep: set[str] = set()
    if runs:
        newest = f"MANIFEST.r{max(runs)}.json"
        keep.add(newest)
        manifest = read_manifest(layout, shard, max(runs)) or {}
        keep.update(str(manifest[f]) for f in FILE_FIELDS if manifest.get(f))
    removed = []
    with contextlib.suppress(FileNotFoundError):
        for name in sorted(os.listdir(directory)):
            if name not in keep:
                remove(os.path.join(directory, name))
                removed.append(name)
    return removed
