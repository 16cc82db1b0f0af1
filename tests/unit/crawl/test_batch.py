"""UrlBatch with plain entries: dedupe, cap, replays, flush, selection and labels, audit.

Each test runs with the loop the build has (compiled, where built) and with the
Python loop alone (``batch._url_entries`` None), which must agree.
"""

from __future__ import annotations

import dataclasses
from array import array
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from harvester.config import Config
from harvester.crawl import batch as batchmod
from harvester.crawl.batch import BATCH, UrlBatch
from harvester.crawl.report import HostReport
from harvester.crawl.settings import BatchSettings
from harvester.models import SitemapChild, UrlEntry
from harvester.state.chunks import NO_LASTMOD
from harvester.state.memory import HostMemory
from harvester.urls.normalize import Normalizer

if TYPE_CHECKING:
    from collections.abc import Iterator

HOST = "e.com"
SITEMAP = "https://e.com/sitemap.xml"
T0 = datetime(2024, 5, 1, tzinfo=UTC)
NOW = datetime(2026, 11, 30, tzinfo=UTC)


@pytest.fixture(params=["as built", "python"], autouse=True)
def loop(request: pytest.FixtureRequest) -> Iterator[str]:
    saved = batchmod._url_entries
    if request.param == "python":
        batchmod._url_entries = None
    try:
        yield str(request.param)
    finally:
        batchmod._url_entries = saved


class FakeLedger:
    """Events by URL (``fresh``: a host the state file has never seen)."""

    def __init__(self, events: dict[int, str | None] | None = None) -> None:
        self.by_fp = events  # signed fingerprint -> event; None: fresh
        self.asked: list[list[int]] = []

    def fresh(self, memory: HostMemory) -> bool:
        return self.by_fp is None

    def events(self, memory: HostMemory, fps: array[int], lastmods: array[int]) -> list[str | None]:
        assert self.by_fp is not None
        self.asked.append(list(fps))
        return [self.by_fp.get(fp, "new") for fp in fps]

    def carry(self, memory: HostMemory, fps: array[int], lastmods: array[int]) -> array[int]:
        return lastmods


def config(cap: int = 10**6, since: str = "", audit: bool = False) -> Config:
    cfg = Config()
    return dataclasses.replace(
        cfg,
        limits=dataclasses.replace(cfg.limits, max_urls_per_host=cap),
        audit=dataclasses.replace(cfg.audit, distribution=audit),
        output=dataclasses.replace(cfg.output, since=since),
    )


def make(
    cfg: Config | None = None,
    ledger: FakeLedger | None = None,
    emit_mode: str = "all",
    encoded: bool = False,
    unverified: bool = False,
) -> UrlBatch:
    cfg = cfg or config()
    rules = Normalizer(cfg.normalize).rules_for(HOST)
    b = UrlBatch(
        HOST,
        BatchSettings.of(cfg),
        rules,
        HostReport(HOST),
        ledger=ledger,
        emit_mode=emit_mode,
        encoded=encoded,
    )
    b.remember(HostMemory(), unverified)
    return b


def records(b: UrlBatch) -> list[dict[str, Any]]:
    """What the batch hands over, as records (decoding its lines when encoded)."""
    out = b.flush()
    if out is None:
        return []
    if out.data is not None:
        return [orjson.loads(line) for line in bytes(out.data).splitlines()]
    return out.records


def test_a_url_listed_twice_or_in_another_form_is_one_record() -> None:
    b = make()
    others = b.take(
        [
            UrlEntry("https://e.com/a"),
            UrlEntry("https://E.com/a"),  # the same canonical URL
            UrlEntry("https://e.com/b?utm_source=x"),
            UrlEntry("https://e.com/b"),
        ],
        SITEMAP,
    )
    assert others == []
    assert [r["url"] for r in records(b)] == ["https://e.com/a", "https://e.com/b"]
    assert (b.report.urls, b.report.duplicates, b.listed) == (2, 2, 2)
    b.close()


def test_children_come_back_in_order_and_urls_become_records() -> None:
    b = make()
    child1, child2 = SitemapChild("https://e.com/s1.xml"), SitemapChild("https://e.com/s2.xml")
    others = b.take([child1, UrlEntry("https://e.com/a"), child2], SITEMAP)
    assert others == [child1, child2]
    (rec,) = records(b)
    assert rec == {
        "loc": "https://e.com/a",
        "url": "https://e.com/a",
        "host": HOST,
        "sitemap": SITEMAP,
        "source": "sitemap",
        "lastmod": None,
        "changefreq": None,
        "priority": None,
    }
    b.close()


def test_the_cap_stops_the_host_at_max_urls() -> None:
    b = make(config(cap=2))
    b.take([UrlEntry(f"https://e.com/{i}") for i in range(4)], SITEMAP)
    assert len(records(b)) == 2
    assert b.cap_hit
    assert b.report.limits_hit == ["max_urls_per_host"]
    b.take([UrlEntry("https://e.com/later")], SITEMAP)  # every later URL is skipped
    assert b.flush() is None
    b.close()


