"""benchmarks.realweb's mix and limits: the pure parts (no namespace, no server).

The fixed web stays issue 29's web except where issue 51's kinds were given a share (a
fingerprint of the unchanged domains, computed from the generator before the change);
the random mix is a function of its seed, within its bounds, every kind present; the
chain limit is the longest host's, the late host's on a web large enough to have one.
"""

from __future__ import annotations

import gzip
import hashlib
import random
from pathlib import Path

import pytest

from benchmarks.realweb import limits, web
from benchmarks.realweb.mix import FIXED, KINDS, NEW_SHARES, OLD_SHARES, Mix, draw, mix_for

# blake2b-8 of the 576 domains of build(600, 1) that keep an issue-29 kind, as the
# generator of issue 29 (before the mix module) made them; issue 49's probe_only kind
# took 9 more of them, its gz_only and link_only kinds 7 more: the other 560, as the
# generator before those two kinds made them (the same fingerprint from both generators).
ISSUE29_FINGERPRINT = "d4b9d748b736ff3a"


def _fingerprint(sites: list[web.Site]) -> str:
    h = hashlib.blake2b(digest_size=8)
    for s in sites:
        h.update(f"{s.index}|{s.kind}|{s.latency}|{s.scheme}|{s.content_host}|".encode())
        for path in sorted(s.pages):
            p = s.pages[path]
            body = gzip.decompress(p.body) if p.body[:2] == b"\x1f\x8b" else p.body
            h.update(f"{path}|{p.status}|{p.content_type}|{p.location}|".encode() + body)
        h.update("\n".join(s.locs).encode())
    return h.hexdigest()


def test_fixed_web_keeps_issue29_domains() -> None:
    sites = web.build(600, 1)
    kept = [s for s in sites if s.kind in OLD_SHARES]
    assert len(kept) == 560
    assert _fingerprint(kept) == ISSUE29_FINGERPRINT
    changed = [s for s in sites if s.kind in NEW_SHARES]
    # the first of each new kind, the late host, and the draws that fell in the carve
    assert 11 <= len(changed) <= 11 + 600 * sum(NEW_SHARES.values()) / 100 * 3


def test_fixed_draws_follow_the_old_boundaries() -> None:
    rng = random.Random(7)
    old_names, old_weights = list(OLD_SHARES), list(OLD_SHARES.values())
    for _ in range(20_000):
        state = rng.getstate()
        old = random.Random()
        old.setstate(state)
        u = rng.random()
        before = old.choices(old_names, old_weights)[0]
        after = FIXED.pick(u)
        assert after == before or (before == "small" and after in NEW_SHARES)


def test_fixed_shares_sum_to_the_old_total() -> None:
    assert sum(FIXED.shares.values()) == pytest.approx(100.0)
    assert FIXED.shares["small"] == pytest.approx(51.5 - sum(NEW_SHARES.values()))
    assert mix_for("fixed", 3) is FIXED


def test_random_mix_is_a_function_of_its_seed() -> None:
    assert draw(5) == draw(5)
    assert draw(5).describe() == draw(5).describe()
    assert draw(5) != draw(6)
    with pytest.raises(ValueError, match="unknown mix"):
        mix_for("other", 1)


@pytest.mark.parametrize("seed", range(1, 30))
def test_random_mix_within_bounds(seed: int) -> None:
    mix = draw(seed)
    assert set(mix.names) == set(KINDS)
    assert sum(mix.shares.values()) == pytest.approx(100.0)
    assert all(share > 0 for share in mix.shares.values())
    assert 0.03 <= mix.latency[0] <= 0.15
    assert 0.5 <= mix.latency[1] <= 1.0
    assert 4 <= mix.ttfb[0] <= 8 < 12 <= mix.ttfb[1] <= 35
    assert 10 <= mix.small_urls[0] <= 40
    assert 300 <= mix.small_urls[1] <= 1500
    assert 120 <= mix.chain_cap <= 300
    assert mix.crawl_delay[0] == 1.0
    assert 10 <= mix.crawl_delay[1] <= 30


def test_every_kind_on_a_small_web() -> None:
    for mix in (FIXED, draw(2)):
        sites = web.build(len(KINDS), 1, mix)
        assert [s.kind for s in sites] == list(KINDS)


def test_random_webs_differ() -> None:
    one, two = web.build(120, 1, draw(1)), web.build(120, 2, draw(2))
    assert [s.kind for s in one] != [s.kind for s in two]
    assert sum(len(s.locs) for s in one) != sum(len(s.locs) for s in two)
    assert web.build(120, 1, draw(1))[100].locs == one[100].locs


