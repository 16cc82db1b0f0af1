"""Sink stage, formats: which output format a run writes, and the sink that writes it.

In: the output path, ``output.format`` (``""``: from the path's extension) and a
resume mark. Out: a ``Sink``: ``sink.JsonlSink`` (JSON Lines, the default),
``csvsink.CsvSink`` or ``parquetsink.ParquetSink``. Every sink takes the same
blocks of encoded JSON lines (what the workers send), writes through
``OUT.part`` and renames it when the run completes, and has a ``mark``: what
``sync`` made durable, which a state commit stores and a resumed run cuts the
``.part`` back to (bytes for JSON Lines and CSV, complete parts for Parquet).

Example::

    fmt = resolve_format("urls.parquet", "")          # "parquet"
    sink = make_sink("urls.parquet", fmt, resume_at=None, row_group_rows=65536)
    sink.write(encode_records(batch))
    sink.close(complete=True)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Literal, Protocol

from harvester.errors import ConfigError
from harvester.output.sink import JsonlSink
from harvester.version import install_hint

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvester.config import Config

__all__ = [
    "FORMATS",
    "Format",
    "Sink",
    "block_encoder",
    "make_sink",
    "output_sink",
    "resolve_format",
    "resolved",
]

Format = Literal["jsonl", "csv", "parquet"]
FORMATS: tuple[Format, ...] = ("jsonl", "csv", "parquet")
_EXTENSIONS: dict[str, Format] = {".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet"}


class Sink(Protocol):
    """What the run's writer writes records to (``writer.Writer``)."""

    @property
    def records(self) -> int:
        """Records written so far."""
        ...

    @property
    def mark(self) -> int:
        """The resume mark of what is written (durable after ``sync``)."""
        ...

    def write(self, data: bytes | bytearray | memoryview, records: int | None = None) -> None:
        """Take a block of complete JSON lines, ``records`` of them when the caller knows."""
        ...

    def write_encoded(
        self, data: bytes | bytearray | memoryview, records: int | None = None
    ) -> None:
        """Take a block that ``block_encoder`` of this format made (JSON lines if none)."""
        ...

    def sync(self) -> None:
        """Make everything written so far durable (before a state commit stores ``mark``)."""
        ...

    def prepare(self) -> None:
        """Make the whole output durable under its temporary name (no more writes)."""
        ...

    def publish(self) -> None:
        """Rename the prepared output to its final name, durably (after ``prepare``)."""
        ...

    def close(self, *, complete: bool) -> None:
        """Finish; ``complete`` publishes the output under its final name (``prepare``, then
        ``publish``); otherwise the ``.part`` stays. A no-op once closed."""
        ...


def resolve_format(path: str, fmt: str) -> Format:
    """The format a run writes: ``fmt`` when given, else by the extension of ``path``
    (``.jsonl``, ``.csv``, ``.parquet``, any case), else JSON Lines.

    >>> resolve_format("urls.CSV", ""), resolve_format("urls.txt", ""), resolve_format("-", "csv")
    ('csv', 'jsonl', 'csv')
    """
    for name in FORMATS:
        if fmt == name:
            return name
    if fmt:
        raise ConfigError(f"unknown format {fmt!r} (jsonl, csv or parquet)", key="output.format")
    lower = path.lower()
    for ext, name in _EXTENSIONS.items():
        if lower.endswith(ext):
            return name
    return "jsonl"


def make_sink(path: str, fmt: Format, *, resume_at: int | None, row_group_rows: int) -> Sink:
    """The sink of format ``fmt`` writing to ``path`` (``-``: stdout, not for Parquet).

    ``resume_at``: the committed mark of an interrupted run to continue. Raises
    ``ConfigError`` (exit 2) for Parquet to stdout or without pyarrow installed.
    """
    if fmt == "csv":
        from harvester.output.csvsink import CsvSink

        return CsvSink(path, resume_at=resume_at)
    if fmt == "parquet":
        if path == "-":
            raise ConfigError(
                "Parquet cannot go to standard output: give -o FILE.parquet", key="output.format"
            )
        try:
            from harvester.output.parquetsink import ParquetSink
        except ImportError as exc:
            raise ConfigError(
                f"--format parquet needs pyarrow ({exc}): {install_hint('parquet')}",
                key="output.format",
            ) from exc
        return ParquetSink(path, resume_at=resume_at, row_group_rows=row_group_rows)
    return JsonlSink(path, resume_at=resume_at)


def block_encoder(fmt: str) -> Callable[[bytes | bytearray], bytes] | None:
    """What a worker process makes of its JSON-lines blocks before sending them, or None.

    CSV: the rows (``csvsink.csv_rows``), so the conversion is spread over the
    workers instead of loading the one writer process (with two workers it made the
    run writer-bound: benchmarks/README.md). JSON Lines needs none; Parquet is
    converted by the writer (pyarrow's JSON reader, a few µs a record).
    """
    if fmt == "csv":
        from harvester.output.csvsink import csv_rows

        return csv_rows
    return None


def resolved(cfg: Config, path: str) -> Config:
    """``cfg`` with ``output.format`` resolved for ``path`` (what worker processes get)."""
    fmt = resolve_format(path, cfg.output.format)
    if fmt == cfg.output.format:
        return cfg
    return dataclasses.replace(cfg, output=dataclasses.replace(cfg.output, format=fmt))


def output_sink(cfg: Config, path: str, resume_at: int | None = None) -> Sink:
    """``make_sink`` with the run's config (``output.format``, ``output.row_group_rows``)."""
    fmt = resolve_format(path, cfg.output.format)
    return make_sink(path, fmt, resume_at=resume_at, row_group_rows=cfg.output.row_group_rows)
