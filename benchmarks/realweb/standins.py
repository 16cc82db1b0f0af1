"""Stand-ins of the realweb's server for what nftables does, and the `hang` sites' listeners.

In: the web's sites (their kinds and addresses). Out: ``Silent`` (a protocol that accepts
and never reads or writes: a `hang` site, no TLS handshake either), and without
nftables (``--no-nft``) ``stand_ins``: ``Reset`` listeners for the refused ports (accept,
then a reset: not quite a refused SYN) and listening sockets whose accept queue is full
and never drained for the dropped ones (``full_backlog``: further SYNs are dropped).
Used by ``benchmarks.realweb.serve``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from benchmarks.realweb.web import Site

BACKLOG: Final = 4096


class Silent(asyncio.Protocol):
    """Accepts and never reads or writes (a ``hang`` site)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.pause_reading()  # type: ignore[attr-defined]


class Reset(asyncio.Protocol):
    """Accepts and resets at once (``refused`` when nftables is not available)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.abort()  # type: ignore[attr-defined]


def full_backlog(address: str, port: int) -> list[socket.socket]:
    """A listening socket on ``address:port`` whose accept queue is full and never drained:
    further SYNs are dropped (``dropped`` when nftables is not available)."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    listener.bind((address, port))
    listener.listen(0)
    held = [listener]
    for _ in range(3):
        client = socket.socket()
        client.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            client.connect((address, port))
        held.append(client)
    return held


async def stand_ins(sites: list[Site], listeners: list[asyncio.Server]) -> list[socket.socket]:
    """Without nftables: ``Reset`` listeners (added to ``listeners``) for the refused
    ports, and the sockets of ``full_backlog`` for the dropped ones (returned)."""
    loop = asyncio.get_running_loop()
    held: list[socket.socket] = []
    for site in sites:
        for port in {"refused": (80, 443), "http_only": (443,)}.get(site.kind, ()):
            listeners.append(
                await loop.create_server(
                    Reset, site.address, port, backlog=BACKLOG, reuse_port=True
                )
            )
        if site.kind == "dropped":
            held += full_backlog(site.address, 80) + full_backlog(site.address, 443)
        elif site.kind == "https_dropped":
            held += full_backlog(site.address, 443)
    return held
