"""What a TLS handshake costs the client, and whether a context option changes it (issue 52).

A real web is mostly one connection per new host, so each host's first request pays a
full handshake. This measures the client's CPU per handshake on loopback, the server in
its own process (its CPU is not counted): a throwaway CA (``trustme``), one leaf
certificate for ``h.bench`` (ECDSA P-256, or RSA 2048 with ``--rsa``), a server that
completes the handshake and closes.

Rows (each the best of ``--repeat`` rounds of ``--handshakes``, CPU µs per handshake,
``time.process_time``):

- ``tcp only``: connect and close, no TLS (what is not the handshake);
- ``harvester``: harvester's own client context (``connector.tls_context``: the
  system's default verify paths, ``SSL_CERT_FILE`` pointing at the CA), on the loop a run
  uses (uvloop when installed);
- variants of it: ``no verify`` (no chain, no name check), ``TLS 1.2``,
  ``OP_NO_TICKET``, ``certifi store`` (the CA added to certifi's ~150 roots: a system-sized
  store), ``blocking`` (the same context on a plain blocking socket: no event loop);
- ``blocking, resumed``: a blocking socket resuming the previous session (the one case
  a session cache could serve: a second connection to a host already met).

Usage::

    python -m benchmarks.bench_tls                       # 300 handshakes x 3 rounds
    python -m benchmarks.bench_tls --handshakes 500 --rsa

Out: a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.bench_hops import run

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

NAME = "h.bench"
ADDRESS = "127.0.0.1"

# The server: completes each handshake, sends one byte (after TLS 1.3's session tickets),
# waits for the client to close, closes.
SERVER = r"""
import asyncio, ssl, sys
ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
ctx.load_cert_chain(sys.argv[1])
async def handle(reader, writer):
    try:
        writer.write(b"x")
        await reader.read(1)
    except (OSError, ssl.SSLError):
        pass
    writer.close()
