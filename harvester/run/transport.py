"""Results transport: a worker's messages to the writer, through a pipe.

In: a worker's messages (``Message``: ``RecordsMessage`` with the encoded JSON lines,
``HostMessage``, ``DoneMessage``, ``ErrorMessage``), put in order on its loop
(``Results.put``). Out: the same messages in the parent (``ResultPipe.messages``),
in that order, the lines and the ledger blobs as views of the parent's buffer.

A results frame (``_FRAME``) is the length of the rest, the length of the pickled
message, the number of its out-of-band buffers and the buffers' lengths; then the
pickled message, those buffers and (for records) the encoded JSON lines as they
are: built in one reused buffer, they are copied once and never joined or
pickled. The out-of-band buffers are
pickle protocol 5's: the ledger chunks' blobs (``LedgerRows.__reduce_ex__``)
travel as raw bytes, and the parent's ``LedgerRows`` hold views of its read
buffer, which SQLite copies straight from (valid until the next read).

The parent waits on every worker's results pipe at once
(``multiprocessing.connection.wait``) and reads whatever each has, without
blocking, into one reused buffer (``ResultPipe``): a worker writes a frame as its
event loop gets to it, so waiting for the rest of a half-arrived frame would stall
the writer on one slow worker while the others have whole frames. A worker that
exits, however it dies, shows as end of file after its last whole frame.

Bounds: a worker's results pipe (1 MiB), plus at most one frame waiting for room in
it, hold what it sent and the parent has not written. While a frame waits,
``Results.ready`` is clear: the worker's hosts wait for it before parsing their next
chunk.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pickle
import struct
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvester.state.memory import HostState
    from harvester.state.rows import LedgerRows

__all__ = [
    "BLOCK",
    "DoneMessage",
    "ErrorMessage",
    "HostMessage",
    "Message",
    "RecordsMessage",
    "ResultPipe",
    "Results",
    "widen_pipe",
]


class RecordsMessage(NamedTuple):
    """A block of encoded records (the lines travel after the message, not pickled)."""

    records: int  # how many records the block's lines hold
    fingerprints: list[tuple[str, bytes]]  # (host, its URL fingerprints) in block order
    rows: list[tuple[str, LedgerRows]] | None  # (host, ledger rows); None: no state file


class HostMessage(NamedTuple):
    """A finished host: its report (the JSON shape) and, with a state file, its state."""

    report: dict[str, Any]
    state: HostState | None


class DoneMessage(NamedTuple):
    """The worker's shard ended: every seed was harvested (or the run was stopped)."""

    worker: int  # the worker's index


class ErrorMessage(NamedTuple):
    """The worker crashed; ``traceback`` is its formatted traceback."""

    worker: int  # the worker's index
    traceback: str


# What a worker sends; the parent dispatches with ``match``.
Message = RecordsMessage | HostMessage | DoneMessage | ErrorMessage

BLOCK = 256 * 1024  # bytes of encoded records per message from a worker
_PIPE_BYTES = 1 << 20  # the results pipe's capacity (see widen_pipe)
# A results frame: the length of the rest, the length of the pickled message, the
# number of its out-of-band buffers, the buffers' lengths (_LENGTH each), the
# pickled message, then the buffers and (for records) the encoded lines as they are.
_LENGTH = struct.Struct("!I")
_FRAME = struct.Struct("!III")
_READ_BYTES = 2 << 20  # the parent's read buffer per worker: the pipe's capacity and more


# -- the parent's end ----------------------------------------------------------------


