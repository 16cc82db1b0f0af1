"""``benchmarks/bench_transport.py`` runs and moves the same bytes both ways (a small size)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_the_transport_bench_moves_every_byte_through_the_pipe_and_the_ring() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_transport", "--gb", "0.02", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [r["mode"] for r in rows] == ["pipe", "ring"]
    assert rows[0]["gb"] == rows[1]["gb"] >= 0.019  # every message's lines and blob arrived
    assert rows[0]["messages"] == rows[1]["messages"]
    assert "| ring |" in done.stdout
