"""A loopback TCP front port that relays to a backend port, for tests that shape the
bytes in between (hold a handshake, drop TLS but pass plain HTTP).

A subclass writes ``_handle`` (one accepted connection) and calls ``relay`` to pipe it
to the backend; ``serve(host)`` listens on an ephemeral port (``port``) and, on exit,
closes every connection it saw and the server.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class Relay:
    """A front port relaying to ``backend`` on ``backend_host``."""

    def __init__(self, backend: int, backend_host: str) -> None:
        self.backend = backend
        self.backend_host = backend_host
        self.port = 0
        self._writers: list[asyncio.StreamWriter] = []

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def relay(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, first: bytes = b""
    ) -> None:
        """Pipe the accepted connection both ways to the backend, ``first`` sent ahead."""
        self._writers.append(writer)
        up_reader, up_writer = await asyncio.open_connection(self.backend_host, self.backend)
        self._writers.append(up_writer)
        if first:
            up_writer.write(first)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    @contextlib.asynccontextmanager
    async def serve(self, host: str) -> AsyncIterator[Self]:
        """Listen on ``host`` (an ephemeral port, ``self.port``) while the block runs."""
        server = await asyncio.start_server(self._handle, host, 0)
        self.port = server.sockets[0].getsockname()[1]
        try:
            yield self
        finally:
            for writer in self._writers:
                writer.close()
            server.close()
            await server.wait_closed()


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy ``reader`` to ``writer`` until end of stream or a reset, then close ``writer``."""
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()