class ResultPipe:
    """The parent's end of a worker's results pipe, read without blocking into one
    reused buffer.

    ``fileno`` is for ``multiprocessing.connection.wait``; ``messages`` returns the
    whole frames read so far as (message, records bytes), valid until the next call.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        os.set_blocking(fd, False)
        # Grown for a larger frame (a host report of many sitemaps).
        self._buf = bytearray(_READ_BYTES)
        self._start = 0  # the first byte not yet handed out
        self._end = 0  # one past the last byte read

    def fileno(self) -> int:
        """The pipe's file descriptor, for ``multiprocessing.connection.wait``."""
        return self._fd

    def messages(self) -> list[tuple[Message, memoryview]]:
        """Read what the pipe holds; return the whole frames' (message, records bytes).

        The records bytes (and the ledger blobs in the messages) are views of the
        buffer, valid until the next call. Raises EOFError once the worker's end is
        closed and every whole frame was read.
        """
        self._compact()
        with memoryview(self._buf) as free:
            try:
                n = os.readv(self._fd, [free[self._end :]])
            except BlockingIOError:
                return []
        if not n:
            raise EOFError("the worker closed its results pipe")
        self._end += n
        out: list[tuple[Message, memoryview]] = []
        view = memoryview(self._buf)
        while self._end - self._start >= _FRAME.size:
            size, meta, nbufs = _FRAME.unpack_from(self._buf, self._start)
            end = self._start + _LENGTH.size + size
            if end > self._end:
                break
            first = self._start + _FRAME.size
            pickled = first + nbufs * _LENGTH.size
            bulk = view[pickled + meta : end]
            at = 0
            buffers = []
            for (length,) in _LENGTH.iter_unpack(view[first:pickled]):
                buffers.append(bulk[at : at + length])
                at += length
            msg = pickle.loads(view[pickled : pickled + meta], buffers=buffers)  # noqa: S301 - ours
            out.append((msg, bulk[at:]))
            self._start = end
        return out

    def _compact(self) -> None:
        # Move a half-read frame to the front, growing the buffer when it is larger.
        pending = self._end - self._start
        if pending >= _FRAME.size:
            (size,) = _LENGTH.unpack_from(self._buf, self._start)
            need = _LENGTH.size + size
            if need > len(self._buf):
                grown = bytearray(need)
                with memoryview(grown) as dst, memoryview(self._buf) as src:
                    dst[:pending] = src[self._start : self._end]
                self._buf = grown  # views of the old buffer stay valid until dropped
                self._start, self._end = 0, pending
                return
        if self._start:
            with memoryview(self._buf) as buf:
                buf[:pending] = buf[self._start : self._end]  # memmove: may overlap
            self._start, self._end = 0, pending

    def close(self) -> None:
        """Close the pipe."""
        os.close(self._fd)


def widen_pipe(fd: int) -> None:
    """Give a results pipe room for whole messages (Linux; elsewhere a no-op).

    A 256 KiB message through the default 64 KiB pipe takes four writes, each waking
    the parent for a partial read; a 1 MiB pipe (the unprivileged maximum) takes one.
    """
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setpipe is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, setpipe, _PIPE_BYTES)


# -- the worker's side ---------------------------------------------------------------


# -- the worker's end ----------------------------------------------------------------