def test_a_reread_after_a_broken_body_counts_no_duplicates_for_its_replay() -> None:
    b = make()
    b.new_file()
    b.new_read()
    b.take([UrlEntry("https://e.com/a"), UrlEntry("https://e.com/b")], SITEMAP)
    b.new_read()  # the body broke: read again from the start
    b.take(
        [UrlEntry(u) for u in ("https://e.com/a", "https://e.com/b", "https://e.com/a")], SITEMAP
    )
    assert len(records(b)) == 2
    assert b.report.duplicates == 1  # the third entry, past the replayed two
    b.close()


def test_a_batch_is_full_at_batch_size_and_flushes_once() -> None:
    b = make()
    b.take([UrlEntry(f"https://e.com/{i}") for i in range(BATCH - 1)], SITEMAP)
    full_before = b.full
    b.take([UrlEntry("https://e.com/last")], SITEMAP)
    assert (full_before, b.full) == (False, True)
    out = b.flush()
    assert out is not None
    assert len(out.fingerprints) == BATCH
    assert out.rows is None  # no state file
    assert b.flush() is None
    b.close()


def test_since_keeps_later_and_undated_urls_with_their_label() -> None:
    b = make(config(since="2024-01-01"), encoded=True)
    b.take(
        [
            UrlEntry("https://e.com/old", datetime(2023, 1, 1, tzinfo=UTC)),
            UrlEntry("https://e.com/new", T0),
            UrlEntry("https://e.com/undated"),
        ],
        SITEMAP,
    )
    got = [(r["url"].rsplit("/", 1)[1], r["since"]) for r in records(b)]
    assert got == [("new", "after"), ("undated", "undated")]
    assert b.report.urls == 2
    b.close()


@pytest.mark.parametrize("encoded", [False, True])
def test_emit_delta_keeps_new_and_changed_urls_labelled_with_their_event(encoded: bool) -> None:
    b = make(ledger=FakeLedger({}), emit_mode="delta", encoded=encoded)
    urls = [f"https://e.com/{n}" for n in ("a", "b", "c")]
    b.take([UrlEntry(u, T0) for u in urls], SITEMAP)
    # The ledger's verdicts, by the fingerprints the batch computed.
    ledger = b.selection.ledger if b.selection is not None else None
    assert isinstance(ledger, FakeLedger)
    signed = array("q", b.fps.tobytes())
    ledger.by_fp = {signed[0]: "new", signed[1]: "changed", signed[2]: "unchanged"}
    out = b.flush()
    assert out is not None
    assert out.rows is not None
    assert len(out.rows) == 3  # every URL listed, written or not
    if encoded:
        assert out.data is not None
        got = [orjson.loads(line) for line in bytes(out.data).splitlines()]
    else:
        got = out.records
    assert [(r["url"], r["event"]) for r in got] == [(urls[0], "new"), (urls[1], "changed")]
    report = b.report
    assert (report.new, report.changed, report.unchanged, report.urls) == (1, 1, 1, 2)
    b.close()


def test_a_host_new_to_the_state_file_is_all_new() -> None:
    b = make(ledger=FakeLedger(None), emit_mode="delta", encoded=True)
    b.take([UrlEntry(f"https://e.com/{i}") for i in range(3)], SITEMAP)
    assert {r["event"] for r in records(b)} == {"new"}
    assert b.report.new == 3
    if batchmod._url_entries is not None:
        assert b.label == b',"event":"new"'  # written by the loop itself, line by line
    b.close()


def test_an_unverified_host_has_its_changes_labelled_unverified() -> None:
    b = make(ledger=FakeLedger({}), emit_mode="changed", unverified=True)
    b.take([UrlEntry("https://e.com/a", T0)], SITEMAP)
    ledger = b.selection.ledger if b.selection is not None else None
    assert isinstance(ledger, FakeLedger)
    ledger.by_fp = {array("q", b.fps.tobytes())[0]: "unchanged"}
    assert [r["event"] for r in records(b)] == ["unverified"]
    b.close()


def test_the_audit_counts_the_sample_and_reports_a_verdict() -> None:
    b = make(config(audit=True))
    b.sitemap_dates(None, NOW)
    b.take([UrlEntry(f"https://e.com/{i}", T0, T0.isoformat()) for i in range(20)], SITEMAP)
    assert b.dist is not None
    assert (b.dist.total, b.dist.dated) == (20, 20)
    audit = b.audit()
    assert audit is not None
    assert audit["verdict"] == "constant"  # one lastmod for every URL
    assert audit["urls_listed"] == 20
    assert b.report.lastmod_audit is not None
    b.close()


def test_no_audit_without_urls() -> None:
    b = make(config(audit=True))
    assert b.audit() is None
    b.close()


def test_lastmod_epochs_follow_the_records_when_filtering() -> None:
    b = make(config(since="2020-01-01"))
    b.take([UrlEntry("https://e.com/a", T0), UrlEntry("https://e.com/b")], SITEMAP)
    assert b.lastmods is not None
    assert list(b.lastmods) == [int(T0.timestamp()), NO_LASTMOD]
    b.close()
