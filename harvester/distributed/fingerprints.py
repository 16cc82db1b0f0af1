"""A shard's fingerprint log: the URL fingerprints of its records, for the cross-host count.

In: what a shard's writer hands its cross-host tracker (per batch: the host and the
64-bit fingerprints of the URLs it listed). Out: ``ATTEMPT.fps`` beside the records
(named by the manifest), read back by the client's ``merge.CrossHostCount``.

So the client counts cross-host duplicates from 8 bytes a URL, without parsing the
records again (that pass cost more CPU than the rest of the client's work). The shard
only logs: a count within one shard would miss every other shard's hosts, and its
seen-set cost the worker memory and CPU for nothing (the client counts them all), so a
shard's host reports say 0 and ``out/crosshost.ndjson`` has the run's counts per host. Frames:
``!H`` host length, the host (UTF-8), ``!I`` count, ``count`` fingerprints (native
``array("Q")`` bytes: written and read on machines of one byte order, as a cluster is).
"""

from __future__ import annotations

import os
import struct
from typing import TYPE_CHECKING

from harvester.urls.crosshost import CrossHostTracker

if TYPE_CHECKING:
    from array import array
    from collections.abc import Iterator

    from harvester.config import DedupeConfig

__all__ = ["FingerprintLog", "read_fingerprints"]

_HOST = struct.Struct("!H")
_COUNT = struct.Struct("!I")
_BUFFER = 1 << 20  # bytes buffered before a write


class FingerprintLog(CrossHostTracker):
    """A ``CrossHostTracker`` that appends every batch it is given to ``path`` instead of
    counting it (``take`` says 0: the client counts, over every shard's log).

    ``close`` (called by the writer when the shard's run ends) flushes and fsyncs it.
    """

    def __init__(self, cfg: DedupeConfig, path: str) -> None:
        super().__init__(cfg)
        self.path = path
        self._file = open(path, "wb", buffering=_BUFFER)  # noqa: SIM115 - closed by close()

    def add(self, host: str, fingerprints: array[int] | bytes) -> None:
        """Log the batch."""
        data = fingerprints if isinstance(fingerprints, bytes) else fingerprints.tobytes()
        name = host.encode()
        self._file.write(_HOST.pack(len(name)) + name + _COUNT.pack(len(data) // 8))
        self._file.write(data)

    def close(self) -> None:
        """Release the seen-set; make the log durable and close it."""
        super().close()
        if not self._file.closed:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()


def read_fingerprints(path: str) -> Iterator[tuple[str, bytes]]:
    """The (host, fingerprint bytes) batches of a fingerprint log, in order.

    Raises ``ValueError`` naming the file when it ends inside a frame.
    """
    with open(path, "rb") as fh:
        while head := fh.read(_HOST.size):
            (size,) = _HOST.unpack(head)
            host = fh.read(size).decode()
            raw = fh.read(_COUNT.size)
            if len(raw) < _COUNT.size:
                raise ValueError(f"{path}: fingerprint log ends inside a frame")
            (count,) = _COUNT.unpack(raw)
            data = fh.read(8 * count)
            if len(data) < 8 * count:
                raise ValueError(f"{path}: fingerprint log ends inside a frame")
            yield host, data