def test_new_kinds_content() -> None:
    sites = {s.kind: s for s in web.build(len(KINDS), 4, FIXED)}
    slow = sites["slow"]
    assert FIXED.ttfb[0] <= slow.latency <= FIXED.ttfb[1]
    assert slow.locs
    assert slow.pages["/robots.txt"].status == 200
    assert sites["https_dropped"].scheme == "http"
    assert sites["https_dropped"].locs[0].startswith("http://")
    for kind, status in (("wall_403", 403), ("wall_401", 401), ("wall_451", 451)):
        wall = sites[kind].default
        assert wall is not None
        assert wall.status == status
        assert not sites[kind].pages
        assert not sites[kind].locs
        assert sites[kind].expect == "blocked"
    challenge = sites["wall_challenge"].default
    assert challenge is not None
    assert ("cf-mitigated", "challenge") in challenge.headers
    delay = sites["delay"]
    robots = delay.pages["/robots.txt"].body.decode()
    assert f"Crawl-delay: {delay.crawl_delay:g}" in robots
    assert 1 <= delay.crawl_delay <= 30
    assert limits.requests_needed(delay) * delay.crawl_delay <= FIXED.chain_cap + delay.crawl_delay
    big = sites["bigindex"]
    children = [p for p in big.pages if p.startswith("/sitemaps/")]
    assert len(children) >= FIXED.bigindex_children[0] - 1
    assert gzip.decompress(big.pages[children[0]].body).startswith(b"<?xml")


def test_late_host_has_the_longest_chain() -> None:
    sites = web.build(400, 1)
    late = web.late_index(400)
    assert late == 391
    assert sites[late].kind == "delay"
    assert sites[late].crawl_delay == web.LATE_DELAY
    seconds, site = limits.longest_chain(sites, limits.Politeness(tdmrep=False))
    assert site is sites[late]
    assert seconds == pytest.approx(FIXED.chain_cap + sites[late].latency)
    # tdmrep.json (on by default) is one more request under the host's Crawl-delay
    seconds, site = limits.longest_chain(sites, limits.Politeness())
    assert site is sites[late]
    assert seconds == pytest.approx(FIXED.chain_cap + web.LATE_DELAY + sites[late].latency)
    assert web.late_index(len(KINDS)) is None


def test_chain_bounds() -> None:
    site = web.build(len(KINDS), 1)[KINDS.index("small")]
    polite = limits.Politeness(rate=2.0, concurrency=2)
    n = limits.requests_needed(site)
    assert limits.chain(site, polite) == pytest.approx((n - 1) * 0.5 + site.latency)
    fast = limits.Politeness(rate=1000.0, concurrency=1)
    site.latency = 3.0
    assert limits.chain(site, fast) == pytest.approx(n * 3.0)
    no_delay = limits.Politeness(respect_crawl_delay=False)
    delay = web.build(len(KINDS), 1)[KINDS.index("delay")]
    assert no_delay.interval(delay) == 0.5
    assert limits.Politeness(max_crawl_delay=2.0).interval(delay) == min(2.0, delay.crawl_delay)
    assert limits.end_limit(100.0, 2, 30.0) == (50.0, "cpu")
    assert limits.end_limit(10.0, 2, 30.0) == (30.0, "chain")


def test_mix_labels() -> None:
    assert FIXED.label == "fixed"
    assert draw(3).label == "random:3"
    assert isinstance(draw(3), Mix)


def test_requests_needed_are_what_a_default_harvester_asks() -> None:
    sites = {s.kind: s for s in web.build(len(KINDS), 1)}
    polite, no_tdm = limits.Politeness(), limits.Politeness(tdmrep=False)
    delay = sites["delay"]
    children = sum(p.startswith("/sitemaps/") for p in delay.pages)
    # robots.txt, tdmrep.json, the index, its children; robots.txt names the index
    assert limits.missed_probes(delay, polite) == 0
    assert limits.requests_needed(delay, polite) == 1 + 1 + 1 + children
    assert limits.requests_needed(delay, no_tdm) == 1 + 1 + children
    assert limits.depth(delay, polite) == limits.depth(delay, no_tdm) + 1 == 4
    assert limits.requests_needed(sites["www"], no_tdm) == 2 + 1  # apex robots.txt -> www
    # No Sitemap: line: the home page, then harvester's probe plan, in its order, until
    # the sitemap's location
    only = sites["probe_only"]
    assert "/wp-sitemap.xml" in only.pages
    assert limits.missed_probes(only, polite) == 1 + len(polite.fallback_paths)
    wp_first = limits.Politeness(fallback_paths=("/wp-sitemap.xml",))
    assert limits.missed_probes(only, wp_first) == 1
    assert limits.missed_probes(sites["fallback"], polite) == 1  # /sitemap.xml: probe 1
    assert limits.requests_needed(only, polite) == limits.requests_needed(only, wp_first) + 3
    # /sitemap.xml.gz: the fifth guess; the <link rel="sitemap">: the first
    assert limits.missed_probes(sites["gz_only"], polite) == 1 + 4
    assert limits.missed_probes(sites["link_only"], polite) == 1
    assert limits.missed_probes(only, limits.Politeness(probe_budget=1)) == 1  # no home page


