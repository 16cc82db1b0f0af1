"""The results ring: a worker's bulk bytes reach the parent through shared memory.

In: per worker, an anonymous memory file (``create``, in the parent) mapped by
both processes, and an ack pipe from the parent to the worker. Out: the worker
(``RingWriter``) copies a message's bulk bytes (its encoded JSON lines and its
out-of-band ledger blobs) into a free region and sends only the region's offset
and length down the results pipe; the parent (``RingReader``) hands out
read-only views of the region and, once the writer has used them, acknowledges
it with one byte on the ack pipe; the worker frees its regions in order as the
acks come.

Why: a pipe copies every byte twice, in the worker's ``write`` and the parent's
``read``, and allocates, charges and frees a kernel page per 4 KiB on the way.
On the ``many`` benchmark 1.35 GB crosses (1.17 GB of JSON lines, 0.18 GB of
ledger chunks). Here the bytes are copied once, by the worker, into memory the
parent reads in place; the pipe carries a few hundred bytes a message.
``benchmarks/bench_transport.py`` moves 1.35 GB this way for 0.79 CPU s against
1.66 through the pipe; in the pipeline the processes' system CPU fell by ~0.5 s
a run (benchmarks/README.md, "Figures at ccb3ee9-498a8cf").

Bounds and order: the regions in flight are a FIFO span of the ring (the parent
handles a worker's messages in order), so a region is free once its ack and
every earlier one came back. A message whose bulk does not fit the whole ring
goes inline through the pipe, as everything does where memory files do not
exist (``create`` returns None): the ring is only a faster path, never the only
one. A worker waiting for room waits on the ack pipe; its end of file (the
parent is gone) raises ``BrokenPipeError``, as a write to the results pipe would.
"""

from __future__ import annotations

import asyncio
import contextlib
import mmap
import os
from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["SIZE", "RingReader", "RingWriter", "create"]

# Eight 256 KiB messages (transport.BLOCK): the worker keeps building while the
# parent writes the ones before. Its pages count in both processes' RSS once touched.
SIZE = 2 << 20


def create(size: int = SIZE) -> int | None:
    """A new anonymous memory file of ``size`` bytes (close-on-exec), or None where the
    platform has none (then everything goes through the pipe)."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is None:
        return None
    try:
        fd: int = memfd_create("harvester-results")
    except OSError:
        return None
    try:
        os.ftruncate(fd, size)
    except OSError:
        os.close(fd)
        return None
    return fd


class RingWriter:
    """The worker's side: reserves regions, copies bytes into them, frees them on acks.

    ``fd``: the memory file (closed here once mapped); ``ack_fd``: the ack pipe's
    read end (non-blocking here). Used from the worker's event loop only.
    """

    def __init__(self, fd: int, ack_fd: int) -> None:
        try:
            self.size = os.fstat(fd).st_size
            self._map = mmap.mmap(fd, self.size)  # MAP_SHARED, read and write
        finally:
            os.close(fd)
        self._view = memoryview(self._map)
        self._ack = ack_fd
        os.set_blocking(ack_fd, False)
        self._regions: deque[tuple[int, int]] = deque()  # (start, end) sent, not yet acked
        self._head = 0  # where the next region goes, if it fits there
        self._broken = False  # the ack pipe ended: the parent is gone

    def fits(self, n: int) -> bool:
        """Whether ``n`` bytes can ever go through the ring (else: inline)."""
        return 0 < n <= self.size

    async def put(self, parts: Iterable[bytes | bytearray | memoryview], n: int) -> int:
        """Copy ``parts`` (``n`` bytes in all, ``fits(n)``) into a free region, waiting for
        acks while there is no room; return the region's offset.

        Raises BrokenPipeError once the parent is gone.
        """
        while (start := self._place(n)) is None:
            await self._wait_acks()
        self._regions.append((start, start + n))
        self._head = start + n
        view = self._view
        at = start
        for part in parts:
            end = at + len(part)
            view[at:end] = part
            at = end
        return start

    def _place(self, n: int) -> int | None:
        # Where n bytes fit now, after taking the acks that came in; None: no room yet.
        self._take_acks()
        if self._broken:
            raise BrokenPipeError("the parent closed the ack pipe")
        if not self._regions:
            self._head = 0  # empty: start over at the front
            return 0
        tail, head = self._regions[0][0], self._head
        if head > tail:  # in flight: [tail, head)
            if self.size - head >= n:
                return head
            return 0 if tail >= n else None  # wrap around to the front
        # wrapped: in flight [tail, size) and [0, head)
        return head if tail - head >= n else None

    def _take_acks(self) -> None:
        while True:
            try:
                acks = os.read(self._ack, 4096)
            except BlockingIOError:
                return
            except OSError:
                acks = b""
            if not acks:
                self._broken = True
                return
            for _ in range(min(len(acks), len(self._regions))):
                self._regions.popleft()

    async def _wait_acks(self) -> None:
        loop = asyncio.get_running_loop()
        readable: asyncio.Future[None] = loop.create_future()
        loop.add_reader(self._ack, _done, readable)
        try:
            await readable
        finally:
            loop.remove_reader(self._ack)

    def close(self) -> None:
        """Unmap the ring and close the ack pipe."""
        self._view.release()
        self._map.close()
        with contextlib.suppress(OSError):
            os.close(self._ack)


class RingReader:
    """The parent's side: read-only views of the regions its worker filled, and the acks.

    ``fd``: the memory file (closed here once mapped); ``ack_fd``: the ack pipe's
    write end (non-blocking here).
    """

    def __init__(self, fd: int, ack_fd: int) -> None:
        try:
            size = os.fstat(fd).st_size
            self._map = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        self._view = memoryview(self._map)
        self._ack = ack_fd
        os.set_blocking(ack_fd, False)
        self._unacked = 0  # regions handed out since the last release

    def view(self, at: int, n: int) -> memoryview:
        """The region ``[at, at + n)``, valid until ``release``."""
        if at < 0 or n <= 0 or at + n > len(self._view):
            raise ValueError(f"ring region {at}+{n} is outside the {len(self._view)}-byte ring")
        self._unacked += 1
        return self._view[at : at + n]

    def release(self) -> None:
        """The views handed out are used: give their regions back to the worker."""
        if self._unacked:
            # The pipe holds 64 Ki acks, each for a region in flight: a full one means the
            # worker has room to take once it reads them, and what did not fit goes with
            # the next release. A gone worker: nothing to do.
            try:
                self._unacked -= os.write(self._ack, b"\x01" * self._unacked)
            except BlockingIOError:
                pass
            except OSError:
                self._unacked = 0

    def close(self) -> None:
        """Close the ack pipe (the worker's next wait sees end of file) and let the
        mapping go once no view of it is left."""
        with contextlib.suppress(OSError):
            os.close(self._ack)
        self._ack = -1
        self._view.release()
        with contextlib.suppress(BufferError):  # a caller still holds a view: the GC unmaps
            self._map.close()


def _done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
