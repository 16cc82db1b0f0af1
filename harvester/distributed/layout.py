"""The output directory of a distributed run: its fixed shard count, paths, and seed files.

In: the output directory, the shard count and shard key asked for, the input lines.
Out: a ``Layout`` (the shard count and key stored in ``out/harvester.json`` on the
directory's first run and fixed from then on, so a host maps to the same shard, and
the same slice of the state, on every run; the run number, one more each run) and
the per-shard seed files the tasks read (``split_seeds``).

No Dask here: the client and the tasks both use it, and so does ``harvester merge``.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvester.errors import ConfigError, InputError
from harvester.output.parts import fsync_dir, write_atomic
from harvester.run.seeds import SeedReader, shard_of

if TYPE_CHECKING:
    from collections.abc import Iterable

    from harvester.crawl.seed import Seed

__all__ = [
    "LAYOUT_FILE",
    "Layout",
    "SeedSplit",
    "check_layout",
    "open_layout",
    "read_layout",
    "seed_line",
    "shard_key",
    "split_seeds",
]

LAYOUT_FILE = "harvester.json"
_MAX_INVALID_SHOWN = 20  # invalid input lines told on stderr (the report counts all)
_CUT_BUFFER = 4 << 20  # characters of seed lines the cut holds before writing them out


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a distributed run's files are, for ``run`` (the number of this run)."""

    root: str
    shards: int
    shard_by: str
    run: int

    def shard_dir(self, shard: int) -> str:
        """``out/shards/NNNNN``: the attempt files and manifests of one shard."""
        return os.path.join(self.root, "shards", f"{shard:05d}")

    def seeds_path(self, shard: int) -> str:
        """``out/seeds/NNNNN.txt``: this run's seeds of one shard, one line each."""
        return os.path.join(self.root, "seeds", f"{shard:05d}.txt")

    def manifest_path(self, shard: int, run: int | None = None) -> str:
        """``out/shards/NNNNN/MANIFEST.rK.json``: run K's commit of the shard."""
        return os.path.join(self.shard_dir(shard), f"MANIFEST.r{run or self.run}.json")

    @property
    def success_path(self) -> str:
        """``out/_SUCCESS``: present once every shard of the run committed or failed."""
        return os.path.join(self.root, "_SUCCESS")

    @property
    def report_path(self) -> str:
        """``out/report.json``: the merged run report."""
        return os.path.join(self.root, "report.json")


