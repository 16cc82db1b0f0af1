"""Sink stage: one writer owns the output file.

In: output records (dicts from ``urls.records.record``) encoded to JSON lines by
``urls.records.encode_records`` (a batch) or ``encode_record`` (one), as bytes. Out: a JSON
Lines file that appears under its final name only when the run completed; until then (and after a
failed or interrupted run) the data sits in ``<path>.part`` beside it, so a
file under the real name is never a partial result. ``-`` writes to stdout.

Example::

    with JsonlSink("urls.jsonl") as sink:          # leaving early: urls.jsonl.part stays
        sink.write(encode_records(batch))
        ...
        sink.close(complete=True)                  # flush, fsync, rename to urls.jsonl

Writes are blocking file I/O (a 1 MiB buffer flushes now and then); whether
the pipeline calls ``write`` inline or through ``asyncio.to_thread`` is its
decision. A second run writing to the same path concurrently would share the
``.part`` file: not guarded here.

**Drop-behind** (Linux, a regular file): every ``_DROP_STEP`` bytes the sink
starts writeback of what it just wrote (``sync_file_range``), waits for what
lies more than ``_DROP_LAG`` before that step to be on disk and drops it from
the page cache (``posix_fadvise(DONTNEED)``); the lag lets the disk write one
step while the writer fills the next. The output is never read back, and a run writes
gigabytes of it: kept cached, it evicts pages other programs use, and each new
page is a fresh allocation, which costs the writer more CPU than the writeback
(``python -m benchmarks.bench_write`` compares both). The step is small (a few
MiB) so the pages just dropped are the next ones written: a slow writer (a Dask
shard's, a worker's share of the output) with a large step let them go cold again
first and paid as much as a fresh page. Where ``sync_file_range`` is missing or
refused, the sink simply writes.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys
from typing import IO, TYPE_CHECKING

from harvester.output.parts import publish_file

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

__all__ = ["JsonlSink"]

_BUFFER_SIZE = 1 << 20
# A write at least this long goes straight to the file (after what the buffer holds):
# through the buffer, each worker block (~256 KiB) would be copied into it first, one
# more copy of every output byte in the writer process.
_DIRECT = 64 << 10
_DROP_STEP = 4 << 20  # output bytes between drop-behind steps (see the module docstring)
_DROP_LAG = 4 << 20  # bytes behind a step left to the disk before they are waited for
_SYNC_WRITE = 2  # SYNC_FILE_RANGE_WRITE: start writeback, do not wait
_SYNC_WAIT = 1 | 2 | 4  # WAIT_BEFORE | WRITE | WAIT_AFTER: the range is on disk after it


def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """libc's ``sync_file_range`` (Linux), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_sync_range = _sync_file_range()


