"""The test session's network fence works (see tests/conftest.py)."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import REFUSED_CONNECTIONS


def test_non_loopback_connect_is_refused() -> None:
    before = len(REFUSED_CONNECTIONS)
    with socket.socket() as s, pytest.raises(ConnectionRefusedError):
        s.connect(("169.254.169.254", 80))
    assert len(REFUSED_CONNECTIONS) == before + 1


def test_dns_for_real_names_is_refused() -> None:
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("example.com", 80)


async def test_asyncio_open_connection_is_fenced() -> None:
    import asyncio

    with pytest.raises(OSError, match="fence"):
        await asyncio.open_connection("10.0.0.1", 80)