class Results:
    """The worker's results pipe, written by the event loop without blocking.

    Each message is built in one reused buffer (the frame layout is in
    ``_FRAME``). Its bulk bytes, a records message's encoded lines and the
    ledger blobs pickled out of band, are copied once, into the frame after the
    pickled rest, and never joined or pickled. At most one frame is pending (part
    of it waits for room in the pipe: the parent is behind); a ``put`` meanwhile
    waits for it to go out before building its own. Messages go out in the order of their ``put``s
    (a host's records before its report). ``ready`` is clear while a frame is
    pending or a put waits: hosts wait for it before parsing their next chunk,
    so while the parent is behind no new message is made, and the waiting ones
    are sent first.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buf = bytearray(BLOCK + (64 << 10))  # a block and its message's pickle
        self._pending: memoryview | None = None  # the unwritten rest of the frame
        self._waiting = 0  # puts not done yet
        self._order = asyncio.Lock()  # FIFO: one put builds and sends at a time
        self._loop: asyncio.AbstractEventLoop | None = None
        self._free = asyncio.Event()  # no frame is pending
        self._free.set()
        self.ready = asyncio.Event()
        self.ready.set()
        self._broken = False  # the parent closed its end
        self._reported = False  # an ErrorMessage went out
        self._blocked = 0.0  # loop seconds a frame waited for room, before _blocked_since
        self._blocked_since: float | None = None  # loop time the pending frame began waiting

    async def open(self) -> None:
        """Attach the pipe to the running loop."""
        self._loop = asyncio.get_running_loop()
        os.set_blocking(self._fd, False)

    async def put(self, msg: Message, records: Sequence[bytes | bytearray] = ()) -> None:
        """Send one message (and, for records, the encoded lines after it); wait while
        the parent is behind.
        """
        self._waiting += 1
        self.ready.clear()
        try:
            async with self._order:
                # Each looks again once woken: a write callback may have set it since.
                while self._pending is not None:
                    await self._free.wait()
                if self._broken:
                    raise BrokenPipeError("the parent closed the results pipe")
                size = self._build(msg, records)
                self._pending = memoryview(self._buf)[:size]
                self._write()
                if self._pending is not None:
                    assert self._loop is not None
                    self._free.clear()
                    self._blocked_since = self._loop.time()
                    self._loop.add_writer(self._fd, self._write)
        finally:
            self._waiting -= 1
        self._update_ready()

    def _update_ready(self) -> None:
        if self._pending is None and not self._waiting:
            self.ready.set()

    def _build(self, msg: Message, records: Sequence[bytes | bytearray]) -> int:
        # Out of band: the ledger blobs are copied once, below, not into the pickle too.
        oob: list[pickle.PickleBuffer] = []
        meta = pickle.dumps(msg, protocol=5, buffer_callback=oob.append)
        buffers = [b.raw() for b in oob]
        try:
            return self._frame(meta, buffers, [*buffers, *records])
        finally:
            for b in buffers:
                b.release()

    def _frame(
        self,
        meta: bytes,
        buffers: Sequence[memoryview],
        inline: Sequence[bytes | bytearray | memoryview],
    ) -> int:
        # The frame into the buffer: header, buffer lengths, pickle, inline bytes.
        lengths = b"".join(_LENGTH.pack(len(b)) for b in buffers)
        parts: list[bytes | bytearray | memoryview] = [lengths, meta, *inline]
        size = _FRAME.size + sum(map(len, parts))
        if size > len(self._buf):
            self._buf = bytearray(size)  # a message over the usual size (a huge report)
        _FRAME.pack_into(self._buf, 0, size - _LENGTH.size, len(meta), len(buffers))
        pos = _FRAME.size
        # Through a memoryview: a bytearray's own slice assignment first copies bytes
        # into a temporary bytearray (a large malloc and free per part).
        with memoryview(self._buf) as buf:
            for part in parts:
                end = pos + len(part)
                buf[pos:end] = part
                pos = end
        return size

    def _write(self) -> None:
        view = self._pending
        assert view is not None
        try:
            n = os.write(self._fd, view)
        except BlockingIOError:
            return
        except OSError:
            self._broken = True  # the parent is gone; the next put raises
            n = len(view)
        if n < len(view):
            self._pending = view[n:]
            view.release()
            return
        view.release()
        self._pending = None
        if not self._free.is_set():  # it waited for room: stop watching the pipe
            assert self._loop is not None
            self._loop.remove_writer(self._fd)
            if self._blocked_since is not None:
                self._blocked += self._loop.time() - self._blocked_since
                self._blocked_since = None
            self._free.set()
            self._update_ready()

    def blocked(self) -> float:
        """Loop seconds so far that a frame waited for room in the pipe (the parent was
        behind), the current wait included: ``admission.watch`` turns it into a share."""
        if self._blocked_since is None or self._loop is None:
            return self._blocked
        return self._blocked + self._loop.time() - self._blocked_since

    async def close(self) -> None:
        """Wait until the last frame is written, then close the pipe."""
        while self._pending is not None:
            await self._free.wait()
        os.close(self._fd)
        self._fd = -1

    async def report(self, index: int, tb: str) -> None:
        """Send a crash report (best effort) and close."""
        with contextlib.suppress(Exception):
            await self.put(ErrorMessage(index, tb))
            self._reported = True
            await self.close()

    def report_crash(self, index: int, tb: str) -> None:
        """After the loop is gone: write the crash report straight to the pipe, unless it
        went out already, or a frame is half-written.
        """
        if self._reported or self._pending is not None or self._fd < 0:
            return
        with contextlib.suppress(OSError):
            os.set_blocking(self._fd, True)
            size = self._frame(pickle.dumps(ErrorMessage(index, tb), protocol=5), (), ())
            with memoryview(self._buf) as whole:
                view = whole[:size]
                while view:
                    view = view[os.write(self._fd, view) :]
