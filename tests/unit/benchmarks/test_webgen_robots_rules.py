"""``benchmarks.webgen``'s ``robots_rules=20`` (bench_verdicts_run, issue 48): every host's
robots.txt holds 20 rules for ``*`` (18 Disallow, 2 Allow), about a sixth of the URLs are
disallowed, and the sitemaps are the same bytes as without the knob."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from benchmarks.webgen import generate, load_manifest
from harvester.crawl.robotsrules import compile_rules, parse_groups
from tests.unit.benchmarks.corpus import entries_of

if TYPE_CHECKING:
    from pathlib import Path


def test_twenty_rules_a_host_and_the_same_urls(tmp_path: Path) -> None:
    plain = generate("many", tmp_path / "many", hosts=12, jobs=1)
    ruled = generate("many", tmp_path / "ruled", hosts=12, jobs=1, robots_rules=20)
    assert ruled.total_urls == plain.total_urls
    entries = entries_of(tmp_path / "ruled")
    assert [e.loc for e in entries] == [e.loc for e in entries_of(tmp_path / "many")]
    disallowed = 0
    for host in load_manifest(tmp_path / "ruled")["hosts"]:
        text = (tmp_path / "ruled" / "sites" / host["address"] / "robots.txt").read_text()
        lines = text.splitlines()
        assert lines[0] == "User-agent: *"
        assert sum(ln.startswith("Disallow: ") for ln in lines) == 18
        assert sum(ln.startswith("Allow: ") for ln in lines) == 2
        assert any(ln.startswith("Sitemap: ") for ln in lines)
        rules = compile_rules(parse_groups(text), "harvester")
        locs = [e.loc for e in entries if e.loc.startswith(host["origin"] + "/")]
        assert locs
        disallowed += rules.allowed_many(locs).count(False)
    assert 0.1 < disallowed / len(entries) < 0.3  # about a sixth over many hosts


def test_other_values_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="robots_rules"):
        generate("many", tmp_path / "x", hosts=2, jobs=1, robots_rules=5)
    with pytest.raises(ValueError, match="robots_rules"):
        generate("demo", tmp_path / "y", jobs=1, robots_rules=20)
