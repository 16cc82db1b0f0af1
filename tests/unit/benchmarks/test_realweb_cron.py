"""benchmarks.realweb's generations and cron report: the pure parts (no namespace, no server).

Generation g of the web is a function of (web, seed, g); each op moves the truth the way
issue 53's rules say (added URLs new, removed ones removed, an advanced lastmod changed
only on an honest host, a moved sitemap or a re-split moves nothing); the server's
conditional-GET rule; the report's check of a run's records against its truth.
"""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING

import pytest

from benchmarks.realweb import generations as gen
from benchmarks.realweb.cron import plan
from benchmarks.realweb.cronreport import check, emitted
from benchmarks.realweb.mix import KINDS
from benchmarks.realweb.web import Page, build

if TYPE_CHECKING:
    from pathlib import Path

DOMAINS = 100


def _maps() -> dict[str, gen.Sitemaps]:
    return {s.name: gen.parse(s) for s in build(DOMAINS, 1) if s.expect == "ok"}


def _snap(maps: dict[str, gen.Sitemaps]) -> gen.Snapshot:
    return {name: (m.honest, gen.listing(m)) for name, m in maps.items()}


def _site_with(pred: object) -> gen.Sitemaps:
    for maps in _maps().values():
        if pred(maps):  # type: ignore[operator]
            return maps
    raise AssertionError("no such site on the web")


def test_parse_reads_what_web_wrote() -> None:
    sites = build(DOMAINS, 1)
    for site in sites:
        if site.expect == "ok":
            maps = gen.parse(site)
            assert sorted(gen.listing(maps)) == sorted(site.locs)
            assert maps.urlsets
            for path, entries in maps.urlsets.items():
                assert gen.urlset(entries) == site.pages[path].body or path.endswith(".gz")


def test_generation_is_deterministic() -> None:
    one, two = build(DOMAINS, 1), build(DOMAINS, 1)
    maps1, ops1 = gen.evolve(one, 1, 3)
    maps2, ops2 = gen.evolve(two, 1, 3)
    assert ops1 == ops2
    assert sum(ops1.values()) == round(gen.SHARE * sum(len(m.urlsets) for m in maps1.values()))
    for a, b in zip(one, two, strict=True):
        assert a.pages == b.pages
    assert _snap(maps1) == _snap(maps2)
    snaps, ops = gen.snapshots(build(DOMAINS, 1), 1, 3)
    assert snaps[3] == _snap(maps1)
    assert ops[3] == ops1
    assert ops[0] == {}


def test_unchanged_generation_has_an_empty_delta() -> None:
    snaps, _ = gen.snapshots(build(DOMAINS, 1), 1, 0)
    d = gen.delta(snaps[0], snaps[0])
    assert not d.new
    assert not d.changed
    assert not d.removed
    first = gen.delta(None, snaps[0])
    assert len(first.new) == sum(len(s.locs) for s in build(DOMAINS, 1))


def test_add_and_remove() -> None:
    maps = _site_with(lambda m: len(next(iter(m.urlsets.values()))) >= 40)
    path = next(iter(maps.urlsets))
    before = {"x": (maps.honest, dict(gen.listing(maps)))}
    rng = random.Random(1)
    while (op := gen.mutate(rng, maps, path, 1)) not in ("add", "remove"):
        before = {"x": (maps.honest, dict(gen.listing(maps)))}
    d = gen.delta(before, {"x": (maps.honest, gen.listing(maps))})
    if op == "add":
        assert len(d.new) >= 1
        assert not d.removed
        assert all("/added/g1-" in loc for loc in d.new)
    else:
        assert len(d.removed) >= 1
        assert not d.new
    assert not d.changed


@pytest.mark.parametrize("honest", [True, False])
def test_lastmod_counts_only_on_honest_hosts(honest: bool) -> None:
    maps = _site_with(lambda m: m.honest == honest and len(m.urlsets) == 1)
    path = next(iter(maps.urlsets))
    before = {"x": (maps.honest, dict(gen.listing(maps)))}
    entries = maps.urlsets[path]
    entries[0] = (entries[0][0], gen.gen_date(1))
    after = {"x": (maps.honest, gen.listing(maps))}
    d = gen.delta(before, after)
    assert d.changed == ({entries[0][0]} if honest else set())
    assert gen.gen_date(1) > "2025-12-31"


