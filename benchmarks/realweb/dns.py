"""A DNS server for the realweb: UDP on loopback, a recursive resolver's latency, asyncio timers.

In: the web (``web.build(domains, seed, mix)``) and a listen address (default
``127.0.0.53:53``, inside the bench's network namespace, where ``/etc/resolv.conf`` is
bind-mounted to name it). Out: answers, and on SIGTERM a summary line on stderr (queries,
answers by rcode, CPU seconds).

Answers: for ``dNNNNN.realweb.test`` and ``www.`` of it, an ``A`` record with the site's
address (TTL 300); ``AAAA`` and other types NOERROR with no answer; ``dns_nx`` sites and
any unknown name NXDOMAIN, ``dns_servfail`` SERVFAIL, ``dns_empty`` NOERROR with no
answer for every type. Packets are parsed and built with ``dnslib``.

Latency, like a recursive resolver with a cold cache: the first query for a (name, type)
waits a lognormal delay, median 90 ms (the mix's ``dns_median``) and p90 220 ms
(sigma = ln(220/90)/1.2816 ~ 0.70), at most 3 s; the same question again within the TTL
(300 s; 60 s for negative answers) waits 1 ms (the resolver's cache). Each delay is a
``loop.call_later``: thousands of queries in flight cost timers, not threads. Seeded
(``--seed``), but the order queries arrive in is the client's.

    python -m benchmarks.realweb.dns --domains 2000 --seed 1 [--mix random] [--listen 127.0.0.53:53]

prints ``ready`` on stdout once bound, serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import resource
import signal
import sys
import time
from typing import Any, Final

from dnslib import QTYPE, RCODE, RR, A, DNSRecord  # type: ignore[import-untyped]

from benchmarks.realweb.mix import MIXES, mix_for
from benchmarks.realweb.web import build

MEDIAN: Final = 0.090
SIGMA: Final = math.log(220 / 90) / 1.2816
CAP: Final = 3.0
CACHED: Final = 0.001
TTL: Final = 300
NEGATIVE_TTL: Final = 60


class Resolver(asyncio.DatagramProtocol):
    """Answers from ``table`` (name -> (answer kind, address)) after a drawn delay."""

    def __init__(
        self, table: dict[str, tuple[str, str]], seed: int, median: float = MEDIAN
    ) -> None:
        self.table = table
        self.median = median
        self.rng = random.Random(f"dns:{seed}")
        self.cache: dict[tuple[str, int], float] = {}  # question -> expiry (monotonic)
        self.transport: asyncio.DatagramTransport | None = None
        self.queries = 0
        self.by_rcode: dict[str, int] = {}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: Any) -> None:
        try:
            request = DNSRecord.parse(data)
        except Exception:  # a packet that is no DNS message: ignore it, as servers do
            return
        self.queries += 1
        q = request.q
        name = str(q.qname).rstrip(".").lower()
        kind, address = self.table.get(name, ("nxdomain", ""))
        reply = request.reply()
        ttl = NEGATIVE_TTL
        if kind == "nxdomain":
            reply.header.rcode = RCODE.NXDOMAIN
        elif kind == "servfail":
            reply.header.rcode = RCODE.SERVFAIL
        elif kind == "a" and q.qtype == QTYPE.A:
            reply.add_answer(RR(q.qname, QTYPE.A, rdata=A(address), ttl=TTL))
            ttl = TTL
        rcode = RCODE.get(reply.header.rcode)
        self.by_rcode[rcode] = self.by_rcode.get(rcode, 0) + 1
        now = time.monotonic()
        key = (name, int(q.qtype))
        if self.cache.get(key, 0.0) > now:
            delay = CACHED
        else:
            delay = min(CAP, self.median * math.exp(self.rng.gauss(0.0, SIGMA)))
            self.cache[key] = now + delay + ttl
        packet = reply.pack()
        asyncio.get_running_loop().call_later(delay, self._send, packet, addr)

    def _send(self, packet: bytes, addr: Any) -> None:
        if self.transport is not None:
            self.transport.sendto(packet, addr)


def table(domains: int, seed: int, mix: str = "fixed") -> dict[str, tuple[str, str]]:
    """Every name of the web -> (answer kind, address)."""
    out: dict[str, tuple[str, str]] = {}
    for site in build(domains, seed, mix_for(mix, seed), content=False):
        out[site.name] = out[f"www.{site.name}"] = (site.dns, site.address)
    return out


async def serve(domains: int, seed: int, mix: str, host: str, port: int) -> Resolver:
    """Bind and serve until SIGTERM/SIGINT; returns the protocol (its counters)."""
    loop = asyncio.get_running_loop()
    resolver = Resolver(table(domains, seed, mix), seed, mix_for(mix, seed).dns_median)
    transport, _ = await loop.create_datagram_endpoint(lambda: resolver, local_addr=(host, port))
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    await stop.wait()
    transport.close()
    return resolver


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.realweb.dns", description=__doc__)
    ap.add_argument("--domains", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mix", choices=MIXES, default="fixed")
    ap.add_argument("--listen", default="127.0.0.53:53")
    args = ap.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    resolver = asyncio.run(serve(args.domains, args.seed, args.mix, host, int(port)))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        f"# dns: {resolver.queries} queries {resolver.by_rcode};"
        f" cpu {usage.ru_utime + usage.ru_stime:.2f} s",
        file=sys.stderr,
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
