"""``benchmarks/bench_pipeline.py --rounds``: every step measured once a round, judged over all.

A real run on loopback (3 hosts): the server, the CPU limit and ``harvester run`` as
subprocesses, as the benchmark runs them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

from tests.integration.conftest import free_port

if TYPE_CHECKING:
    from pathlib import Path


def test_rounds_interleave_the_steps_and_judge_each_rounds_ratio(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.bench_pipeline",
            "--hosts",
            "3",
            "--only",
            "cpu,harvester",
            "--rounds",
            "2",
            "--port",
            str(free_port("127.0.0.1")),
            "--corpus",
            str(tmp_path / "corpus"),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    # In the order run: each round measures the limit, then the harvester.
    assert [(r["round"], r["measure"]) for r in lines] == [
        (1, "cpu_limit"),
        (1, "harvester"),
        (2, "cpu_limit"),
        (2, "harvester"),
    ]
    results = json.loads((out / "results.json").read_text())
    assert results["rounds"] == 2
    expected = results["urls_expected"]
    assert expected > 0
    for number, ratio in enumerate(results["ratios"], 1):
        harvester, limit = (
            next(r for r in lines if r["round"] == number and r["measure"] == m)
            for m in ("harvester", "cpu_limit")
        )
        assert ratio["limit"] == "cpu_limit"
        # The round's own pair, not another round's (the records' URLs/s are rounded).
        assert abs(ratio["ratio"] - harvester["urls_per_s"] / limit["urls_per_s"]) < 0.001
        assert harvester["urls"] == expected
        # The kernel's part of the CPU seconds, and the machine's steal time beside them.
        assert 0 <= harvester["sys_s"] <= harvester["cpu_s"]
        assert harvester["machine_steal_s"] >= 0
    judged = {t["line"].split(" ", 1)[0]: t for t in results["targets"]}
    assert "median of 2 rounds" in judged["harvester"]["line"]
    assert judged["URLs"]["met"] is True
    assert judged["peak"]["met"] is True
    assert "| round | measurement |" in done.stdout
