"""benchmarks.realweb.handshakes (a burst of TLS handshakes against a loopback server) and
group.merge (the request logs of several server processes).

A TLS server on 127.0.0.1 with a trustme certificate: every handshake of the burst is
counted complete, and one against a port nothing listens on is counted as a failure.
"""

from __future__ import annotations

import asyncio
import socket
import ssl

import pytest

from benchmarks.realweb import handshakes as hs
from benchmarks.realweb.handshakes import burst, quantile

trustme = pytest.importorskip("trustme", reason="the bench extra is not installed")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_a_burst_counts_completed_and_failed_handshakes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ca = trustme.CA()
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("a.test").configure_cert(server_ctx)
    client_ctx = ssl.create_default_context()
    ca.configure_trust(client_ctx)
    monkeypatch.setattr(ssl, "create_default_context", lambda: client_ctx)
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0, ssl=server_ctx)
    port = server.sockets[0].getsockname()[1]
    closed = _free_port()
    monkeypatch.setattr(hs, "PORT", port)
    async with server:
        figures = await burst([("127.0.0.1", "a.test")] * 5, 2, 5.0)
        monkeypatch.setattr(hs, "PORT", closed)
        refused = await burst([("127.0.0.1", "a.test")], 2, 5.0)
    assert (figures["begun"], figures["completed"], figures["failures"]) == (5, 5, {})
    assert 0 < figures["median_s"] <= figures["max_s"]  # type: ignore[operator]
    assert refused["completed"] == 0
    assert refused["failures"] == {"ConnectionRefusedError": 1}


def test_quantile() -> None:
    assert quantile([], 0.5) == 0.0
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 3.0
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.99) == 4.0


def test_the_request_logs_of_several_server_processes_merge() -> None:
    from benchmarks.realweb.group import merge

    one = {"a": [3, 1, 0.0], "b": [2, 2, 4.5]}
    two = {"a": [1, 1, 2.5], "c": [1, 1, 0.0]}
    assert merge([one, two]) == {"a": [4, 2, 2.5], "b": [2, 2, 4.5], "c": [1, 1, 0.0]}
    assert merge([]) == {}
