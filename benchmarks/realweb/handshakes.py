"""The realweb server's TLS handshakes under a burst: how long each takes, how many never end.

In: the web (``--domains``, ``--seed``, ``--mix``), ``--concurrency`` (handshakes in flight
at once), ``--rounds`` (each TLS site is dialed once per round, one round after the other: the
first round meets each domain's first handshake), ``--timeout`` (seconds per
handshake). Run inside the bench's namespace as its measured tool, after the run's
certificates exist (a realweb run directory)::

    python -m benchmarks.realweb.netns --domains 2000 --seed 3 --mix random \\
        --run-dir RUN_DIR --tool handshakes --timeout 600 -- \\
        python -m benchmarks.realweb.handshakes --domains 2000 --seed 3 --mix random

Out: one JSON line per round on stdout: handshakes begun, completed, timed out, failed, and the
seconds from ``connect()`` to the handshake's end (median, p90, p99, max). The server's
own line (its handshakes begun, its loop's lateness) is in ``RUN_DIR/handshakes/``. Each
connection dials the site's address by IP with the site's name as SNI (no DNS: only the
server's accept and handshake are measured), then closes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import sys
import time

from benchmarks.realweb.mix import MIXES, mix_for
from benchmarks.realweb.web import TLS_KINDS, build
from benchmarks.server import new_event_loop

PORT = 443  # the web's https port


async def handshake(address: str, name: str, ctx: ssl.SSLContext, limit_s: float) -> float:
    """Seconds to connect to ``address``:``PORT`` and complete TLS as ``name`` (at most
    ``limit_s``: then ``TimeoutError``); raises the connection's error on failure."""
    started = time.perf_counter()
    _, writer = await asyncio.wait_for(
        asyncio.open_connection(address, PORT, ssl=ctx, server_hostname=name), limit_s
    )
    took = time.perf_counter() - started
    writer.close()
    return took


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of sorted ``values`` (0 for none)."""
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


async def burst(
    targets: list[tuple[str, str]], concurrency: int, limit_s: float
) -> dict[str, object]:
    """Every (address, name) dialed, ``concurrency`` at once, each given ``limit_s``; the
    figures (module docstring)."""
    ctx = ssl.create_default_context()  # SSL_CERT_FILE: the run's CA
    gate = asyncio.Semaphore(concurrency)
    took: list[float] = []
    failures: dict[str, int] = {}

    async def one(address: str, name: str) -> None:
        async with gate:
            try:
                took.append(await handshake(address, name, ctx, limit_s))
            except (TimeoutError, OSError, ssl.SSLError) as exc:
                why = type(exc).__name__
                failures[why] = failures.get(why, 0) + 1

    started = time.perf_counter()
    await asyncio.gather(*(one(a, n) for a, n in targets))
    took.sort()
    return {
        "begun": len(targets),
        "completed": len(took),
        "failures": failures,
        "wall_s": round(time.perf_counter() - started, 2),
        "median_s": round(quantile(took, 0.5), 4),
        "p90_s": round(quantile(took, 0.9), 4),
        "p99_s": round(quantile(took, 0.99), 4),
        "max_s": round(took[-1] if took else 0.0, 4),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.realweb.handshakes")
    ap.add_argument("--domains", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mix", choices=MIXES, default="fixed")
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=10.0)
    args = ap.parse_args(argv)
    sites = build(args.domains, args.seed, mix_for(args.mix, args.seed), content=False)
    targets = [(s.address, s.name) for s in sites if s.kind in TLS_KINDS]
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        for r in range(args.rounds):  # the first round: each domain's first handshake
            figures = runner.run(burst(targets, args.concurrency, args.timeout))
            print(json.dumps({"round": r + 1, "concurrency": args.concurrency, **figures}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