class JsonlSink:
    """Writes batches of JSON lines to ``path`` via ``path + ".part"`` (or to stdout for ``-``).

    ``records`` counts lines and ``bytes`` bytes written so far. ``close`` is
    idempotent. As a context manager, leaving the block closes it incomplete
    unless ``close(complete=True)`` ran inside: completion is always explicit,
    so no early return or swallowed interrupt can publish a partial file.
    """

    __slots__ = (
        "_behind",
        "_file",
        "_prepared",
        "_started",
        "bytes",
        "dropped",
        "path",
        "records",
        "temp_path",
    )

    def __init__(self, path: str, *, resume_at: int | None = None) -> None:
        """``resume_at``: continue ``path + ".part"`` of an interrupted run, cut to that length.

        (Bytes past it were written but never committed to the state file; see
        ``state.py``.) ``bytes`` then counts from ``resume_at``.
        """
        self.path = path
        self.records = 0
        self.bytes = 0
        self.temp_path: str | None  # where the data sits until close(complete=True)
        self._file: IO[bytes] | None  # None once closed
        self._prepared = False  # prepare() made it final under temp_path; publish() next
        if path == "-":
            self.temp_path = None
            self._file = sys.stdout.buffer
        else:
            # Same directory as path, so the final os.replace is an atomic rename.
            self.temp_path = path + ".part"
            if resume_at is not None and os.path.exists(self.temp_path):
                self._file = open(self.temp_path, "r+b", buffering=_BUFFER_SIZE)  # noqa: SIM115
                self._file.truncate(resume_at)
                self.bytes = self._file.seek(0, os.SEEK_END)
            else:
                self._file = open(self.temp_path, "wb", buffering=_BUFFER_SIZE)  # noqa: SIM115
        # Drop-behind (module docstring): the offsets up to which writeback was started
        # and up to which the pages were dropped; None: not done for this output.
        self._started: int | None = None
        self._behind = self.bytes
        self.dropped = 0  # bytes dropped from the page cache so far
        regular = self.temp_path is not None and stat.S_ISREG(os.fstat(self._file.fileno()).st_mode)
        if _sync_range is not None and regular:
            self._started = self.bytes

    def write(self, data: bytes | bytearray | memoryview, records: int | None = None) -> None:
        """Append a batch of complete JSON lines (each ending in ``\\n``).

        ``records``: how many lines ``data`` holds, when the caller knows (the
        worker's count); otherwise they are counted here, a scan of every byte the
        writer would rather not make.
        """
        if self._file is None:
            raise ValueError("write to a closed JsonlSink")
        if not data:
            return
        if data[-1:] != b"\n":
            # A batch must end on a line boundary, or a crash could leave half a line.
            raise ValueError("JsonlSink.write needs whole lines ending in b'\\n'")
        if len(data) >= _DIRECT and self.temp_path is not None:
            self._file.flush()
            _write_all(self._file.fileno(), data)
        else:
            self._file.write(data)
        # encode_record escapes newlines inside strings, so b"\n" counts records.
        if records is None:
            records = (data if isinstance(data, (bytes, bytearray)) else bytes(data)).count(b"\n")
        self.records += records
        self.bytes += len(data)
        if self._started is not None and self.bytes - self._started >= _DROP_STEP:
            self._drop_behind()

    write_encoded = write  # JSON lines are this sink's own encoding (formats.Sink)

    def _drop_behind(self) -> None:
        """Start writeback of the last step; wait for and drop what lies ``_DROP_LAG`` before."""
        assert self._file is not None
        assert self._started is not None
        sync_range = _sync_range
        assert sync_range is not None  # (_started is set only where it exists)
        self._file.flush()
        fd = self._file.fileno()
        start, end = self._started, self.bytes
        if sync_range(fd, start, end - start, _SYNC_WRITE) != 0:
            self._started = None  # refused here (say, a filesystem without it): just write
            return
        upto = start - _DROP_LAG
        if self._behind < upto:
            if sync_range(fd, self._behind, upto - self._behind, _SYNC_WAIT) != 0:
                self._started = None
                return
            os.posix_fadvise(fd, self._behind, upto - self._behind, os.POSIX_FADV_DONTNEED)
            self.dropped += upto - self._behind
            self._behind = upto
        self._started = end

    def sync(self) -> None:
        """Flush and fsync what was written so far (stdout: flush only)."""
        if self._file is None:
            return
        self._file.flush()
        if self.temp_path is not None:
            os.fsync(self._file.fileno())

    def prepare(self) -> None:
        """Make the whole output durable under its temporary name: flush, fsync, close.

        The first half of ``close(complete=True)``; ``publish`` is the second. In
        between, the run's writer tells the state file that the run is publishing
        (``writer.Writer.close``). Stdout is only flushed.
        """
        file, self._file = self._file, None
        if file is None:
            return
        if self.temp_path is None:
            file.flush()
            return
        try:
            file.flush()
            os.fsync(file.fileno())
        finally:
            file.close()
        self._prepared = True

    def publish(self) -> None:
        """Rename the prepared ``.part`` file over ``path`` and make the rename durable."""
        if not self._prepared:
            if self.temp_path is None:
                return  # stdout: nothing to rename
            raise ValueError("JsonlSink.publish() needs a prepare() first")
        assert self.temp_path is not None
        publish_file(self.temp_path, self.path)
        self._prepared = False

    def close(self, *, complete: bool) -> None:
        """Finish the output.

        ``complete=True``: flush, fsync and rename the ``.part`` file over
        ``path`` (``prepare``, then ``publish``). ``complete=False``: flush and
        close, leaving ``path + ".part"`` (whole lines only) for inspection;
        ``path`` itself is not touched. Stdout is only flushed, never closed.
        A no-op once closed (a failed flush still closes the file, then raises).
        """
        if complete:
            if self._file is not None:
                self.prepare()
            if self._prepared:
                self.publish()
            return
        file, self._file = self._file, None
        if file is None:
            return
        if self.temp_path is None:
            file.flush()
            return
        try:
            file.flush()
        finally:
            file.close()

    @property
    def closed(self) -> bool:
        """True once ``close`` ran."""
        return self._file is None

    @property
    def mark(self) -> int:
        """Bytes written: the resume mark a state commit stores (``formats.Sink``)."""
        return self.bytes

    def __enter__(self) -> JsonlSink:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(complete=False)  # a no-op after close(complete=True)

    def __repr__(self) -> str:
        state = "closed" if self._file is None else "open"
        return f"<JsonlSink {self.path!r} {state} records={self.records} bytes={self.bytes}>"


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """``os.write`` until all of ``data`` is written (a regular file takes it in one)."""
    with memoryview(data) as view:
        done = os.write(fd, view)
        while done < len(view):
            done += os.write(fd, view[done:])