def test_moves_are_not_deltas() -> None:
    maps = _site_with(lambda m: len(m.urlsets) >= 2 and len(m.indexes) == 1)
    before = _snap({"x": maps})
    paths = sorted(maps.urlsets)
    rng = random.Random(3)
    ops = set()
    for _ in range(200):
        op = gen.mutate(rng, maps, sorted(maps.urlsets)[0], 2)
        if op in ("redirect", "resplit"):
            ops.add(op)
            assert gen.delta(before, _snap({"x": maps})) == gen.Delta(
                frozenset(), frozenset(), frozenset()
            )
        before = _snap({"x": maps})
        if ops == {"redirect", "resplit"}:
            break
    assert ops == {"redirect", "resplit"}
    # the redirect's source still answers, one hop to where the file is now
    for source, target in maps.redirects.items():
        assert target in maps.urlsets
        assert source in paths or source.startswith("/moved/")


def test_render_serves_redirects_and_validators() -> None:
    sites = build(DOMAINS, 1)
    maps, _ = gen.evolve(sites, 1, 4)
    moved = [(s, m) for s in sites if (m := maps.get(s.name)) and m.redirects]
    assert moved
    site, m = moved[0]
    source, target = next(iter(m.redirects.items()))
    assert site.pages[source].status == 301
    assert site.pages[source].location == m.base + target
    assert site.pages[target].status == 200
    kinds = {gen.validators_of(s, 1) for s in sites}
    assert kinds == {"both", "etag", "last_modified", "none"}
    for s in sites:
        if s.name in maps and gen.validators_of(s, 1) == "both":
            heads = dict(s.pages[next(iter(maps[s.name].urlsets))].headers)
            assert set(heads) == {"ETag", "Last-Modified"}
            break


def test_not_modified() -> None:
    page = Page(
        200, "application/xml", b"x", headers=(("ETag", '"ab"'), ("Last-Modified", gen.BASE_HTTP))
    )
    assert gen.not_modified(page, '"ab"', "")
    assert gen.not_modified(page, 'W/"ab", "cd"', "")
    assert not gen.not_modified(page, '"cd"', gen.BASE_HTTP)  # If-None-Match decides
    assert gen.not_modified(page, "", gen.BASE_HTTP)
    assert not gen.not_modified(page, "", "Mon, 01 Jan 2024 00:00:00 GMT")
    assert not gen.not_modified(page, "", "garbage")
    assert not gen.not_modified(page, "", "")
    assert not gen.not_modified(Page(200, "application/xml", b"x"), '"ab"', gen.BASE_HTTP)
    assert not gen.not_modified(Page(404), '"ab"', "")


def test_plan() -> None:
    assert plan(3, 5) == [0, 0, 0, 1, 2, 3, 4, 5]
    assert plan(0, 2) == [0, 1, 2]


def test_check_and_emitted(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    records = [
        {"loc": "a", "event": "new"},
        {"loc": "b", "event": "new"},
        {"loc": "c", "event": "unverified"},
        {"loc": "s", "event": "new", "is_sitemap": True},
        {"loc": "d", "event": "removed"},
    ]
    out.with_name("out.jsonl.part").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    got = emitted(out)
    assert got == {"new": {"a", "b"}, "unverified": {"c"}, "removed": {"d"}}
    truth = {"new": frozenset({"a", "z"}), "changed": frozenset(), "removed": frozenset({"d"})}
    missing, extra = check(got, truth)
    assert missing == {"new": 1, "changed": 0, "removed": 0}
    assert extra == {"new": 1, "changed": 0, "removed": 0, "unverified": 1}


def test_every_kind_still_on_a_generation() -> None:
    sites = build(len(KINDS), 2)
    gen.evolve(sites, 2, 2)
    assert [s.kind for s in sites] == list(KINDS)
