"""Several processes serving the realweb: helper servers beside ``serve.main``'s own.

In: ``serve``'s command-line arguments and ``--processes K``. Out: ``start(argv, k, log)``
starts K - 1 helpers (``python -m benchmarks.realweb.serve ... --helper``) and returns
once each has printed ``ready``; ``stop(helpers)`` ends them (SIGTERM, by pid) and
returns their request logs merged (``serve``'s ``--hosts`` format) for the main process
to add to its own.

Why: one process does every TLS handshake of the web in its event loop. Under load its
share of the CPU bounds the handshakes per second of a whole web of "servers", and a
client dialing hundreds of hosts at once then times out on the connect because of the
harness, not of the site (benchmarks/README.md, rise51c). Every process binds the
wildcard :80 and :443 with ``SO_REUSEPORT`` in the same namespace, so the kernel spreads
the connections over them; only the main one binds the per-address listeners of the
``hang`` sites and the stand-ins (the kernel prefers an exact address to the wildcard, so
those addresses never reach a helper).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Helper", "merge", "start", "stop"]


class Helper:
    """One helper server: its process and the file its request log goes to."""

    def __init__(self, proc: subprocess.Popen[str], hosts: Path) -> None:
        self.proc = proc
        self.hosts = hosts


def start(argv: list[str], count: int, scratch: Path, log: TextIO | None = None) -> list[Helper]:
    """Start ``count`` helpers with ``argv`` (serve's arguments without ``--processes``,
    ``--hosts`` or ``--stats``), each logging to ``scratch/helper-<i>.json``; returns once
    all are ready. Raises ``RuntimeError`` when one ends before it is."""
    helpers = []
    for i in range(count):
        hosts = scratch / f"helper-{i}.json"
        cmd = [sys.executable, "-m", "benchmarks.realweb.serve", *argv, "--helper"]
        cmd += ["--hosts", str(hosts)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
        helpers.append(Helper(proc, hosts))
    for helper in helpers:
        assert helper.proc.stdout is not None
        if helper.proc.stdout.readline().strip() != "ready":
            stop(helpers)
            raise RuntimeError("a realweb helper server ended before it was ready")
    return helpers


def stop(helpers: list[Helper]) -> dict[str, list[float]]:
    """SIGTERM each helper (by its pid), wait for it (SIGKILL after 15 s); their request
    logs merged (a helper that wrote none adds nothing)."""
    for helper in helpers:
        if helper.proc.poll() is None:
            helper.proc.send_signal(signal.SIGTERM)
    logs = []
    for helper in helpers:
        try:
            helper.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            helper.proc.kill()
            helper.proc.wait()
        if helper.hosts.exists():
            logs.append(json.loads(helper.hosts.read_text()))
    return merge(logs)


def merge(logs: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    """Request logs ``{domain: [requests, connections, gap]}`` as one: counts added, the
    longest gap kept (a gap is seen by the process that took the new connection)."""
    merged: dict[str, list[float]] = {}
    for log in logs:
        for name, (requests, connections, gap) in log.items():
            row = merged.setdefault(name, [0, 0, 0.0])
            row[0] += requests
            row[1] += connections
            row[2] = max(row[2], gap)
    return merged
