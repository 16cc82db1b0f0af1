"""Sink stage, Parquet: the run's records as one Parquet file with a fixed schema.

In: blocks of encoded JSON lines (what the workers send, ``urls.records.encode_records``).
Out: ``OUT.parquet``, written through ``OUT.parquet.part/``, a directory of
complete Parquet files (``part-000000.parquet``, ...), and assembled into one
file of ``row_group_rows`` row groups when the run completes (a single part is
just renamed).

Why parts: a Parquet file is readable only once its footer is written, so it
cannot be cut back to a committed length as JSON Lines can. Each state commit
(``sync``) closes the part being written (footer, fsync), so what a commit
covers is a number of complete parts: that number is the resume mark. A resumed
run deletes the parts past it and goes on with the next one. An interrupted run
leaves ``OUT.parquet.part/`` with complete parts only (after ``kill -9``, the
last one may be torn: the resume deletes it), readable as one dataset
(``'OUT.parquet.part/*.parquet'``).

Memory is bounded whatever the run size: at most about one row group is
buffered (the JSON is converted by pyarrow's JSON reader, block by block), and
assembling streams one row group at a time.

Needs pyarrow (``pip install "harvester-sitemaps[parquet]"``); ``formats.make_sink``
imports this module only for ``--format parquet``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

from harvester.errors import RunFailed
from harvester.output.parts import (
    ASSEMBLED,
    cut_parts,
    fsync_dir,
    fsync_file,
    list_parts,
    part_name,
    publish_file,
    remove_parts,
)

if TYPE_CHECKING:
    import io
    from collections.abc import Iterator

__all__ = ["SCHEMA", "ParquetSink"]

_STR = pa.string()
_TS = pa.timestamp("us", tz="UTC")
_STRINGS = pa.list_(_STR)
_DICT = pa.dictionary(pa.int32(), _STR)

# The output schema (README, "Parquet"): one column per record field, every one
# nullable; absent extension fields are null. Field names are the JSON record's.
SCHEMA = pa.schema(
    [
        ("loc", _STR),
        ("url", _STR),
        ("host", _STR),
        ("sitemap", _STR),
        # How the URL was found: "sitemap", or "links" (the links fallback); two values.
        ("source", _DICT),
        ("lastmod", _TS),
        ("changefreq", _STR),
        # float64: a priority of 0.8 stays 0.8 (as float32, `where priority = 0.8` misses it)
        ("priority", pa.float64()),
        (
            "images",
            pa.list_(
                pa.struct(
                    [(k, _STR) for k in ("loc", "caption", "title", "geo_location", "license")]
                )
            ),
        ),
        ("alternates", pa.list_(pa.struct([("hreflang", _STR), ("href", _STR)]))),
        (
            "videos",
            pa.list_(
                pa.struct(
                    [
                        # The dates as timestamps (as news.publication_date), the rest text.
                        (k, _TS if k.endswith("_date") else _STR)
                        for k in (
                            "thumbnail_loc",
                            "title",
                            "description",
                            "content_loc",
                            "player_loc",
                            "duration",
                            "publication_date",
                            "expiration_date",
                            "family_friendly",
                            "live",
                        )
                    ]
                    + [("tags", _STRINGS)]
                )
            ),
        ),
        (
            "news",
            pa.struct(
                [
                    ("name", _STR),
                    ("language", _STR),
                    ("publication_date", _TS),
                    ("title", _STR),
                    ("keywords", _STRINGS),
                    ("genres", _STR),
                    ("stock_tickers", _STRINGS),
                    ("access", _STR),
                ]
            ),
        ),
        # A handful of distinct values over millions of rows: dictionary-encoded.
        ("event", _DICT),
        ("since", _DICT),
        # Issue 48 (policy.verdicts, policy.tdmrep): the URL's robots.txt verdict for the
        # run's agent (allowed | disallowed | unknown) and its TDMRep reservation.
        ("robots", _DICT),
        ("tdm_reserved", pa.bool_()),
    ]
)
_DICT_COLUMNS = tuple(i for i, f in enumerate(SCHEMA) if pa.types.is_dictionary(f.type))
# What pyarrow's JSON reader fills (it cannot build dictionaries: encoded afterwards).
_READ_SCHEMA = pa.schema(
    [pa.field(f.name, _STR) if i in _DICT_COLUMNS else f for i, f in enumerate(SCHEMA)]
)
_PARSE = pj.ParseOptions(explicit_schema=_READ_SCHEMA, unexpected_field_behavior="ignore")
_SLICE = 4 << 20  # JSON bytes converted at once (a host's removed records can be one big block)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # (no UTF-8 can carry one)
_COMPRESSION = "zstd"  # smaller than snappy at about its speed; read by DuckDB, Spark, pandas


def _use_jemalloc() -> None:
    """Make pyarrow allocate with jemalloc, returning freed memory at once, where it can.

    Its default (mimalloc) keeps what a row group used: peak RSS of ``bench_formats``'
    Parquet child at a million URLs 229 MB with it, 211 MB this way, at the same CPU.
    Only the run's writer process writes Parquet, so the process-wide setting is its own.
    """
    try:
        pool = pa.jemalloc_memory_pool()
        pa.jemalloc_set_decay_ms(0)
    except (NotImplementedError, pa.ArrowNotImplementedError):
        return  # a pyarrow built without jemalloc: its default allocator then
    pa.set_memory_pool(pool)


def _encode(table: pa.Table) -> pa.Table:
    """The JSON reader's table in ``SCHEMA``: its string columns (source, event, since,
    robots) dictionary-encoded."""
    for i in _DICT_COLUMNS:
        column = table.column(i)
        if not pa.types.is_dictionary(column.type):
            table = table.set_column(i, SCHEMA.field(i), pc.dictionary_encode(column))
    return table


def _clean(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


class ParquetSink:
    """Writes JSON-lines blocks as Parquet to ``path`` via the ``path + ".part"`` directory.

    ``records`` counts rows taken, ``mark`` the parts complete on disk (the resume
    mark a state commit stores), ``rejected`` the records that could not be
    converted (reported on stderr with their URL; none are expected). ``close`` is
    idempotent.
    """

    def __init__(
        self, path: str, *, resume_at: int | None = None, row_group_rows: int = 65_536
    ) -> None:
        """``resume_at``: continue an interrupted run's parts, keeping the first ``resume_at``."""
        if path == "-":
            raise ValueError("Parquet needs a file to write to, not standard output")
        _use_jemalloc()
        self.path = path
        self.temp_path = path + ".part"
        self.row_group_rows = max(1, row_group_rows)
        self.records = 0
        self.rejected = 0
        if os.path.isfile(self.temp_path):
            os.remove(self.temp_path)  # a JSON Lines or CSV run's leftover of this name
        os.makedirs(self.temp_path, exist_ok=True)
        cut_parts(self.temp_path, resume_at or 0)  # a fresh run keeps none
        self.mark = resume_at or 0
        self._buffer: list[pa.Table] = []  # converted rows not yet in a row group
        self._buffered = 0  # their count
        self._writer: pq.ParquetWriter | None = None  # the part being written, if any
        self._file: io.BufferedWriter | None = None  # its file (fsynced when it is closed)
        self._closed = False
        self._prepared = False  # prepare() made the output final under its temporary name
        self._failed: BaseException | None = None  # a write failed: the part being written is torn

    def write(self, data: bytes | bytearray | memoryview, records: int | None = None) -> None:
        """Take a block of complete JSON lines (each ending in ``\\n``)."""
        if self._closed:
            raise ValueError("write to a closed ParquetSink")
        view = memoryview(data)
        start = 0
        while start < len(view):
            end = len(view)
            if end - start > _SLICE:
                end = bytes(view[start : start + _SLICE]).rfind(b"\n") + start + 1
                if end <= start:  # one line longer than a slice: take it whole
                    end = bytes(view[start:]).find(b"\n") + start + 1 or len(view)
            self._add(self._convert(view[start:end]))
            start = end

    write_encoded = write  # (no worker-side encoding for Parquet: formats.block_encoder)

    def _convert(self, data: memoryview) -> pa.Table:
        """JSON lines → a table of ``_READ_SCHEMA`` (odd lines cleaned or rejected)."""
        # A copy: ``data`` may be a view of the results pipe's buffer, reused after this call,
        # and what pyarrow keeps of its input is its own business (a copy costs ~1 % here).
        block = pa.py_buffer(bytes(data))
        try:
            return pj.read_json(
                pa.BufferReader(block),
                read_options=pj.ReadOptions(block_size=len(data) + 1),
                parse_options=_PARSE,
            )
        except pa.ArrowInvalid:
            return self._convert_lines(bytes(data))

    def _convert_lines(self, data: bytes) -> pa.Table:
        """The slow path: line by line, lone surrogates replaced; a line that still
        cannot be converted is rejected (counted, and its URL named on stderr)."""
        tables = []
        for line in data.splitlines():
            rec: Any = None
            try:
                rec = json.loads(line)  # (what orjson refuses: lone surrogates)
                clean = orjson.dumps(_clean(rec))
                tables.append(pj.read_json(pa.BufferReader(clean), parse_options=_PARSE))
            except (ValueError, TypeError, pa.ArrowInvalid) as exc:  # json's, orjson's, arrow's
                self.rejected += 1
                url = rec.get("url") if isinstance(rec, dict) else None
                print(f"harvester: parquet: record not written ({url}): {exc}", file=sys.stderr)
        return pa.concat_tables(tables) if tables else _READ_SCHEMA.empty_table()

    def _add(self, table: pa.Table) -> None:
        self.records += table.num_rows
        self._buffer.append(table)
        self._buffered += table.num_rows
        while self._buffered >= self.row_group_rows:
            self._flush(self.row_group_rows)

    def _flush(self, rows: int) -> None:
        """Write the first ``rows`` buffered rows as one row group of the current part."""
        if self._failed is not None:
            # (Another host's batch, taken before the run stopped on the first error.)
            raise RunFailed(
                f"the output cannot be written since an earlier write failed: {self._failed}"
            )
        try:
            self._write_group(rows)
        except BaseException as exc:
            # (pyarrow re-raises the file's OSError, ENOSPC say: the first error, the one
            # to report.) Its writer is unusable now: closing it would only raise again.
            self._failed = exc
            raise

    def _write_group(self, rows: int) -> None:
        table = pa.concat_tables(self._buffer)
        head, rest = table.slice(0, rows), table.slice(rows)
        self._buffer = [rest] if rest.num_rows else []
        self._buffered = rest.num_rows
        if self._writer is None:
            self._file = open(  # noqa: SIM115 (closed in _finish_part)
                os.path.join(self.temp_path, part_name(self.mark)), "wb"
            )
            self._writer = pq.ParquetWriter(self._file, SCHEMA, compression=_COMPRESSION)
        self._writer.write_table(_encode(head), row_group_size=rows)

    def _finish_part(self) -> None:
        """Write what is buffered and close the current part: footer, fsync, +1 on ``mark``."""
        if self._buffered:
            self._flush(self._buffered)
        if self._writer is None:
            return
        assert self._file is not None
        try:
            self._writer.close()
            self._file.flush()
            os.fsync(self._file.fileno())
        except BaseException as exc:
            self._failed = exc
            self._abandon_part()
            raise
        self._file.close()
        self._writer = self._file = None
        fsync_dir(self.temp_path)  # the part's name is durable before a commit counts it
        self.mark += 1

    def _abandon_part(self) -> None:
        """Close the file of a part whose write failed, without its footer (errors of that
        close are dropped: the write's own error is the one reported)."""
        file, self._file, self._writer = self._file, None, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()

    def sync(self) -> None:
        """Make everything taken so far durable as complete parts (before a state commit)."""
        if not self._closed:
            self._finish_part()

    def prepare(self) -> None:
        """Make the whole output durable under its temporary name, ``OUT.part/assembled.tmp``.

        The last part is closed; one part is linked to that name (the part stays, so
        a resume still finds every committed part), several are streamed into it.
        The first half of ``close(complete=True)``; ``publish`` is the second.
        """
        if self._closed:
            return
        self._closed = True
        self._finish_part()
        parts = [p for _, p in list_parts(self.temp_path)]
        final = os.path.join(self.temp_path, ASSEMBLED)
        with contextlib.suppress(FileNotFoundError):
            os.remove(final)  # an earlier invocation's, stopped before it published
        if not parts:  # no records at all: an empty file with the schema
            pq.write_table(SCHEMA.empty_table(), final, compression=_COMPRESSION)
            fsync_file(final)
        elif len(parts) == 1:
            os.link(parts[0], final)
        else:
            self._assemble(parts, final)
        fsync_dir(self.temp_path)
        self._prepared = True

    def publish(self) -> None:
        """Rename the prepared file over ``path`` (durably), then remove the parts."""
        if not self._prepared:
            raise ValueError("ParquetSink.publish() needs a prepare() first")
        publish_file(os.path.join(self.temp_path, ASSEMBLED), self.path)
        self._prepared = False
        remove_parts(self.temp_path)

    def close(self, *, complete: bool) -> None:
        """Finish the output.

        ``complete=True``: the parts become ``path`` (``prepare``, then ``publish``),
        and the ``.part`` directory goes. ``complete=False``: the last part is
        closed, and the directory stays for a resume or a look; after a failed
        write (a full disk) the part being written is only closed, without a
        footer: torn, uncommitted, deleted by the resume.
        """
        if complete:
            self.prepare()
            if self._prepared:
                self.publish()
            return
        if self._closed:
            return
        self._closed = True
        if self._failed is not None:
            self._abandon_part()
        else:
            self._finish_part()

    def _assemble(self, parts: list[str], final: str) -> None:
        """Stream the rows of ``parts`` into ``final``, in order, in whole row groups."""
        with open(final, "wb") as file:
            writer = pq.ParquetWriter(file, SCHEMA, compression=_COMPRESSION)
            pending: list[pa.Table] = []
            count = 0
            for batch in _batches(parts, self.row_group_rows):
                pending.append(batch)
                count += batch.num_rows
                if count >= self.row_group_rows:
                    table = pa.concat_tables(pending)
                    head, rest = (
                        table.slice(0, self.row_group_rows),
                        table.slice(self.row_group_rows),
                    )
                    writer.write_table(_encode(head), row_group_size=self.row_group_rows)
                    pending, count = ([rest] if rest.num_rows else []), rest.num_rows
            if count:
                writer.write_table(_encode(pa.concat_tables(pending)), row_group_size=count)
            writer.close()
            file.flush()
            os.fsync(file.fileno())

    @property
    def closed(self) -> bool:
        """True once ``close`` ran."""
        return self._closed

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<ParquetSink {self.path!r} {state} records={self.records} parts={self.mark}>"


def _batches(parts: list[str], rows: int) -> Iterator[pa.Table]:
    """The rows of ``parts`` as tables of at most ``rows`` rows, source, event and since as strings
    (each part has its own dictionaries; ``_encode`` makes one per row group again)."""
    for path in parts:
        with pq.ParquetFile(path, pre_buffer=False) as file:
            for batch in file.iter_batches(batch_size=min(rows, 8192)):
                table = pa.Table.from_batches([batch])
                for i in _DICT_COLUMNS:
                    table = table.set_column(i, _READ_SCHEMA.field(i), table.column(i).cast(_STR))
                yield table
