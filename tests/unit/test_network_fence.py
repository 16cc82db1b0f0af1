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


async def test_c_ares_without_loopback_name_servers_is_fenced() -> None:
    import socket as socket_module

    from harvester.config import FetchConfig
    from harvester.crawl.resolver import make_resolver

    before = len(REFUSED_CONNECTIONS)
    resolver = make_resolver(FetchConfig())  # the system's name servers: fenced
    try:
        with pytest.raises(socket_module.gaierror, match="fence"):
            await resolver.resolve("example.com", 80)
    finally:
        await resolver.close()
    assert len(REFUSED_CONNECTIONS) == before + 1
