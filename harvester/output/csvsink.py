"""Sink stage, CSV: the run's records as RFC 4180 CSV with a header row.

In: blocks of encoded JSON lines (what the workers send, ``urls.records.encode_records``).
Out: ``OUT.csv`` (via ``OUT.csv.part``, renamed when the run completes, as for
JSON Lines; ``-`` is standard output), written by the stdlib ``csv`` module:
UTF-8, CRLF line ends, a field quoted when it holds a comma, a quote or a line
break (quotes doubled), so any loc survives a round trip.

Columns (``COLUMNS``, the header): the scalar fields as they are, null as an
empty field, ``priority`` as its JSON number; the nested ones (``images``,
``alternates``, ``videos``, ``news``) as JSON text, empty when absent; ``robots``
(``allowed`` | ``disallowed`` | ``unknown``) and ``tdm_reserved`` (``true`` | ``false``,
empty: null or absent) with ``policy.verdicts`` / ``policy.tdmrep``. The file
is appended to and cut back by bytes exactly as JSON Lines (``sink.JsonlSink``
does the file handling), so a resumed run continues it at the committed length.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import orjson

from harvester.output.sink import JsonlSink

__all__ = ["COLUMNS", "CsvSink", "csv_rows"]

COLUMNS = (
    "loc",
    "url",
    "host",
    "sitemap",
    "source",
    "lastmod",
    "changefreq",
    "priority",
    "images",
    "alternates",
    "videos",
    "news",
    "event",
    "since",
    "robots",
    "tdm_reserved",
)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


_NESTED = tuple(COLUMNS.index(k) for k in ("images", "alternates", "videos", "news"))
_TDM = COLUMNS.index("tdm_reserved")
_BOOL = {True: "true", False: "false"}


def _json(value: Any) -> str:
    """A nested field as JSON text."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # a lone surrogate inside (see records.encode_record)
        return json.dumps(value, separators=(",", ":"))


def _encode(rows: list[list[Any]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)
    text = buffer.getvalue()
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate (the JSON escaped it; UTF-8 cannot carry it)
        return _LONE_SURROGATE.sub("\ufffd", text).encode()


def csv_rows(data: bytes | bytearray | memoryview) -> bytes:
    """JSON lines (whole ones, as ``records.encode_records`` makes them) → their CSV rows.

    >>> csv_rows(b'{"loc":"https://example.com/a,b","url":"u","priority":0.5}\\n')
    b'"https://example.com/a,b",u,,,,,,0.5,,,,,,,,\\r\\n'
    """
    rows: list[list[Any]] = []
    loads = orjson.loads
    for line in bytes(data).splitlines():
        try:
            rec = loads(line)
        except orjson.JSONDecodeError:  # lone surrogates: json reads them
            rec = json.loads(line)
        # csv writes None as an empty field and a float as its repr (JSON's number).
        row = [rec.get(c) for c in COLUMNS]
        for i in _NESTED:
            if row[i] is not None:
                row[i] = _json(row[i])
        if row[_TDM] is not None:
            row[_TDM] = _BOOL.get(row[_TDM], row[_TDM])
        rows.append(row)
    return _encode(rows) if rows else b""


def _count_rows(rows: bytes | bytearray | memoryview) -> int:
    """Rows in CSV text (quoted line breaks are not row ends)."""
    return sum(1 for _ in csv.reader(io.StringIO(bytes(rows).decode(), newline="")))


class CsvSink:
    """Writes JSON-lines blocks as CSV rows to ``path`` via ``path + ".part"`` (``-``: stdout).

    ``records`` counts rows, ``mark`` the bytes written (the resume mark a state
    commit stores). The header is written whenever the file starts empty.
    """

    __slots__ = ("_out", "path")

    def __init__(self, path: str, *, resume_at: int | None = None) -> None:
        """``resume_at``: continue ``path + ".part"`` of an interrupted run, cut to that length."""
        self.path = path
        self._out = JsonlSink(path, resume_at=resume_at)  # the file: .part, cut back, rename
        if self._out.bytes == 0:
            self._out.write(_encode([list(COLUMNS)]), 0)

    def write(self, data: bytes | bytearray | memoryview, records: int | None = None) -> None:
        """Take a block of complete JSON lines (each ending in ``\\n``) and append their rows."""
        if records is None:
            records = (data if isinstance(data, bytes | bytearray) else bytes(data)).count(b"\n")
        self.write_encoded(csv_rows(data), records)

    def write_encoded(
        self, rows: bytes | bytearray | memoryview, records: int | None = None
    ) -> None:
        """Append rows made by ``csv_rows`` (in a worker process: ``formats.block_encoder``)."""
        if rows:
            # A row may hold line breaks (inside quotes): the count is given, not scanned.
            self._out.write(rows, records if records is not None else _count_rows(rows))

    @property
    def records(self) -> int:
        """Rows written (the header not counted; on a resume, since the resume)."""
        return self._out.records

    @property
    def mark(self) -> int:
        """Bytes in the file: a state commit's resume mark."""
        return self._out.bytes

    def sync(self) -> None:
        """Flush and fsync what was written so far (stdout: flush only)."""
        self._out.sync()

    def prepare(self) -> None:
        """As ``JsonlSink.prepare``: the whole file durable under its temporary name."""
        self._out.prepare()

    def publish(self) -> None:
        """As ``JsonlSink.publish``: the prepared file renamed over ``path``, durably."""
        self._out.publish()

    def close(self, *, complete: bool) -> None:
        """As ``JsonlSink.close``: ``complete`` renames the ``.part`` file over ``path``."""
        self._out.close(complete=complete)

    @property
    def closed(self) -> bool:
        """True once ``close`` ran."""
        return self._out.closed

    def __repr__(self) -> str:
        return f"<CsvSink {self.path!r} records={self.records} bytes={self.mark}>"
