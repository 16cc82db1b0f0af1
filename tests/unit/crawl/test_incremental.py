"""HostIncremental: plans (validators, redirects, skips), trust, carry, reads, failures, the end."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from harvester.config import Config
from harvester.crawl.discovery import Discovered
from harvester.crawl.frontier import Frontier, SitemapRef
from harvester.crawl.incremental import HostIncremental
from harvester.crawl.report import HostReport
from harvester.crawl.seed import Seed
from harvester.crawl.settings import MemorySettings
from harvester.errors import HarvesterError, NotASitemap
from harvester.models import Kind, ReadResult, ReadStats
from harvester.state.codec import now
from harvester.state.memory import HostMemory, SitemapMemory

HOST = "e.com"
SEED = Seed(HOST, f"https://{HOST}", None, None, None, True)
ROOT = "https://e.com/sitemap.xml"
CHILD = "https://e.com/s1.xml"
T0 = datetime(2024, 5, 1, tzinfo=UTC)


class FakeLedger:
    def __init__(self, memory: HostMemory) -> None:
        self.memory = memory

    def host(self, name: str) -> HostMemory:
        assert name == HOST
        return self.memory


def make(
    memory: HostMemory | None = None, emit_mode: str = "delta", **audit: Any
) -> HostIncremental:
    cfg = Config()
    cfg = dataclasses.replace(
        cfg,
        audit=dataclasses.replace(cfg.audit, **audit),
        state=dataclasses.replace(cfg.state, skip_unchanged_children=True),
    )
    ledger = FakeLedger(memory or HostMemory())
    settings = MemorySettings.of(cfg)
    inc = HostIncremental(HOST, settings, ledger, HostReport(HOST), emit_mode)  # type: ignore[arg-type]
    inc.load(SEED)
    return inc


def remembered(**fields: Any) -> HostMemory:
    return HostMemory(
        host_id=1, sitemaps={ROOT: SitemapMemory(ROOT, complete=True, **fields)}, trust="trusted"
    )


def result(kind: str | None = "urlset", error: HarvesterError | None = None) -> ReadResult:
    return ReadResult(ROOT, None if kind is None else Kind(kind), ReadStats(), error)


def test_a_sitemap_never_read_is_asked_for_plainly() -> None:
    assert make().plan(SitemapRef(ROOT)) == (ROOT, {})


def test_a_full_read_gives_its_validators() -> None:
    inc = make(remembered(etag='"x"', last_modified="Mon, 01 Jan 2024 00:00:00 GMT"))
    target, headers = inc.plan(SitemapRef(ROOT)) or ("", {})
    assert target == ROOT
    assert headers == {
        "If-None-Match": '"x"',
        "If-Modified-Since": "Mon, 01 Jan 2024 00:00:00 GMT",
    }


def test_emit_all_downloads_everything() -> None:
    inc = make(remembered(etag='"x"'), emit_mode="all")
    assert inc.plan(SitemapRef(ROOT)) == (ROOT, {})


def test_a_remembered_redirect_is_followed_until_it_goes_stale() -> None:
    inc = make(remembered(final_url="https://cdn.e.com/sitemap.xml"))
    assert inc.plan(SitemapRef(ROOT)) == ("https://cdn.e.com/sitemap.xml", {})
    inc.redirect_stale(SitemapRef(ROOT))
    assert inc.plan(SitemapRef(ROOT)) == (ROOT, {})


def test_an_index_child_whose_lastmod_stood_still_is_skipped_and_carried() -> None:
    memory = remembered(index_lastmod=int(T0.timestamp()), children=[(CHILD, None)])
    inc = make(memory)
    ref = SitemapRef(ROOT, 1, "index", T0, parent="https://e.com/index.xml")
    assert inc.plan(ref) is None
    refs = inc.carry(ref, "skipped", None)
    assert [r.url for r in refs] == [CHILD]
    assert refs[0].parent == ROOT
    (state,) = inc.state.sitemaps
    assert (state.status, state.complete, state.carried) == ("skipped", True, True)
    assert inc.knows(ROOT)


@pytest.mark.parametrize("verdict", ["constant", "generation_time"])
def test_a_host_whose_lastmod_lies_is_asked_conditionally_for_the_delta(verdict: str) -> None:
    # Issue 53: an unchanged list downloaded again says no more than a 304.
    memory = remembered(etag='"x"')
    memory.verdict = verdict
    inc = make(memory)
    assert inc.unverified
    assert inc.conditional
    assert inc.plan(SitemapRef(ROOT)) == (ROOT, {"If-None-Match": '"x"'})


@pytest.mark.parametrize("mode", ["unverified", "delta,unverified", "changed"])
def test_a_host_whose_lastmod_lies_is_read_in_full_where_unverified_is_written(
    mode: str,
) -> None:
    memory = remembered(etag='"x"')
    memory.verdict = "constant"
    inc = make(memory, emit_mode=mode)
    assert inc.unverified
    assert not inc.conditional
    assert inc.plan(SitemapRef(ROOT)) == (ROOT, {})


def test_hint_mode_trusts_every_host() -> None:
    memory = remembered()
    memory.verdict = "constant"
    inc = make(memory, untrusted="hint")
    assert not inc.unverified


def test_a_complete_read_is_remembered_with_its_children_and_hash() -> None:
    inc = make()
    digest = inc.new_read()
    digest.update(b"<sitemapindex/>")
    inc.child(CHILD, T0)
    inc.redirected("https://cdn.e.com/sitemap.xml")
    inc.read(SitemapRef(ROOT), result("sitemapindex"), 200, ('"e"', None), digest, False)
    (state,) = inc.state.sitemaps
    assert state.complete
    assert state.children == [(CHILD, int(T0.timestamp()))]
    assert state.content_hash is not None
    assert len(state.content_hash) == 16
    assert state.final_url == "https://cdn.e.com/sitemap.xml"
    assert inc.state.removal_scope == [ROOT]


def test_a_read_cut_by_the_url_cap_is_not_complete() -> None:
    inc = make()
    inc.read(SitemapRef(ROOT), result(), 200, (None, None), inc.new_read(), True)
    (state,) = inc.state.sitemaps
    assert not state.complete
    assert inc.state.removal_scope == []


def test_a_probe_that_missed_is_not_a_sitemap_state() -> None:
    inc = make()
    ref = SitemapRef(ROOT, source="fallback")
    missed = result(None, NotASitemap("html"))
    inc.read(ref, missed, 200, (None, None), inc.new_read(), False)
    assert inc.state.sitemaps == []


def test_a_remembered_discovery_is_recalled_until_a_sitemap_of_it_is_gone() -> None:
    memory = HostMemory(host_id=1, discovery={"source": "robots", "refs": [ROOT]})
    memory.discovered_at = now()
    inc = make(memory)
    assert inc.recall(SEED) == memory.discovery
    assert inc.remembered
    inc.failed(SitemapRef(ROOT), 404)
    inc.finish(Frontier(Config().limits), None)
    assert inc.state.discovery == {"source": "stale"}
    assert inc.state.sitemaps[0].status == "error"


def test_an_old_discovery_memory_is_not_recalled() -> None:
    memory = HostMemory(host_id=1, discovery={"source": "robots", "refs": [ROOT]})
    inc = make(memory)  # discovered_at 0: long ago
    assert inc.recall(SEED) is None


def test_the_end_remembers_discovery_and_removes_delisted_sitemaps() -> None:
    memory = remembered()
    memory.sitemaps["https://e.com/old.xml"] = SitemapMemory("https://e.com/old.xml")
    inc = make(memory)
    found = Discovered([SitemapRef(ROOT, source="robots")], origin=f"https://{HOST}")
    found.source, found.robots_status = "robots", 200
    inc.found(found)
    assert inc.robots_fresh
    inc.missed("https://e.com/sitemap_index.xml")
    frontier = Frontier(Config().limits)
    frontier.push(SitemapRef(ROOT))
    inc.finish(frontier, {"verdict": "plausible"})
    state = inc.state
    assert state.finished
    assert state.audit == {"verdict": "plausible"}
    assert state.discovery is not None
    assert state.discovery["refs"] == [ROOT]
    assert state.discovery["missing"] == ["https://e.com/sitemap_index.xml"]
    assert state.removal_scope == ["https://e.com/old.xml"]  # listed by no one any more
