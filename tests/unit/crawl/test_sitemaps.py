"""SitemapLog: what each attempt at a sitemap came to, kept per sitemap as a tree's nodes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from harvester.crawl import sitemaps
from harvester.crawl.attempt import BodyBroken, Failed, Missed, NotModified, Read, Refused
from harvester.crawl.frontier import SitemapRef
from harvester.crawl.sitemaps import SitemapLog
from harvester.errors import ConnectError, HTTPStatusError, NotASitemap, ParseError
from harvester.models import Kind, ReadResult, ReadStats, SitemapChild, UrlEntry

if TYPE_CHECKING:
    import pytest

INDEX = SitemapRef("https://e.com/index.xml", source="robots")
CHILD = SitemapRef("https://e.com/a.xml.gz", 1, "index", parent=INDEX.url)
JAN = datetime(2024, 1, 2, tzinfo=UTC)
MAY = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)


def read(kind: Kind, gzip: int = 0, error: ParseError | NotASitemap | None = None) -> Read:
    stats = ReadStats(gzip_layers=gzip)
    return Read(ReadResult("u", kind, stats, error), 200, (None, None))


def test_a_read_sitemap_has_its_kind_counts_bytes_gzip_and_newest_lastmod() -> None:
    log = SitemapLog()
    log.robots("https://e.com/robots.txt", 200)
    log.attempt(INDEX)
    log.chunk(100)
    log.entries([SitemapChild(CHILD.url, JAN), SitemapChild("https://e.com/b.xml")])
    log.outcome(read(Kind.SITEMAPINDEX))
    log.attempt(CHILD)
    log.chunk(10)
    log.chunk(5)
    log.entries([UrlEntry("https://e.com/1", JAN), UrlEntry("https://e.com/2", MAY)])
    log.entries([UrlEntry("https://e.com/3")])
    log.outcome(read(Kind.URLSET, gzip=1))
    out = log.as_dict()
    assert out["robots"] == {"url": "https://e.com/robots.txt", "status": 200}
    index, child = out["sitemaps"]
    assert (index["kind"], index["sitemaps"], index["urls"], index["bytes"]) == (
        "sitemapindex",
        2,
        0,
        100,
    )
    assert (index["parent"], index["source"], index["outcome"]) == (None, "robots", "ok")
    assert child == {
        "url": CHILD.url,
        "parent": INDEX.url,
        "source": "index",
        "depth": 1,
        "kind": "urlset",
        "urls": 3,
        "sitemaps": 0,
        "bytes": 15,
        "gzip": 1,
        "newest": "2024-05-06T07:08:09Z",
        "status": 200,
        "outcome": "ok",
        "error": None,
        "message": None,
    }


def test_a_refetch_starts_the_counts_again_and_a_success_clears_the_error() -> None:
    log = SitemapLog()
    log.attempt(CHILD)
    log.chunk(7)
    log.entries([UrlEntry("https://e.com/1", MAY)])
    log.outcome(BodyBroken(ConnectError("reset", url=CHILD.url), 200, 1, 7, False))
    [node] = log.as_dict()["sitemaps"]
    assert (node["outcome"], node["error"], node["urls"]) == ("partial", "connect", 1)
    log.attempt(CHILD)
    log.chunk(9)
    log.entries([UrlEntry("https://e.com/1", JAN), UrlEntry("https://e.com/2")])
    log.outcome(read(Kind.URLSET))
    [node] = log.as_dict()["sitemaps"]
    assert (node["outcome"], node["error"], node["message"]) == ("ok", None, None)
    assert (node["urls"], node["bytes"], node["newest"]) == (2, 9, "2024-01-02T00:00:00Z")


def test_failures_misses_and_skips_are_classified() -> None:
    log = SitemapLog()
    gone = SitemapRef("https://e.com/gone.xml", 1, parent=INDEX.url)
    log.attempt(gone)
    log.outcome(Failed(HTTPStatusError("HTTP 404", url=gone.url, status=404), 404, 1, None))
    probe = SitemapRef("https://e.com/sitemap.xml", source="fallback")
    log.attempt(probe)
    log.outcome(read(Kind.URLSET, error=NotASitemap("an HTML page", url=probe.url)))
    probe2 = SitemapRef("https://e.com/sitemap.txt", source="fallback")
    log.attempt(probe2)
    log.outcome(Missed())
    bad = SitemapRef("https://e.com/bad.xml", 1, parent=INDEX.url)
    log.attempt(bad)
    log.outcome(read(Kind.URLSET, error=ParseError("not well-formed", url=bad.url)))
    same = SitemapRef("https://e.com/same.xml", 1, parent=INDEX.url)
    log.attempt(same)
    log.outcome(NotModified(304))
    away = SitemapRef("https://e.com/away.xml", 1, parent=INDEX.url)
    log.attempt(away)
    log.outcome(Refused())
    log.skipped(SitemapRef("https://other.org/x.xml", 1, parent=INDEX.url), "cross_host")
    nodes = {n["url"]: n for n in log.as_dict()["sitemaps"]}
    assert (nodes[gone.url]["outcome"], nodes[gone.url]["error"], nodes[gone.url]["status"]) == (
        "failed",
        "http_status",
        404,
    )
    assert nodes[probe.url]["outcome"] == "missed"
    assert nodes[probe.url]["error"] is None
    assert nodes[probe2.url]["outcome"] == "missed"
    assert (nodes[bad.url]["outcome"], nodes[bad.url]["error"]) == ("error", "bad_xml")
    assert nodes[bad.url]["message"] == "not well-formed"
    assert (nodes[same.url]["outcome"], nodes[same.url]["status"]) == ("not_modified", 304)
    assert nodes[away.url]["outcome"] == "refused"
    skipped = nodes["https://other.org/x.xml"]
    assert (skipped["outcome"], skipped["error"], skipped["parent"]) == (
        "skipped",
        "cross_host",
        INDEX.url,
    )


def test_at_most_max_nodes_are_kept_the_rest_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sitemaps, "MAX_NODES", 3)
    log = SitemapLog()
    for i in range(5):
        log.attempt(SitemapRef(f"https://e.com/{i}.xml"))
        log.chunk(1)  # the ones not kept are not counted anywhere, and nothing breaks
        log.entries([UrlEntry("https://e.com/p")])
        log.outcome(read(Kind.URLSET))
    out = log.as_dict()
    assert [n["url"] for n in out["sitemaps"]] == [f"https://e.com/{i}.xml" for i in range(3)]
    assert out["omitted"] == 2


def test_a_disabled_log_does_nothing() -> None:
    log = SitemapLog(enabled=False)
    log.attempt(INDEX)
    log.chunk(10)
    log.entries([UrlEntry("https://e.com/1", JAN)])
    log.outcome(read(Kind.URLSET))
    log.skipped(CHILD, "cross_host")
    assert log.as_dict()["sitemaps"] == []
    assert log.omitted == 0
