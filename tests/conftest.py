"""Shared test set-up.

* Hypothesis profiles: ``ci`` (deterministic, used by scripts/check) and ``dev``.
* A network fence for the whole test session: ``socket.connect`` and
  ``getaddrinfo`` refuse anything but loopback addresses, so a bug in the
  harvester's own SSRF guard or in a test fails loudly instead of sending a
  packet off this machine. It records every refused attempt in
  ``REFUSED_CONNECTIONS`` so tests can assert that nothing tried. c-ares
  (aiodns, the fetcher's default resolver) sends its own packets past those
  patches, so it may only be given loopback name servers, never the system's.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from typing import Any

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=300)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

REFUSED_CONNECTIONS: list[str] = []


def _is_loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode()
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
        REFUSED_CONNECTIONS.append(str(address))
        raise ConnectionRefusedError(f"test network fence: refused connect to {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
        REFUSED_CONNECTIONS.append(str(address))
        raise ConnectionRefusedError(f"test network fence: refused connect to {address!r}")
    return _real_connect_ex(self, address)


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if not _is_loopback(host):
        REFUSED_CONNECTIONS.append(f"getaddrinfo {host!r}")
        raise socket.gaierror(socket.EAI_NONAME, f"test network fence: no DNS for {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign,assignment]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign,assignment]
socket.getaddrinfo = _guarded_getaddrinfo


try:
    import aiodns
    import pycares
except ImportError:  # the fetcher then uses the threaded resolver, fenced above
    pass
else:
    # With aiodns installed every aiohttp session builds a c-ares resolver (its
    # DefaultResolver), harmless until it is asked something. One not given
    # loopback name servers is pointed at the discard port of 127.0.0.1 and
    # refuses every question, recording it.
    _real_dns_init = aiodns.DNSResolver.__init__

    def _guarded_dns_init(
        self: aiodns.DNSResolver, nameservers: Any = None, *args: Any, **kwargs: Any
    ) -> None:
        from harvester.config import split_nameserver

        servers = [str(s) for s in nameservers or ()]
        fenced = not servers or not all(_is_loopback(split_nameserver(s)[0]) for s in servers)
        self._fenced = fenced  # type: ignore[attr-defined]
        _real_dns_init(self, ["127.0.0.1:9"] if fenced else servers, *args, **kwargs)

    def _fence_dns(method: Any) -> Any:
        def guarded(self: aiodns.DNSResolver, *args: Any, **kwargs: Any) -> Any:
            if getattr(self, "_fenced", False):
                REFUSED_CONNECTIONS.append(f"c-ares {method.__name__} {args[:1]!r}")
                raise aiodns.error.DNSError(
                    pycares.errno.ARES_ECONNREFUSED, "test network fence: no DNS but loopback's"
                )
            return method(self, *args, **kwargs)

        return guarded

    aiodns.DNSResolver.__init__ = _guarded_dns_init  # type: ignore[method-assign]
    for _name in ("getaddrinfo", "gethostbyname", "gethostbyaddr", "getnameinfo", "query"):
        setattr(aiodns.DNSResolver, _name, _fence_dns(getattr(aiodns.DNSResolver, _name)))
    aiodns.DNSResolver.query_dns = _fence_dns(aiodns.DNSResolver.query_dns)  # type: ignore[method-assign]
