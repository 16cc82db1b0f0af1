"""benchmarks.realweb.cron end to end: a 30-domain web, four cron runs, two generations.

``python -m benchmarks.realweb.cron --unchanged 2 --changed 2`` in a network namespace
(the same set-up as ``test_bench_realweb``, skipped where it is), harvester's timeouts
shortened and its politeness loosened by ``--harvester-config``. What is asserted is
what the bench must measure, not how harvester fares: per run the server's requests and
sitemap bytes, the records by event, and a truth that is ``generations.delta`` between
the runs' generations; the server answers a conditional GET of an unchanged sitemap 304.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from benchmarks.bench_pipeline import ROOT
from benchmarks.realweb import generations, netns
from benchmarks.realweb.web import build
from tests.integration.realweb import FAST

DOMAINS = 30


@pytest.fixture(scope="module")
def cron_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], str]:
    pytest.importorskip("trustme", reason="the bench extra is not installed")
    pytest.importorskip("dnslib", reason="the bench extra is not installed")
    why = netns.can_unshare()
    if why is not None:
        pytest.skip(why)
    out = tmp_path_factory.mktemp("cron")
    config = out / "fast.toml"
    config.write_text(FAST)
    cmd = [sys.executable, "-m", "benchmarks.realweb.cron", "--domains", str(DOMAINS)]
    cmd += ["--unchanged", "2", "--changed", "2", "--timeout", "40"]
    cmd += ["--out", str(out / "seq"), "--harvester-config", str(config)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=170, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    return records, proc.stdout


@pytest.mark.timeout(200)
def test_runs_and_truth(cron_run: tuple[list[dict[str, Any]], str]) -> None:
    records, stdout = cron_run
    assert [(r["run"], r["generation"]) for r in records] == [(1, 0), (2, 0), (3, 1), (4, 2)]
    snaps, ops = generations.snapshots(build(DOMAINS, 1), 1, 2)
    truths = [
        generations.delta(None, snaps[0]),
        generations.delta(snaps[0], snaps[0]),
        generations.delta(snaps[0], snaps[1]),
        generations.delta(snaps[1], snaps[2]),
    ]
    for record, truth in zip(records, truths, strict=True):
        assert record["truth"] == {e: len(v) for e, v in truth.events().items()}
        assert record["returncode"] == 0
        server = record["server"]
        assert server["requests"] > 0
        assert server["sitemap_bytes"] >= 0
        assert set(record["missing"]) >= {"new", "changed", "removed"}
        assert sum(record["records"].values()) >= 0
    assert records[0]["truth"]["new"] == sum(len(s.locs) for s in build(DOMAINS, 1))
    assert records[2]["ops"] == ops[1]
    assert records[3]["ops"] == ops[2]
    assert not records[1]["ops"]
    assert records[0]["server"]["sitemap_bodies"] > 0
    # harvester sends the validators of its first run; the server answers 304
    assert records[1]["server"]["by_status"].get("304", 0) > 0
    assert "| target (issue 53) |" in stdout
    assert "| run | gen | mutated |" in stdout
