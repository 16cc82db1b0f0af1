"""Sink stage, concatenation: several finished outputs of one format as one output.

In: the paths of finished record files (a distributed run's committed shards, in
order), their format, the output path and the format to write. Out: one output
written through ``OUT.part`` and renamed when whole (``-``: stdout, not Parquet);
returns the bytes written.

* the same format: copied as it is; JSON Lines by whole lines, CSV without the
  header of every file but the first (so exactly one header, even for no file),
  Parquet row group by row group (no JSON on the way);
* JSON Lines into CSV or Parquet: the lines go through that format's sink, as a
  run's records do;
* CSV or Parquet into another format: refused (``ConfigError``): they do not hold
  the JSON records the other sinks take, and a second format of the same run is
  one ``duckdb`` or ``pyarrow`` call away.

Example::

    concat(["a.parquet", "b.parquet"], "parquet", "all.parquet", "parquet")
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from harvester.errors import ConfigError
from harvester.output.formats import make_sink
from harvester.output.parts import fsync_file, publish_file
from harvester.output.sink import JsonlSink
from harvester.version import install_hint

if TYPE_CHECKING:
    from collections.abc import Iterator

    from harvester.output.formats import Format, Sink

__all__ = ["concat"]

_COPY = 1 << 20  # bytes per read while concatenating
_ROW_GROUP = 65536  # rows per row group when JSON Lines become Parquet


def concat(paths: list[str], src: Format, output: str, dst: Format) -> int:
    """Write the records of ``paths`` (files of format ``src``) to ``output`` as ``dst``.

    Returns the bytes written. Raises ``ConfigError`` for a conversion it does not
    make (module docstring) or Parquet to stdout, ``OSError`` when a file cannot be
    read or written (the ``.part`` then stays, never the final name).
    """
    if src == dst == "parquet":
        return _parquet(paths, output)
    if src != dst and src != "jsonl":
        raise ConfigError(
            f"the shards wrote {src}: merge them into {src} (-o FILE.{src} or --format {src});"
            f" read them as one dataset to convert (duckdb, pyarrow.dataset)",
            key="output.format",
        )
    sink: Sink = (
        make_sink(output, dst, resume_at=None, row_group_rows=_ROW_GROUP)
        if dst != "jsonl" or src != "jsonl"
        else JsonlSink(output)
    )
    try:
        for path in paths:
            for block, lines in _blocks(path, skip_header=src == "csv"):
                if src == dst:
                    sink.write_encoded(block, lines)
                else:
                    sink.write(block, lines)
    except BaseException:
        sink.close(complete=False)
        raise
    sink.close(complete=True)
    return os.path.getsize(output) if dst == "parquet" else sink.mark


def _blocks(path: str, *, skip_header: bool) -> Iterator[tuple[bytes, int]]:
    """The file's whole lines in blocks of about ``_COPY`` bytes, and their count (the
    first line left out with ``skip_header``: a CSV file's header row)."""
    with open(path, "rb") as fh:
        if skip_header:
            fh.readline()
        while lines := fh.readlines(_COPY):
            yield b"".join(lines), len(lines)


def _parquet(paths: list[str], output: str) -> int:
    """Parquet files into one, row group by row group, through ``output.part``."""
    if output == "-":
        raise ConfigError(
            "Parquet cannot go to standard output: give -o FILE.parquet", key="output.format"
        )
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ConfigError(
            f"merging Parquet needs pyarrow ({exc}): {install_hint('parquet')}",
            key="output.format",
        ) from exc
    from harvester.output.parquetsink import SCHEMA

    temp = output + ".part"
    writer = None
    try:
        for path in paths:
            with pq.ParquetFile(path) as file:
                if writer is None:
                    writer = pq.ParquetWriter(temp, file.schema_arrow, compression="zstd")
                for group in range(file.num_row_groups):
                    table = file.read_row_group(group)
                    if table.num_rows:
                        writer.write_table(table)
        if writer is None:  # no shard at all: an empty file with the schema
            pq.write_table(SCHEMA.empty_table(), temp, compression="zstd")
        else:
            writer.close()
        fsync_file(temp)
    except BaseException:
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    publish_file(temp, output)
    return os.path.getsize(output)
