"""bench_tls measures real handshakes: a TLS server process on loopback, a throwaway CA."""

from __future__ import annotations

import os

import pytest

from benchmarks.bench_tls import measure

pytest.importorskip("trustme")
pytest.importorskip("certifi")


@pytest.mark.parametrize("rsa", [False, True])
def test_every_row_is_measured_and_the_resumed_row_resumes(rsa: bool) -> None:
    before = os.environ.get("SSL_CERT_FILE")
    rows, resumed = measure(handshakes=4, repeat=1, rsa=rsa)
    assert set(rows) == {
        "tcp only",
        "harvester",
        "no verify",
        "TLS 1.2",
        "OP_NO_TICKET",
        "certifi store",
        "blocking",
        "blocking, resumed",
    }
    assert all(value > 0 for value in rows.values())
    assert resumed == 4  # each measured resumption resumed the session before it
    assert os.environ.get("SSL_CERT_FILE") == before