async def main():
    server = await asyncio.start_server(handle, sys.argv[2], 0, ssl=ctx, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
asyncio.run(main())
"""


def make_certificates(work: Path, rsa: bool) -> tuple[Path, Path]:
    """The CA's PEM and the server's key and chain PEM, written under ``work``."""
    import trustme

    key_type = trustme.KeyType.RSA if rsa else trustme.KeyType.ECDSA
    ca = trustme.CA(key_type=key_type)
    leaf = ca.issue_cert(NAME, key_type=key_type)
    ca_pem, leaf_pem = work / "ca.pem", work / "leaf.pem"
    ca.cert_pem.write_to_path(str(ca_pem))
    leaf.private_key_and_cert_chain_pem.write_to_path(str(leaf_pem))
    return ca_pem, leaf_pem


def contexts(ca_pem: Path) -> dict[str, ssl.SSLContext]:
    """The client contexts measured, by row name: each built with ``SSL_CERT_FILE`` set
    to the CA (as a realweb run sets it), the environment restored after."""
    import certifi

    from harvester.config import FetchConfig
    from harvester.crawl.connector import tls_context

    before = os.environ.get("SSL_CERT_FILE")
    os.environ["SSL_CERT_FILE"] = str(ca_pem)
    try:
        return _contexts(ca_pem, tls_context(FetchConfig()), certifi.where())
    finally:
        if before is None:
            del os.environ["SSL_CERT_FILE"]
        else:
            os.environ["SSL_CERT_FILE"] = before


def _contexts(ca_pem: Path, ours: ssl.SSLContext, roots: str) -> dict[str, ssl.SSLContext]:
    out = {"harvester": ours}
    unverified = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE
    out["no verify"] = unverified
    tls12 = ssl.create_default_context()
    tls12.maximum_version = ssl.TLSVersion.TLSv1_2
    out["TLS 1.2"] = tls12
    no_ticket = ssl.create_default_context()
    no_ticket.options |= ssl.OP_NO_TICKET
    out["OP_NO_TICKET"] = no_ticket
    big = ssl.create_default_context(cafile=roots)
    big.load_verify_locations(cafile=str(ca_pem))
    out["certifi store"] = big
    return out


async def loop_handshake(port: int, context: ssl.SSLContext | None) -> None:
    """One connection on the running loop (TLS when ``context``), closed at once."""
    _, writer = await asyncio.open_connection(
        ADDRESS, port, ssl=context, server_hostname=NAME if context else None
    )
    writer.close()
    with contextlib.suppress(OSError, ssl.SSLError):
        await writer.wait_closed()


def blocking_handshake(
    port: int, context: ssl.SSLContext, session: list[ssl.SSLSession] | None
) -> bool:
    """One TLS connection on a blocking socket, up to the server's first byte (so TLS
    1.3's session tickets, sent before it, are read); with ``session``, resumes
    ``session[0]`` when there is one and keeps the new session there. Out: whether
    the handshake resumed a session."""
    with socket.create_connection((ADDRESS, port)) as raw:
        resume = session[0] if session else None
        with context.wrap_socket(raw, server_hostname=NAME, session=resume) as wrapped:
            wrapped.recv(1)
            if session is not None and wrapped.session is not None:
                session[:] = [wrapped.session]
            return bool(wrapped.session_reused)


async def loop_rows(
    port: int, handshakes: int, ctxs: dict[str, ssl.SSLContext]
) -> dict[str, float]:
    """CPU µs per handshake of each row on the running loop, one round."""

    async def per(fn: Callable[[], Awaitable[None]]) -> float:
        for _ in range(20):  # warm: the context's first use, the loop's first sockets
            await fn()
        start = time.process_time()
        for _ in range(handshakes):
            await fn()
        return (time.process_time() - start) / handshakes * 1e6

    rows = {"tcp only": await per(functools.partial(loop_handshake, port, None))}
    for name, context in ctxs.items():
        rows[name] = await per(functools.partial(loop_handshake, port, context))
    return rows


def blocking_rows(
    port: int, handshakes: int, context: ssl.SSLContext
) -> tuple[dict[str, float], int]:
    """CPU µs per handshake on blocking sockets: full, then resuming the last session;
    and how many of the measured resumptions did resume."""
    rows, resumed = {}, 0
    sessions: tuple[tuple[str, list[ssl.SSLSession] | None], ...] = (
        ("blocking", None),
        ("blocking, resumed", []),
    )
    for name, session in sessions:
        for _ in range(20):
            blocking_handshake(port, context, session)
        start = time.process_time()
        reused = sum(blocking_handshake(port, context, session) for _ in range(handshakes))
        rows[name] = (time.process_time() - start) / handshakes * 1e6
        resumed = reused if session is not None else resumed
    return rows, resumed


def measure(handshakes: int, repeat: int, rsa: bool) -> tuple[dict[str, float], int]:
    """Each row's best CPU µs per connection over ``repeat`` rounds, and how many of the
    last round's resumptions resumed (a round measures ``handshakes`` of each row)."""
    with tempfile.TemporaryDirectory(prefix="bench-tls-") as tmp:
        ca_pem, leaf_pem = make_certificates(Path(tmp), rsa)
        with subprocess.Popen(
            [sys.executable, "-c", SERVER, str(leaf_pem), ADDRESS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        ) as server:
            assert server.stdin is not None
            assert server.stdout is not None
            try:
                port = int(server.stdout.readline())
                ctxs = contexts(ca_pem)
                best: dict[str, float] = {}
                resumed = 0
                for _ in range(repeat):
                    rows = run(loop_rows(port, handshakes, ctxs))
                    blocking, resumed = blocking_rows(port, handshakes, ctxs["harvester"])
                    rows.update(blocking)
                    for name, value in rows.items():
                        best[name] = min(best.get(name, value), value)
            finally:
                server.stdin.close()  # the server's signal to stop
                server.wait(timeout=10)
    return best, resumed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    ap.add_argument("--handshakes", type=int, default=300, help="per row and round")
    ap.add_argument("--repeat", type=int, default=3, help="rounds; each row's best is kept")
    ap.add_argument("--rsa", action="store_true", help="RSA 2048 certificates (else ECDSA)")
    args = ap.parse_args(argv)
    best, resumed = measure(args.handshakes, args.repeat, args.rsa)
    print(
        f"Client CPU per connection, {'RSA 2048' if args.rsa else 'ECDSA P-256'} leaf, "
        f"{ssl.OPENSSL_VERSION}, best of {args.repeat} x {args.handshakes} "
        f"(resumed: {resumed} of {args.handshakes})\n"
    )
    print("| row | CPU µs per connection | vs harvester |")
    print("| --- | ---: | ---: |")
    for name, value in best.items():
        print(f"| {name} | {value:.0f} | {value / best['harvester']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
