"""HostIncremental and adaptive revisit (issue 53 items 4 and 5), with an injected clock."""

from __future__ import annotations

import dataclasses
import gzip
from array import array
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from harvester.config import Config
from harvester.crawl.frontier import Frontier, SitemapRef
from harvester.crawl.incremental import HostIncremental
from harvester.crawl.report import HostReport
from harvester.crawl.seed import Seed
from harvester.crawl.settings import MemorySettings
from harvester.models import Kind, ReadResult, ReadStats
from harvester.state.memory import HostMemory, SitemapMemory
from harvester.state.revisit import Revisit
from harvester.urls.dedupe import SeenSet

HOST = "e.com"
SEED = Seed(HOST, f"https://{HOST}", None, None, None, True)
INDEX = "https://e.com/index.xml"
CHILD = "https://e.com/s1.xml"
DAY = 86400.0
T = 1_000_000_000.0  # the injected clock's "now"
LASTMOD = datetime(2024, 5, 1, tzinfo=UTC)
STAMP = int(LASTMOD.timestamp())


class FakeLedger:
    def __init__(self, memory: HostMemory) -> None:
        self.memory = memory
        self.by_sitemap: dict[str, list[int]] = {}  # sitemap -> fps its last read listed

    def host(self, name: str) -> HostMemory:
        return self.memory

    def sitemap_fps(self, host_id: int, url: str) -> array[int]:
        return array("Q", self.by_sitemap.get(url, []))


def listed(inc: HostIncremental) -> dict[str, list[int]]:
    """What the fake ledger says each sitemap listed at its last read."""
    ledger = inc._ledger
    assert isinstance(ledger, FakeLedger)
    return ledger.by_sitemap


def seen(*fps: int) -> SeenSet:
    out = SeenSet()
    for fp in fps:
        out.add(fp)
    return out


def make(
    memory: HostMemory, clock: float = T, emit_mode: str = "delta", **state: Any
) -> HostIncremental:
    cfg = Config()
    cfg = dataclasses.replace(cfg, state=dataclasses.replace(cfg.state, **state))
    inc = HostIncremental(
        HOST,
        MemorySettings.of(cfg),
        FakeLedger(memory),  # type: ignore[arg-type]
        HostReport(HOST),
        emit_mode,
        clock=lambda: clock,
    )
    inc.load(SEED)
    return inc


def host(*sitemaps: SitemapMemory, trust: str | None = None) -> HostMemory:
    return HostMemory(host_id=1, sitemaps={s.url: s for s in sitemaps}, trust=trust)


def quiet(url: str, interval: float = 2 * DAY, **fields: Any) -> SitemapMemory:
    """A sitemap read in full, last checked a day before ``T`` (not due with 2 days)."""
    revisit = Revisit(T - DAY, interval, 1, "cn", fields.pop("news", False))
    return SitemapMemory(url, complete=True, etag='"v"', revisit=revisit, **fields)


def test_a_sitemap_not_due_is_not_asked_and_its_urls_are_kept() -> None:
    inc = make(host(quiet(INDEX, kind="sitemapindex", children=[(CHILD, None)])))
    admitted: list[SitemapRef] = []
    assert inc.start(SitemapRef(INDEX), admitted.append) == (None, {})
    assert [c.url for c in admitted] == [CHILD]  # its children are judged on their own
    assert inc._report.sitemaps_not_due == 1
    assert inc._report.sitemaps_unchanged == 0
    (state,) = inc.state.sitemaps
    assert (state.status, state.carried, state.complete, state.revisit) == (
        "not_due",
        True,
        True,
        None,  # no check: its history stays as it was
    )
    frontier = Frontier(Config().limits)
    frontier.push(SitemapRef(INDEX))
    inc.finish(frontier, None)
    assert inc.state.removal_scope == []  # never removed


def test_due_once_its_interval_has_passed() -> None:
    inc = make(host(quiet(INDEX)), clock=T + DAY)  # two days after its last check
    assert inc.plan(SitemapRef(INDEX)) == (INDEX, {"If-None-Match": '"v"'})


def test_revisit_all_asks_every_sitemap() -> None:
    inc = make(host(quiet(INDEX)), revisit="all")
    assert inc.plan(SitemapRef(INDEX)) == (INDEX, {"If-None-Match": '"v"'})


def test_a_news_sitemap_is_always_asked() -> None:
    inc = make(host(quiet(INDEX, news=True)))
    assert inc.plan(SitemapRef(INDEX)) is not None


def test_a_child_whose_index_lastmod_moved_is_asked_although_not_due() -> None:
    memory = host(quiet(CHILD, parent=INDEX, index_lastmod=STAMP))
    moved = SitemapRef(CHILD, 1, "index", datetime(2024, 6, 1, tzinfo=UTC), parent=INDEX)
    assert make(memory).plan(moved) is not None
    still = SitemapRef(CHILD, 1, "index", LASTMOD, parent=INDEX)
    assert make(memory).plan(still) is None