def test_politeness_is_harvesters_config(tmp_path: Path) -> None:
    default = limits.politeness()
    assert default.tdmrep
    assert default.probe_budget == limits.Politeness().probe_budget
    assert default.fallback_paths == limits.Politeness().fallback_paths
    toml = tmp_path / "h.toml"
    toml.write_text(
        '[policy]\ntdmrep = false\n\n[discovery]\nprobe_budget = 2\nfallback_paths = ["/a.xml"]\n'
    )
    cfg = limits.politeness(toml)
    assert (cfg.tdmrep, cfg.probe_budget, cfg.fallback_paths) == (False, 2, ("/a.xml",))


def _route(site: web.Site, path: str) -> web.Page:
    from benchmarks.realweb.serve import Server

    return Server([site], Path("/nonexistent")).route(site, 443, site.name, path)


def test_hidden_kinds_are_served_where_only_discovery_finds_them() -> None:
    from harvester.crawl.htmlpage import parse_html

    sites = {s.kind: s for s in web.build(len(KINDS), 1, FIXED)}
    for kind in ("probe_only", "gz_only", "link_only"):
        site = sites[kind]
        assert site.expect == "ok"
        assert site.kind in web.TLS_KINDS
        robots = _route(site, "/robots.txt")
        assert robots.status == 200
        assert b"Sitemap:" not in robots.body
        for path in ("/sitemap.xml", "/sitemap_index.xml", "/sitemap.txt"):
            assert _route(site, path).status == 404
    gz_site = sites["gz_only"]
    packed = _route(gz_site, "/sitemap.xml.gz")
    assert (packed.status, packed.content_type) == (200, web.GZIP)
    assert packed.body[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed.body).startswith(b"<?xml")
    link_site = sites["link_only"]
    assert _route(link_site, "/sitemap.xml.gz").status == 404
    home = _route(link_site, "/")
    assert (home.status, home.content_type) == (200, web.HTML)
    origin = f"https://{link_site.name}"
    page = parse_html(home.body, f"{origin}/", {"Content-Type": home.content_type})
    assert page.sitemaps == (f"{origin}{web.LINKED}",)
    assert _route(link_site, web.LINKED).content_type == web.XML
    # Nothing the probes guess is there: only the <link rel="sitemap"> names it.
    from harvester.crawl.probes import probes

    assert web.LINKED not in {p.path for p in probes()}


@pytest.mark.parametrize("mix", [FIXED, draw(1), draw(2)], ids=lambda m: m.label)
def test_hidden_kinds_count_in_the_truth(mix: Mix) -> None:
    sites = web.build(400, 1, mix)
    truth = web.truth(sites)
    for kind in ("gz_only", "link_only"):
        found = [s for s in sites if s.kind == kind]
        assert found, kind
        for site in found:
            assert truth[site.name].expect == "ok"
            assert truth[site.name].urls == len(set(site.locs)) > 0
            origin = f"https://{site.name}/"
            assert all(loc.startswith(origin) for loc in site.locs)


def test_later_kinds_leave_every_other_interval() -> None:
    from benchmarks.realweb.mix import LATER

    for mix in (FIXED, draw(3)):
        rng = random.Random(11)
        for _ in range(5_000):
            u = rng.random()
            kind = mix.pick(u)
            if kind in LATER:
                continue
            # the same draw without the later kinds' shares, given back to `small`
            names = [k for k in mix.names if k not in LATER]
            bounds = [b for k, b in zip(mix.names, mix.bounds, strict=True) if k not in LATER]
            before = Mix(mix.name, mix.seed, tuple(names), tuple(bounds)).pick(u)
            assert kind == before
