"""The results transport: a worker's messages to the parent, through the pipe or the ring.

On the ``many`` pipeline benchmark 1.35 GB crosses from the workers to the writer
(1.17 GB of JSON lines, 0.18 GB of ledger blobs). This sends the same kind of
traffic between two processes with the classes a run uses, ``workers.Results`` in
a forked worker (its own event loop) and ``workers.ResultPipe`` in the parent,
side by side in one run (rounds interleaved):

* ``pipe``: everything through the results pipe (1 MiB, as ``WorkerProcess`` widens it);
* ``ring``: the bulk bytes through a ``ring.SIZE`` shared-memory ring, the pipe
  carrying the frames (``harvester/ring.py``).

Each message is ``--block`` bytes of lines plus a ledger blob of a sixth of that (the
``many`` corpus's ratio) pickled out of band, as ``_serve`` sends them. The parent
writes every message's lines to a sink file (``--sink``, /dev/null by default: the
file system's own cost is the same either way) and releases them, as the writer
does. Printed: wall seconds, CPU seconds (user + system) of each side, and GB/s.

Usage::

    python -m benchmarks.bench_transport                 # 1.35 GB, 3 rounds
    python -m benchmarks.bench_transport --gb 0.3 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import resource
import sys
import time
from multiprocessing.connection import wait
from typing import Any

from harvester import ring
from harvester.ring import RingReader, RingWriter
from harvester.transport import HostMessage, RecordsMessage, ResultPipe, Results, widen_pipe


def _worker(results_w: int, ring_fds: tuple[int, int] | None, messages: int, block: int) -> None:
    """The forked worker: ``messages`` "records" messages, then its CPU times."""
    line = b'{"loc":"https://example.com/item/000000","lastmod":"2024-01-01T00:00:00Z"}\n'
    lines = (line * (block // len(line) + 1))[: block - block % len(line)]
    blob = bytes(range(256)) * (block // 6 // 256)

    class Blob:  # a ledger chunk's blob: pickled out of band, as LedgerRows' are
        def __reduce_ex__(self, protocol: Any) -> Any:
            return (memoryview, (pickle.PickleBuffer(blob),))

    async def run() -> None:
        out = Results(results_w, RingWriter(*ring_fds) if ring_fds else None)
        await out.open()
        for i in range(messages):
            await out.put(RecordsMessage(i, [], [Blob()]), [lines])  # type: ignore[list-item]
        usage = resource.getrusage(resource.RUSAGE_SELF)
        # The worker's CPU rides on the last message: a host report's dict.
        await out.put(HostMessage({"cpu": (usage.ru_utime, usage.ru_stime)}, None))
        await out.close()

    asyncio.run(run())


def one(mode: str, gb: float, block: int, sink: str) -> dict[str, Any]:
    """One transfer of ``gb`` GB in ``mode`` (``pipe`` or ``ring``); its figures."""
    line_bytes = block
    blob_bytes = block // 6 // 256 * 256
    messages = int(gb * 1e9 // (line_bytes + blob_bytes))
    results_r, results_w = os.pipe()
    widen_pipe(results_r)
    reader: RingReader | None = None
    child_ring: tuple[int, int] | None = None
    if mode == "ring":
        fd = ring.create()
        if fd is None:
            raise SystemExit("no memory files on this platform: no ring to measure")
        ack_r, ack_w = os.pipe()
        reader = RingReader(os.dup(fd), ack_w)
        child_ring = (fd, ack_r)
    started = time.perf_counter()
    before = os.times()
    pid = os.fork()
    if pid == 0:  # the worker
        try:
            os.close(results_r)
            _worker(results_w, child_ring, messages, block)
        finally:
            os._exit(0)
    os.close(results_w)
    if child_ring is not None:
        for fd in child_ring:
            os.close(fd)
    pipe = ResultPipe(results_r, reader)
    out = os.open(sink, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    moved = 0
    worker_cpu: tuple[float, float] | None = None
    try:
        while worker_cpu is None:
            wait([results_r])
            for msg, data in pipe.messages():
                if isinstance(msg, RecordsMessage):
                    os.write(out, data)  # the sink, as JsonlSink writes a large batch
                    moved += len(data) + sum(len(b) for b in msg.rows or ())
                elif isinstance(msg, HostMessage):
                    worker_cpu = msg.report["cpu"]
            pipe.release()
    finally:
        os.close(out)
        pipe.close()
        os.waitpid(pid, 0)
    wall = time.perf_counter() - started
    after = os.times()
    assert worker_cpu is not None
    parent = (after.user - before.user) + (after.system - before.system)
    return {
        "mode": mode,
        "gb": round(moved / 1e9, 3),
        "messages": messages,
        "seconds": round(wall, 3),
        "gb_per_s": round(moved / 1e9 / wall, 2),
        "worker_user_s": round(worker_cpu[0], 3),
        "worker_sys_s": round(worker_cpu[1], 3),
        "parent_user_s": round(after.user - before.user, 3),
        "parent_sys_s": round(after.system - before.system, 3),
        "cpu_s": round(parent + worker_cpu[0] + worker_cpu[1], 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gb", type=float, default=1.35, help="bytes to move per transfer, GB")
    ap.add_argument("--block", type=int, default=256 * 1024, help="line bytes per message")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sink", default=os.devnull, help="where the parent writes the lines")
    args = ap.parse_args(argv)
    rows: dict[str, list[dict[str, Any]]] = {"pipe": [], "ring": []}
    for _ in range(args.rounds):
        for mode in rows:
            r = one(mode, args.gb, args.block, args.sink)
            print(json.dumps(r), flush=True)
            rows[mode].append(r)
    print()
    print(
        "| transport | GB | wall s | GB/s | worker CPU s (user + sys) | parent CPU s (user + sys) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for mode, rs in rows.items():
        best = min(rs, key=lambda r: r["cpu_s"])  # the least disturbed round
        print(
            f"| {mode} | {best['gb']} | {best['seconds']} | {best['gb_per_s']} |"
            f" {best['worker_user_s'] + best['worker_sys_s']:.2f}"
            f" ({best['worker_user_s']} + {best['worker_sys_s']}) |"
            f" {best['parent_user_s'] + best['parent_sys_s']:.2f}"
            f" ({best['parent_user_s']} + {best['parent_sys_s']}) |"
        )
    print(f"\nbest of {args.rounds} rounds by total CPU; python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
