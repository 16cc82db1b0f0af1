from __future__ import annotations

from datetime import UTC, datetime

from harvester.config import LimitsConfig
from harvester.crawl.frontier import Admission, Frontier, SitemapRef


def ref(url: str, day: int | None = None, depth: int = 0) -> SitemapRef:
    lastmod = datetime(2024, 1, day, tzinfo=UTC) if day else None
    return SitemapRef(url, depth=depth, lastmod=lastmod)


def test_newest_first_then_undated_in_discovery_order() -> None:
    f = Frontier(LimitsConfig())
    for r in [
        ref("http://e/u1"),
        ref("http://e/old", 1),
        ref("http://e/new", 9),
        ref("http://e/u2"),
    ]:
        assert f.push(r) is Admission.QUEUED
    order = []
    while (nxt := f.pop()) is not None:
        order.append(nxt.url)
    assert order == ["http://e/new", "http://e/old", "http://e/u1", "http://e/u2"]


def test_seen_set_uses_canonical_form() -> None:
    f = Frontier(LimitsConfig())
    assert f.push(ref("http://E/a.xml")) is Admission.QUEUED
    assert f.push(ref("http://e:80/a.xml#x")) is Admission.SEEN
    f.mark_seen("http://e/b.xml")
    assert f.push(ref("http://e/b.xml")) is Admission.SEEN


def test_caps() -> None:
    f = Frontier(LimitsConfig(max_depth=2, max_sitemaps_per_host=2))
    assert f.push(ref("http://e/deep", depth=3)) is Admission.TOO_DEEP
    assert f.push(ref("http://e/1")) is Admission.QUEUED
    assert f.push(ref("http://e/2", depth=2)) is Admission.QUEUED
    assert f.push(ref("http://e/3")) is Admission.TOO_MANY
    assert len(f) == 2