def test_a_304_grows_the_interval_and_a_change_resets_it() -> None:
    memory = host(quiet(INDEX, interval=DAY))
    inc = make(memory, clock=T + DAY)  # due: checked two days ago, interval one day
    inc.carry(SitemapRef(INDEX), "not_modified", 304)
    checked = inc.state.sitemaps[0].revisit
    assert checked is not None
    assert (checked.checked_at, checked.interval, checked.quiet) == (T + DAY, 4 * DAY, 2)
    assert checked.history == "cnn"

    inc = make(memory, clock=T + DAY)
    digest = inc.new_read()
    digest.update(b"<urlset>another list</urlset>")
    result = ReadResult(INDEX, Kind("urlset"), ReadStats())
    inc.read(SitemapRef(INDEX), result, 200, ('"w"', None), digest, cap_hit=False)
    changed = inc.state.sitemaps[0].revisit
    assert changed is not None
    assert (changed.interval, changed.quiet, changed.history) == (0.0, 0, "cnc")


def test_the_cap_holds_when_a_sitemap_was_unasked_for_long() -> None:
    inc = make(host(quiet(INDEX, interval=DAY)), clock=T + 60 * DAY, max_revisit_interval=DAY)
    inc.carry(SitemapRef(INDEX), "not_modified", 304)
    checked = inc.state.sitemaps[0].revisit
    assert checked is not None
    assert checked.interval == DAY


NEWS_HEAD = (
    b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
    b'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">'
)
# A gzipped news sitemap (.xml.gz): its first bytes, in chunks as the fetch gives them.
NEWS_GZ = gzip.compress(NEWS_HEAD + b"<url><loc>https://e.com/a</loc></url>" * 2000)


@pytest.mark.parametrize(
    ("chunks", "news"),
    [
        ([NEWS_HEAD], True),
        ([NEWS_GZ[:100], NEWS_GZ[100:]], True),  # (its first 4 KiB, decompressed)
        ([gzip.compress(b"<urlset>" + b"<url><loc>x</loc></url>" * 500)], False),
        ([b"\x1f\x8bnot gzip at all"], False),
    ],
)
def test_a_news_body_is_remembered_as_news(chunks: list[bytes], news: bool) -> None:
    inc = make(host())
    digest = inc.new_read()
    for chunk in chunks:
        digest.update(chunk)
    inc.read(
        SitemapRef(INDEX),
        ReadResult(INDEX, Kind("urlset"), ReadStats()),
        200,
        (None, None),
        digest,
        cap_hit=False,
    )
    checked = inc.state.sitemaps[0].revisit
    assert checked is not None
    assert checked.news is news


# -- item 5: an index's lastmod skips a child only where the audit trusts it --------------


def child_ref() -> SitemapRef:
    return SitemapRef(CHILD, 1, "index", LASTMOD, parent=INDEX)


def index_and_child(trust: str | None, lied: bool = False) -> HostMemory:
    index = SitemapMemory(INDEX, complete=True, kind="sitemapindex", index_lied=lied)
    revisit = Revisit(T - DAY, 0.0, 0, "c")  # due on every run: only the lastmod may skip
    child = SitemapMemory(
        CHILD, INDEX, complete=True, etag='"v"', index_lastmod=STAMP, revisit=revisit
    )
    return host(index, child, trust=trust)


def test_an_unmoved_index_lastmod_skips_the_child_on_an_audited_host() -> None:
    inc = make(index_and_child("trusted"), skip_unchanged_children=True)
    assert inc.plan(child_ref()) is None
    assert inc._skip == "skipped"


def test_without_the_audits_trust_the_child_is_asked_conditionally() -> None:
    for trust in (None, "unknown", "untrusted"):
        inc = make(index_and_child(trust), skip_unchanged_children=True)
        assert inc.plan(child_ref()) == (CHILD, {"If-None-Match": '"v"'}), trust


def test_an_index_that_lied_never_skips_a_child_again() -> None:
    inc = make(index_and_child("trusted", lied=True), skip_unchanged_children=True)
    assert inc.plan(child_ref()) is not None


def test_a_child_changed_under_an_unmoved_index_lastmod_marks_the_index_a_liar() -> None:
    inc = make(index_and_child("unknown"), skip_unchanged_children=True)
    digest = inc.new_read()
    digest.update(b"<urlset>new bytes</urlset>")
    result = ReadResult(CHILD, Kind("urlset"), ReadStats())
    inc.read(child_ref(), result, 200, ('"w"', None), digest, cap_hit=False)
    assert inc.state.lied == [INDEX]


def test_a_skip_by_index_lastmod_gives_way_once_the_cap_passed() -> None:
    inc = make(index_and_child("trusted"), clock=T + 30 * DAY, skip_unchanged_children=True)
    assert inc.plan(child_ref()) is not None  # asked: a lie would be found


