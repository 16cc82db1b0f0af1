"""benchmarks.realweb end to end: a 20-domain web in a network namespace, harvested.

The whole bench runs as ``python -m benchmarks.realweb`` (certificates, namespace, nft
rules, DNS and HTTP servers, harvester, the report) with harvester's timeouts shortened
by ``--harvester-config`` (only here: the bench itself measures the defaults), so the
dead and hanging sites cost seconds. Skipped, with the reason, where ``unshare -rnm``
is not permitted or the ``bench`` extra (trustme, dnslib) is not installed; without
``nft`` the server's stand-ins for the reset and dropped addresses are used.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from benchmarks.bench_pipeline import ROOT
from benchmarks.realweb import netns
from benchmarks.realweb.web import EXPECT, KINDS, build

if TYPE_CHECKING:
    from pathlib import Path

DOMAINS = 20  # >= len(KINDS): every kind once, then drawn by weight
FAST = """
[fetch]
connect_timeout = 1.0
read_timeout = 1.0
total_timeout = 4.0
retries = 0
"""


@pytest.fixture(scope="module")
def realweb_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, object], str, Path]:
    pytest.importorskip("trustme", reason="the bench extra is not installed")
    pytest.importorskip("dnslib", reason="the bench extra is not installed")
    why = netns.can_unshare()
    if why is not None:
        print(f"skipping the realweb bench: {why}")
        pytest.skip(why)
    out = tmp_path_factory.mktemp("realweb")
    config = out / "fast.toml"
    config.write_text(FAST)
    cmd = [sys.executable, "-m", "benchmarks.realweb", "--domains", str(DOMAINS)]
    cmd += ["--tools", "harvester", "--timeout", "40", "--out", str(out / "run")]
    cmd += ["--harvester-config", str(config)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=55, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert len(records) == 1, proc.stdout
    return records[0], proc.stdout, out / "run"


@pytest.mark.timeout(90)
def test_figures_are_printed(realweb_run: tuple[dict[str, object], str, Path]) -> None:
    record, stdout, _ = realweb_run
    for key in ("wall_s", "cpu_s", "peak_rss_mb", "domains_per_s", "urls_found", "urls_truth"):
        assert isinstance(record[key], (int, float)), key
    assert record["tool"] == "harvester"
    assert record["domains"] == DOMAINS
    assert not record["timed_out"]
    assert record["returncode"] == 0
    assert "| harvester |" in stdout
    assert "politeness limit s" in stdout
    assert "(expected -> got)" in stdout
    servers = record["servers"]
    assert isinstance(servers, dict)
    assert any("cpu" in line for line in servers["serve"])
    assert any("cpu" in line for line in servers["dns"])


@pytest.mark.timeout(90)
def test_healthy_sites_exact(realweb_run: tuple[dict[str, object], str, Path]) -> None:
    record, _, _ = realweb_run
    sites = build(DOMAINS, 1)
    assert record["urls_truth"] == sum(len(s.locs) for s in sites)
    assert record["missing"] == 0
    assert record["extra"] == 0
    assert record["urls_found"] == record["urls_truth"]
    assert record["exact_domains"] == record["healthy_domains"]
    assert record["healthy_domains"] == sum(s.expect == "ok" for s in sites)


@pytest.mark.timeout(90)
def test_dead_sites_fail_with_their_class(
    realweb_run: tuple[dict[str, object], str, Path],
) -> None:
    record, _, _ = realweb_run
    confusion = record["confusion"]
    assert isinstance(confusion, dict)
    assert sum(confusion.values()) == DOMAINS
    seen = set()
    for pair in confusion:
        expected, got = pair.split(" -> ")
        seen.add(expected)
        # (Every class, "none" too: no sitemap anywhere is no failure, 404s or soft 404s.)
        assert got == expected, pair
    assert seen == {EXPECT[k] for k in KINDS}
