"""crawl/listed.py with a state file: the sample from the ledger rows (every URL listed,
its stored lastmod), the pages it reads kept as the audit's sample rows, and the walk's
pages serving the sample."""

from __future__ import annotations

import random
from array import array

from harvester.crawl.batch import RecordBatch
from harvester.crawl.homepage import Fetched
from harvester.crawl.htmlpage import HtmlPage
from harvester.crawl.listed import AuditSamples, ListedSample, Pick, SampledPages
from harvester.state.chunks import NO_LASTMOD
from harvester.state.rows import LedgerRows, signed
from harvester.urls.fingerprint import fingerprint

PAGE = b'<html><head><meta property="article:modified_time" content="2024-07-03"></head>'


def _rows_batch(urls: list[str], lastmods: list[int]) -> RecordBatch:
    """A batch as a state run with ``--emit changed`` hands it over: no record went out,
    the ledger rows hold every URL listed (two sitemaps' runs)."""
    fps = array("q", (signed(fingerprint(u)) for u in urls))
    half = len(urls) // 2
    rows = LedgerRows.pack(
        fps, urls, array("q", lastmods), [("s1.xml", half), ("s2.xml", len(urls) - half)]
    )
    return RecordBatch("example.com", [], array("Q"), rows=rows)


def test_with_ledger_rows_every_listed_url_is_sampled_with_its_stored_lastmod() -> None:
    urls = [f"https://example.com/p/{i}" for i in range(300)]
    random.Random(3).shuffle(urls)
    lastmods = [NO_LASTMOD if i % 3 == 0 else 1_700_000_000 + i for i in range(300)]
    stored = dict(zip(urls, lastmods, strict=True))
    sample = ListedSample(12)
    for start in range(0, 300, 50):
        sample.take(_rows_batch(urls[start : start + 50], lastmods[start : start + 50]))
    picks = sample.picks()
    # The lowest as the state orders them (signed), as the audit picks its pages.
    assert [p.url for p in picks] == sorted(urls, key=lambda u: signed(fingerprint(u)))[:12]
    for pick in picks:
        assert pick.fp == fingerprint(pick.url)
        want = stored[pick.url]
        assert pick.lastmod == (None if want == NO_LASTMOD else want)
    again = ListedSample(12)  # a URL handed over twice is kept once
    again.take(_rows_batch(urls[:50], lastmods[:50]))
    again.take(_rows_batch(urls[:50], lastmods[:50]))
    assert len({p.url for p in again.picks()}) == len(again.picks()) == 12


def _fetched(status: int, *, page: bool = True, truncated: bool = False) -> Fetched:
    url = "https://example.com/a"
    if status >= 400:
        return Fetched(url, status, url)  # as homepage.fetch_page gives an error status
    html = HtmlPage(url, truncated=truncated) if page else None
    return Fetched(url, status, url, (), {"Content-Type": "text/html"}, html, PAGE)


def test_the_pages_read_become_audit_rows_where_the_audit_would_keep_them() -> None:
    pick = Pick("https://example.com/a", fingerprint("https://example.com/a"), 1_719_964_800)
    audit = AuditSamples(cap=1024)
    audit.add(pick, _fetched(200))
    audit.add(pick, _fetched(404))
    for left in (_fetched(500), _fetched(403), _fetched(200, page=False)):
        audit.add(pick, left)  # left to the audit: passing, a wall, not HTML
    audit.add(pick, _fetched(200, truncated=True))  # read less than the audit reads
    (page, dead) = audit.rows
    fp, url, _at, lastmod, _simhash, modified, agreement, status, error = page
    assert (fp, url, lastmod, status, error) == (signed(pick.fp), pick.url, pick.lastmod, 200, None)
    assert (modified, agreement) == (1_719_964_800, "agree")
    assert (dead[0], dead[3], dead[6:]) == (
        signed(pick.fp),
        pick.lastmod,
        (None, 404, "http_status"),
    )
    whole = AuditSamples(cap=len(PAGE))  # the audit reads no more than the check did
    whole.add(pick, _fetched(200, truncated=True))
    assert len(whole.rows) == 1


def test_a_sampled_page_the_walk_fetched_is_read_once_and_kept_without_its_body() -> None:
    pick = Pick("https://example.com/a", fingerprint("https://example.com/a"), None)
    audit = AuditSamples(cap=1024)
    walked = SampledPages([pick], audit)
    assert walked.wants(pick.url)
    assert not walked.wants("https://example.com/other")
    walked.saw(pick.url, _fetched(200))
    assert not walked.wants(pick.url)  # seen: not again
    assert len(audit.rows) == 1
    kept = walked.take(pick.url)
    assert kept is not None
    assert (kept.status, kept.body) == (200, None)
    assert walked.take(pick.url) is None