def read_layout(root: str) -> Layout | None:
    """The layout stored in ``root`` (None when it holds none yet).

    Raises ``ConfigError`` when ``harvester.json`` is not what a run wrote.
    """
    path = os.path.join(root, LAYOUT_FILE)
    try:
        with open(path, encoding="utf-8") as fh:
            data: dict[str, Any] = json.load(fh)
        return Layout(root, int(data["shards"]), str(data["shard_by"]), int(data["run"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path} is not a harvester layout file ({exc!r})") from exc


def check_layout(root: str, shards: int, shard_by: str) -> Layout | None:
    """The layout stored in ``root`` (None: none yet), checked against what is asked.

    ``shards`` (0: keep what is stored) and ``shard_by`` must match what the
    directory's first run stored; a different value is a ``ConfigError`` (hosts
    would move to other shards and lose their state).
    """
    old = read_layout(root)
    if old is not None:
        if shards and shards != old.shards:
            raise ConfigError(
                f"{root} was cut into {old.shards} shards on its first run; --shards {shards}"
                " would move hosts away from their state: use a new output directory",
                key="distributed.shards",
            )
        if shard_by != old.shard_by:
            raise ConfigError(
                f"{root} shards by {old.shard_by}, not {shard_by}", key="distributed.shard_by"
            )
    return old


def open_layout(root: str, shards: int, shard_by: str) -> Layout:
    """Start a new run in ``root``: its layout with the run number advanced (and stored).

    Raises ``ConfigError`` as ``check_layout`` does, or for a shard count below 1.
    """
    old = check_layout(root, shards, shard_by)
    if old is not None:
        shards = old.shards
    if shards < 1:
        raise ConfigError("must be at least 1", key="distributed.shards")
    layout = Layout(root, shards, shard_by, (old.run if old else 0) + 1)
    os.makedirs(os.path.join(root, "shards"), exist_ok=True)
    os.makedirs(os.path.join(root, "seeds"), exist_ok=True)
    data = {"shards": layout.shards, "shard_by": layout.shard_by, "run": layout.run}
    write_atomic(os.path.join(root, LAYOUT_FILE), json.dumps(data, indent=2) + "\n")
    return layout


def shard_key(host: str, shard_by: str) -> str:
    """What a host is sharded by: itself, or its registrable domain (``shard_by="domain"``)."""
    if shard_by == "domain":
        from harvester.crawl.discovery import registrable_domain

        return registrable_domain(host)
    return host


def seed_line(seed: Seed) -> str:
    """An input line that parses back into ``seed`` (its line number aside)."""
    if seed.sitemap:
        return seed.sitemap
    if seed.robots:
        return seed.robots
    return seed.origin if seed.explicit_scheme else seed.host


@dataclass(slots=True)
class SeedSplit:
    """What ``split_seeds`` read: seeds per shard, invalid and duplicate input lines."""

    per_shard: list[int]
    invalid: int = 0
    duplicates: int = 0


def split_seeds(lines: Iterable[str], layout: Layout) -> SeedSplit:
    """Cut the input into ``out/seeds/NNNNN.txt`` (each written whole, then renamed).

    One pass over the input, lazily. Invalid lines are told on stderr (the first 20)
    and counted; duplicate hosts are dropped here, so each shard's file lists each of
    its hosts once. Any shard count works: the lines wait in per-shard buffers (about
    ``_CUT_BUFFER`` characters in all) that are appended to their files one file at a time,
    so the cut holds one open file, not one per shard (which ran into the process's
    open-file limit at ~1,000 shards).
    """
    reader = SeedReader(lines)
    split = SeedSplit([0] * layout.shards)
    cut = _ShardFiles([f"{layout.seeds_path(n)}.part" for n in range(layout.shards)])
    for item in reader:
        if isinstance(item, InputError):
            if reader.invalid <= _MAX_INVALID_SHOWN:
                print(f"harvester: skipped input {item.message}", file=sys.stderr)
            continue
        shard = shard_of(shard_key(item.host, layout.shard_by), layout.shards)
        cut.add(shard, seed_line(item) + "\n")
        split.per_shard[shard] += 1
    cut.close()
    for shard in range(layout.shards):
        os.replace(f"{layout.seeds_path(shard)}.part", layout.seeds_path(shard))
    fsync_dir(os.path.dirname(layout.seeds_path(0)))
    split.invalid = reader.invalid
    split.duplicates = reader.duplicates
    return split


class _ShardFiles:
    """Lines appended to many files with one open at a time: buffered per file, and
    every buffer written out (each file opened, appended to, closed) once they hold
    ``_CUT_BUFFER`` characters between them. ``close`` writes the rest and fsyncs each file.

    So a cut into S shards opens about S files per ``_CUT_BUFFER`` of input, plus S at
    the end, whatever S is.
    """

    def __init__(self, paths: list[str]) -> None:
        self._paths = paths
        self._lines: list[list[str]] = [[] for _ in paths]  # per file: lines not written
        self._size = 0  # characters buffered over all files
        self._started = [False] * len(paths)  # truncated by this cut (a stale .part is not)

    def add(self, index: int, line: str) -> None:
        """Append ``line`` to file ``index`` (written out later)."""
        self._lines[index].append(line)
        self._size += len(line)
        if self._size >= _CUT_BUFFER:
            for n in range(len(self._paths)):
                if self._lines[n]:
                    self._write(n, sync=False)
            self._size = 0

    def close(self) -> None:
        """Write every buffer out and make each file durable (empty ones created)."""
        for n in range(len(self._paths)):
            self._write(n, sync=True)
        self._size = 0

    def _write(self, index: int, *, sync: bool) -> None:
        mode = "a" if self._started[index] else "w"
        with open(self._paths[index], mode, encoding="utf-8") as fh:
            fh.writelines(self._lines[index])
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        self._started[index] = True
        self._lines[index].clear()