# -- a not-due urlset waits for the host's end: asked after all if a sibling lost URLs ----


def two_urlsets() -> HostMemory:
    a = SitemapMemory(
        INDEX, complete=True, etag='"a"', urls=10, revisit=Revisit(T - DAY, 0.0, 0, "c")
    )
    return host(a, quiet(CHILD))


def read_a(inc: HostIncremental, entries: int) -> None:
    digest = inc.new_read()
    digest.update(b"<urlset>a new list</urlset>")
    stats = ReadStats()
    stats.entries = entries
    result = ReadResult(INDEX, Kind("urlset"), stats)
    inc.read(SitemapRef(INDEX), result, 200, ('"a2"', None), digest, cap_hit=False)


def test_a_not_due_urlset_is_carried_at_the_end_when_nothing_was_lost() -> None:
    inc = make(two_urlsets())
    assert inc.start(SitemapRef(CHILD), lambda _: None) == (None, {})
    assert inc._report.sitemaps_not_due == 0  # not decided yet
    read_a(inc, 12)  # gained URLs: they came from nowhere we did not ask
    listed(inc)[INDEX] = [1, 2]
    assert inc.revisits.held_back(inc.memory, seen(1, 2, 3)) is None
    inc.finish(Frontier(Config().limits), None)
    assert inc._report.sitemaps_not_due == 1
    assert [s.status for s in inc.state.sitemaps] == ["ok", "not_due"]


def test_a_not_due_urlset_is_asked_when_a_sibling_lost_urls() -> None:
    inc = make(two_urlsets())
    assert inc.start(SitemapRef(CHILD), lambda _: None) == (None, {})
    read_a(inc, 7)  # lost URLs: they may have moved into CHILD
    again = inc.revisits.held_back(inc.memory, seen())
    assert again is not None
    assert again.url == CHILD
    assert inc.revisits.held_back(inc.memory, seen()) is None
    assert inc.plan(again) == (CHILD, {"If-None-Match": '"v"'})
    inc.finish(Frontier(Config().limits), None)
    assert inc._report.sitemaps_not_due == 0


def test_a_bloom_seen_set_cannot_hide_a_lost_url() -> None:
    """Issue 52 item 4: in bloom mode a false positive says a lost URL was seen; the
    rule cannot decide, so the held-back sitemap is asked after all, with a warning."""
    pytest.importorskip("rbloom")
    from harvester.config import DedupeConfig
    from harvester.crawl.revisits import INEXACT

    inc = make(two_urlsets())
    assert inc.start(SitemapRef(CHILD), lambda _: None) == (None, {})
    read_a(inc, 10)
    listed(inc)[INDEX] = [1, 2, 2**63 + 5]
    bloom = SeenSet(DedupeConfig(mode="bloom", bloom_capacity=1, bloom_error_rate=0.5))
    for fp in range(5_000):  # saturated: every fingerprint reads as seen
        bloom.add(fp + 2**40)
    assert all(fp in bloom for fp in (1, 2, 2**63 + 5))  # 2 was lost, but reads as seen
    assert not bloom.exact
    assert seen().exact
    again = inc.revisits.held_back(inc.memory, bloom)
    assert again is not None
    assert again.url == CHILD
    assert inc._report.warnings == [INEXACT]
    # The rule in bloom mode is the one docs/cron.md describes.
    docs = Path(__file__).resolve().parents[3] / "docs" / "cron.md"
    assert INEXACT.split(" (", 1)[0] in " ".join(docs.read_text(encoding="utf-8").split())


def test_a_bloom_seen_set_still_finds_a_certain_loss_without_a_warning() -> None:
    pytest.importorskip("rbloom")
    from harvester.config import DedupeConfig

    inc = make(two_urlsets())
    assert inc.start(SitemapRef(CHILD), lambda _: None) == (None, {})
    read_a(inc, 10)
    listed(inc)[INDEX] = [1, 2]
    bloom = SeenSet(DedupeConfig(mode="bloom", bloom_capacity=10_000, bloom_error_rate=1e-6))
    bloom.add(1)
    assert inc.revisits.held_back(inc.memory, bloom) is not None  # 2: certainly not seen
    assert inc._report.warnings == []


def test_a_not_due_urlset_is_asked_when_a_sibling_lost_as_many_urls_as_it_gained() -> None:
    """Issue 53: the set of URLs decides, not their count (10 before, 10 now)."""
    inc = make(two_urlsets())
    assert inc.start(SitemapRef(CHILD), lambda _: None) == (None, {})
    read_a(inc, 10)
    listed(inc)[INDEX] = [1, 2, 2**63 + 5]
    assert inc.revisits.held_back(inc.memory, seen(1, 2**63 + 5, 7)) is not None  # 2 is gone
