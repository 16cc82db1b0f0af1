"""benchmarks.realweb.crondue: the truth of a run given which sitemaps it did not ask."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from benchmarks.realweb import crondue
from benchmarks.realweb import generations as gen
from benchmarks.realweb.web import build

if TYPE_CHECKING:
    from pathlib import Path

DOMAINS = 100


def write_checks(run_dir: Path, r: int, rows: list[list[object]]) -> None:
    (run_dir / f"run{r}").mkdir(parents=True, exist_ok=True)
    (run_dir / f"run{r}" / "sitemaps.json").write_text(json.dumps(rows))


def test_with_everything_asked_it_is_the_plain_delta(tmp_path: Path) -> None:
    sites = build(DOMAINS, 1)
    gens = [0, 0, 1]
    truths = crondue.truths(tmp_path, sites, 1, gens)
    snaps, _ops = gen.snapshots(sites, 1, 1)
    assert truths[1] == {"new": frozenset(), "changed": frozenset(), "removed": frozenset()}
    assert truths[2] == gen.delta(snaps[0], snaps[1]).events()
    assert len(truths[0]["new"]) == len(gen.delta(None, snaps[0]).new)


def test_a_change_in_a_sitemap_not_asked_waits_for_its_due_run(tmp_path: Path) -> None:
    sites = build(DOMAINS, 1)
    history, _honest = crondue.generations(sites, 1, 1)
    # A sitemap that gained URLs from generation 0 to 1.
    name, path = next(
        (n, p)
        for n, lists in history.items()
        for p in lists[0]
        if set(lists[1][p]) - set(lists[0][p])
    )
    site = next(s for s in sites if s.name == name)
    url = f"{site.scheme}://{site.content_host}{path}"
    write_checks(tmp_path, 2, [[name, "http://x/other.xml", url, "not_due", None]])
    truths = crondue.truths(tmp_path, sites, 1, [0, 1, 1])
    before, after = history[name][0][path], history[name][1][path]
    added = set(after) - set(before)
    assert added
    assert not added & truths[1]["new"]  # not asked at run 2 (named by where it redirected)
    assert added <= truths[2]["new"]  # asked at run 3: its change then
