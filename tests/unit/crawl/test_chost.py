"""The compiled URL loop (harvester/crawl/_chost.pyx) does what ``UrlBatch._python_loop`` does.

Each batch list goes through two fresh URL batches, one with the compiled loop
and one with ``batch._url_entries`` set to None (the Python loop alone, as
without a C compiler), and everything the loop touches must be equal: the
records (with their key order), fingerprints and ledger rows of the batches
emitted, the report's counters and limits, the seen-set, the index children
handed back, and the lastmod audit's figures. The generated entries repeat URLs,
need canonicalizing or not, carry extensions or not, mix in index children,
and run into the URL cap, the seen-set's small-set limit and its spills, and
replayed positions.
"""

from __future__ import annotations

import dataclasses
from array import array
from datetime import datetime, timedelta
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvester.config import Config
from harvester.crawl import batch as batchmod
from harvester.crawl.batch import RecordBatch, UrlBatch
from harvester.crawl.report import HostReport
from harvester.crawl.settings import BatchSettings
from harvester.crawl.urlloop import PyUrlLoop
from harvester.models import Image, News, SitemapChild, UrlEntry, Video
from harvester.state.memory import HostMemory
from harvester.urls.dedupe import SMALL_LIMIT, SeenSet
from harvester.urls.normalize import Normalizer
from harvester.urls.records import encode_records, record
from tests.compiled import compiled_module
from tests.lastmods import NOW, T0, distribution, lastmods

chost = compiled_module("_chost")

HOST = "e.com"
LOCS = [
    "https://e.com/a",
    'https://e.com/"q"\\b',  # JSON escapes: the encoded loop leaves them to orjson
    "https://e.com/a\\b",
    "https://e.com/ü\x01",
    "https://e.com/b/",
    "https://E.com/c",  # not canonical: the host's rules
    "https://e.com/d?utm_source=x&id=1",
    "https://e.com:443/e",
    "https://e.com/f#top",
    "https://cdn.e.com/g",  # another host: a foreign loc, counted
    "https://e.com/h?b=2&a=1",
    "http://e.com?x=1",  # at home: its authority ends at the query
    "https://e.com:99999/ü",  # kept as published (no port), not ASCII: foreign, in Python
    "https://e.com.evil/",  # a home prefix, another host
]


@st.composite
def entries(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = []
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            out.append(SitemapChild(f"https://e.com/s{draw(st.integers(0, 5))}.xml", None))
            continue
        loc = draw(st.sampled_from(LOCS)) + ("" if kind < 3 else str(draw(st.integers(0, 60))))
        when, raw = draw(lastmods())
        images: tuple[Image, ...] = ()
        alternates: tuple[tuple[str, str], ...] = ()
        videos: tuple[Video, ...] = ()
        news = None
        if kind == 9:
            # Every extension, alone and together, with values orjson escapes.
            images = tuple(draw(st.lists(image_of(), max_size=3)))
            alternates = tuple(draw(st.lists(st.tuples(TEXT, TEXT), max_size=3)))
            if draw(st.integers(0, 3)) == 0:
                videos = tuple(draw(st.lists(video_of(), min_size=1, max_size=2)))
            if draw(st.integers(0, 3)) == 0:
                news = News(
                    name=draw(st.one_of(st.none(), TEXT)),
                    language=draw(st.sampled_from([None, "en", ""])),
                    publication_date=draw(st.sampled_from([None, T0])),
                    publication_date_raw=draw(st.sampled_from([None, "x"])),
                    title=draw(st.one_of(st.none(), TEXT)),
                    keywords=tuple(draw(st.lists(TEXT, max_size=2))),
                    genres=draw(st.one_of(st.none(), st.just(""), TEXT)),
                    stock_tickers=tuple(draw(st.lists(TEXT, max_size=2))),
                    access=draw(st.sampled_from([None, "", "Subscription"])),
                )
        out.append(
            UrlEntry(
                loc,
                when,
                raw,
                draw(st.sampled_from([None, "daily", "x\ty"])),
                draw(st.sampled_from([None, 0.5, 1.0, 0.0, -0.0, 1e-05])),  # "-0.0" is valid
                images,
                alternates,
                videos,
                news,
            )
        )
    return out


# Extension values: plain ASCII (written by the compiled loop itself), escapes,
# non-ASCII and a lone surrogate (orjson refuses it: encode_record's json fallback).
TEXT = st.sampled_from(["https://e.com/i.jpg", "de", 'say "x"', "a\\b", "ü", "x\ny", "\ud800"])


@st.composite
def video_of(draw: st.DrawFn) -> Video:
    # Every field: absent, empty (kept, as records._video keeps it) or a value; the dates
    # valid, lenient or not dates at all (left out).
    date = st.sampled_from([None, "", "2024-05-01", "2024-05-01T10:00:00.5+02:00", "bad"])
    return Video(
        thumbnail_loc=draw(st.one_of(st.none(), TEXT)),
        title=draw(st.sampled_from([None, "v", "ü", ""])),
        description=draw(st.one_of(st.none(), TEXT)),
        content_loc=draw(st.one_of(st.none(), TEXT)),
        player_loc=draw(st.sampled_from([None, "https://e.com/p"])),
        duration=draw(st.sampled_from([None, "600"])),
        publication_date=draw(date),
        expiration_date=draw(date),
        family_friendly=draw(st.sampled_from([None, "yes"])),
        live=draw(st.sampled_from([None, "no"])),
        tags=tuple(draw(st.lists(TEXT, max_size=2))),
    )


@st.composite
def image_of(draw: st.DrawFn) -> Image:
    values = [draw(st.one_of(st.none(), TEXT)) for _ in range(4)]
    return Image(draw(TEXT), *values)


class Ledger:
    """A state file's verdicts without SQLite: each URL's event from its fingerprint.

    ``fresh``: the host is new to the state file, so every URL is new (as
    ``LedgerReader.events`` answers for a host it has no id for).
    """

    def __init__(self, fresh: bool = False) -> None:
        self._fresh = fresh

    def fresh(self, memory: Any) -> bool:
        return self._fresh

    def events(self, memory: Any, fps: Any, lastmods: Any) -> list[str | None]:
        if self._fresh:
            return ["new"] * len(fps)
        # None: recorded by this run before it was cut short (a replay).
        return [(None, "new", "changed", "unchanged")[fp % 4] for fp in fps]

    def carry(self, memory: Any, fps: Any, lastmods: Any) -> Any:
        return lastmods  # (what the ledger remembers is LedgerReader's, tested there)


def url_batch(
    cfg: Config,
    encoded: bool = False,
    emit_mode: str | None = None,
    unverified: bool = False,
    fresh: bool = False,
) -> UrlBatch:
    rules = Normalizer(cfg.normalize).rules_for(HOST)
    b = UrlBatch(
        HOST,
        BatchSettings.of(cfg),
        rules,
        HostReport(HOST),
        ledger=None if emit_mode is None else Ledger(fresh),
        emit_mode=emit_mode or "all",
        encoded=encoded,
    )
    b.remember(HostMemory(), unverified)  # unverified: the host's lastmods are not trusted
    b.at_home(("e.com", "e.com:8080"))  # the sitemap's host: others are foreign locs
    return b


def feed(
    b: UrlBatch, batches: list[list[Any]], sitemap: str
) -> tuple[list[RecordBatch], list[Any]]:
    """Each list as the host worker hands it over (flushed when full, and at the end)."""
    emitted: list[RecordBatch] = []
    others: list[Any] = []
    for k, entries in enumerate(batches):
        others += b.take(entries, f"{sitemap}?{k}" if k else sitemap)
        if b.full:
            emitted.append(flushed(b))
    emitted.append(flushed(b))  # as at the host's end: the open batch is labelled too
    return emitted, others


def flushed(b: UrlBatch) -> RecordBatch:
    out = b.flush()
    if out is None:
        return RecordBatch(b.host, [], array("Q"))
    assert out.lines is None or (out.data is not None and out.lines == out.data.count(b"\n"))
    return out


def state(b: UrlBatch, emitted: list[RecordBatch], others: list[Any]) -> dict[str, Any]:
    """What the loop touched; records as the JSON lines the writer gets, and as dicts."""
    report = b.report.as_dict()
    report.pop("seconds", None)
    dist = b.dist
    seen = b.loop.seen
    return {
        "dicts": [[list(r.items()) for r in f.records] for f in emitted],
        "lines": [
            (encode_records(f.records) if f.data is None else bytes(f.data), list(f.fingerprints))
            for f in emitted
        ],
        "filtering": b.selection is not None,
        "rows": [f.rows for f in emitted],
        "report": report,
        "seen": None
        if seen is None
        else (len(seen), sorted(seen.small or []), seen.spilled, seen.memory_bytes),
        "listed": b.listed,
        "position": b.loop.position,
        "replayed": b.loop.replayed,
        "cap_hit": b.cap_hit,
        "others": others,
        "dist": None if dist is None else distribution(dist),
    }


def run_both(
    batches: list[list[Any]],
    cfg: Config,
    replayed: int,
    modified: datetime | None = None,
    sitemap: str = f"https://{HOST}/sitemap.xml",
    emit_mode: str | None = None,
    unverified: bool = False,
    fresh: bool = False,
) -> None:
    """The compiled loop (dicts, and JSON lines as for the writer) against the Python one.

    ``emit_mode``: with a state file (a fake ledger) and that ``--emit``; the lines
    are then labelled by ``select_lines``, the dicts by ``select_records``. Each batch
    list after the first comes from a sitemap of its own (``sitemap?2``, ...), so a
    batch's ledger rows may name several.
    """
    results = []
    saved = batchmod._url_entries
    # What this compares: the compiled loop is the one the batch runs.
    assert saved is chost.url_entries
    for compiled, encoded in ((True, False), (False, False), (True, True)):
        batchmod._url_entries = saved if compiled else None
        try:
            b = url_batch(cfg, encoded, emit_mode, unverified, fresh)
            assert isinstance(b.loop, chost.UrlLoop if compiled else PyUrlLoop)
            b.loop.replayed = replayed
            b.sitemap_dates(modified, NOW)  # the sitemap's Last-Modified header, fetch time
            emitted, others = feed(b, batches, sitemap)
            results.append(state(b, emitted, others))
            b.close()
        finally:
            batchmod._url_entries = saved
    assert results[0] == results[1]
    # Encoded: the same lines (labelled in place when filtered) and ledger rows, and
    # no dicts at all.
    dicts = results[2].pop("dicts")
    results[0].pop("dicts")
    assert dicts == [[]] * len(dicts)
    assert results[2] == results[0]


def config(cap: int, spill: int, dist: bool, since: bool) -> Config:
    cfg = Config()
    return dataclasses.replace(
        cfg,
        limits=dataclasses.replace(cfg.limits, max_urls_per_host=cap),
        dedupe=dataclasses.replace(cfg.dedupe, spill_threshold=spill),
        audit=dataclasses.replace(cfg.audit, distribution=dist),
        output=dataclasses.replace(cfg.output, since="2024-05-01" if since else ""),
    )


def test_the_compiled_module_is_loaded() -> None:
    # Not built (or not importable) would silently compare the Python loop with itself.
    assert batchmod._chost is chost
    assert batchmod._url_entries is chost.url_entries


@settings(max_examples=60, deadline=None)
@given(st.lists(entries(), min_size=1, max_size=2), st.sampled_from([None, "all", "new"]))
def test_extension_entries_agree(batches: list[list[Any]], emit_mode: str | None) -> None:
    # Every entry with extensions (images, alternates, videos, news), written by the
    # compiled loop straight into JSON lines or through records.record, as the Python loop.
    with_ext = [
        [
            e
            for e in b
            if type(e) is UrlEntry and (e.images or e.alternates or e.videos or e.news is not None)
        ]
        for b in batches
    ]
    run_both(with_ext, config(10**7, 10**7, False, False), 0, emit_mode=emit_mode)


def test_extension_lines_are_the_records_encoded() -> None:
    # The line the compiled loop writes for each extension is orjson's of the record dict.
    image = Image("https://e.com/i.jpg", 'say "x"', None, "Berlin", None)
    entry = UrlEntry(
        "https://e.com/p",
        T0,
        None,
        "daily",
        0.5,
        (image, Image("https://e.com/j.jpg", None, None, None, None)),
        (("de", "https://e.com/de/p"), ("x-default", "https://e.com/p")),
        (Video(thumbnail_loc="https://e.com/t.jpg", publication_date="2024-05-01T10:00:00.5Z"),),
        News(name="N", language="en", publication_date=T0, title="ü", keywords=("a",)),
    )
    b = url_batch(config(10**7, 10**7, False, False), encoded=True)
    b.take([entry], f"https://{HOST}/sitemap.xml")
    out = b.flush()
    assert out is not None
    assert out.data is not None
    line = orjson.loads(bytes(out.data))
    assert line == record(entry, f"https://{HOST}/sitemap.xml", HOST)
    assert list(line) == [
        "loc", "url", "host", "sitemap", "source", "lastmod", "changefreq", "priority",
        "images", "alternates", "videos", "news",
    ]  # fmt: skip
    assert line["images"][0] == {
        "loc": "https://e.com/i.jpg",
        "caption": 'say "x"',
        "geo_location": "Berlin",
    }
    assert line["videos"][0]["publication_date"] == "2024-05-01T10:00:00Z"
    b.close()


def test_the_audit_sample_agrees_past_audit_all() -> None:
    # The first AUDIT_ALL URLs all count, then 1 in 8 by fingerprint: the same ones
    # either way.
    batch = [UrlEntry(f"https://e.com/{i}", T0) for i in range(batchmod.AUDIT_ALL + 200)]
    run_both([batch], config(10**7, 10**7, True, False), 0)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(entries(), max_size=4),
    st.sampled_from([3, 25, 10**7]),
    st.sampled_from([4, 30, 10**7]),
    st.booleans(),
    st.booleans(),
    st.integers(0, 20),
    st.sampled_from([None, T0 + timedelta(hours=3), NOW]),
    st.sampled_from([None, "all", "delta", "new", "changed"]),
    st.booleans(),
    st.booleans(),
)
def test_both_loops_agree(
    batches: list[list[Any]],
    cap: int,
    spill: int,
    dist: bool,
    since: bool,
    replayed: int,
    modified: datetime | None,
    emit_mode: str | None,
    unverified: bool,
    fresh: bool,
) -> None:
    cfg = config(cap, spill, dist, since)
    run_both(
        batches, cfg, replayed, modified, emit_mode=emit_mode, unverified=unverified, fresh=fresh
    )


def test_a_big_batch_with_the_audit_sample_and_the_small_set_promotion() -> None:
    # Past the small set's limit (the rest go to the buckets), with repeats on both sides.
    distinct = SMALL_LIMIT + 1000
    batch = [
        UrlEntry(f"https://e.com/p/{i % distinct}", T0 + timedelta(seconds=i))
        for i in range(distinct + 2000)
    ]
    # Past the audit's caps: more distinct lastmods than its modal counter (256) and
    # its distinct sketch (1,024) keep, so their eviction and replacement run too.
    cfg = config(10**7, 10**7, True, True)
    half = len(batch) // 2
    run_both([batch[:half], batch[half:]], cfg, 100, T0 + timedelta(hours=1), emit_mode="delta")


def test_past_the_small_set_the_compiled_loop_adds_in_c(monkeypatch: pytest.MonkeyPatch) -> None:
    # A big host: past the small set, one spill, repeats inside calls and across them.
    # Both loops agree, and the compiled one calls SeenSet.add once (to leave the small
    # set), not once a URL (issue 52 item 3).
    distinct = 2 * SMALL_LIMIT + 500
    listed = []
    for i in range(distinct + 3000):
        entry = UrlEntry(f"https://e.com/p/{(i * 7919) % distinct}", T0)
        listed += [entry, entry] if i % 10 == 0 else [entry]
    batches = [listed[at : at + 700] for at in range(0, len(listed), 700)]
    cfg = config(10**7, SMALL_LIMIT + 4000, False, False)
    run_both(batches, cfg, 0)
    calls: list[int] = []
    add = SeenSet.add

    def counted(self: SeenSet, fp: int) -> bool:
        calls.append(fp)
        return add(self, fp)

    monkeypatch.setattr(SeenSet, "add", counted)
    b = url_batch(cfg, encoded=True)
    emitted, _ = feed(b, batches, f"https://{HOST}/sitemap.xml")
    seen = b.loop.seen
    assert seen is not None
    assert seen.spilled > 0
    assert len(seen) == distinct == sum(len(f.fingerprints) for f in emitted)
    assert b.report.duplicates == len(listed) - distinct
    assert len(calls) == 1
    b.close()


@pytest.mark.parametrize("sitemap", ["https://e.com/ü.xml", "https://e.com/\udcff.xml"])
def test_a_sitemap_url_that_needs_escapes(sitemap: str) -> None:
    # Non-ASCII, and a lone surrogate (orjson refuses it: records.encode_record's json fallback).
    batch = [UrlEntry(f"https://e.com/{i}", T0, None, "daily", 0.5) for i in range(20)]
    run_both([batch], config(10**7, 10**7, True, False), 0, None, sitemap, emit_mode="all")


def test_characters_json_escapes_are_found_at_every_position() -> None:
    # The compiled line writer checks eight bytes at a time, then the rest one by one:
    # each character orjson escapes, at each position of a word and of the tail, must
    # send the record to orjson (the loop's line and the dict's line are compared).
    specials = ['"', "\\", "\x00", "\x1f", "\n", "\t"]
    plain = ["!", "#", "[", "]", "~", "\x7f", " ", "/"]  # neighbours that need no escape
    batch = [
        UrlEntry(f"https://e.com/{'a' * pad}{ch}{'b' * tail}", T0, None, "daily", 0.5)
        for pad in range(9)
        for tail in (0, 1, 7, 8)
        for ch in specials + plain
    ]
    run_both([batch], config(10**7, 10**7, False, False), 0)


def test_zero_and_negative_zero_priorities_keep_their_own_json() -> None:
    # Equal as dict keys (the encoded loop's memo), different in JSON: 0.0 and -0.0.
    batch = [UrlEntry(f"https://e.com/{i}", None, None, None, (0.0, -0.0)[i % 2]) for i in range(4)]
    run_both([batch], config(10**7, 10**7, False, False), 0)


@pytest.mark.parametrize(
    ("emit_mode", "unverified"), [("delta", False), ("all", True), ("changed", False)]
)
def test_a_host_new_to_the_state_file_labels_every_line_at_once(
    emit_mode: str, unverified: bool
) -> None:
    # Every event the same: the lines are labelled with one replace (or all dropped,
    # for --emit changed), the dicts in one loop; both as the per-record path would.
    batch = [UrlEntry(f"https://e.com/{i}", T0, None, "daily", 0.5) for i in range(600)]
    batch[7] = UrlEntry('https://e.com/"q"}\n', T0)  # a brace and an escaped newline
    cfg = config(10**7, 10**7, False, False)
    run_both(
        [batch[:300], batch[300:]], cfg, 0, emit_mode=emit_mode, unverified=unverified, fresh=True
    )
    # And what a user reads: every URL new, written for delta/all, none for changed.
    b = url_batch(cfg, True, emit_mode, unverified, fresh=True)
    emitted, _ = feed(b, [list(batch)], f"https://{HOST}/sitemap.xml")
    records = [orjson.loads(line) for line in b"".join(f.data or b"" for f in emitted).splitlines()]
    if emit_mode == "changed":
        assert records == []
        assert b.report.urls == 0
    else:
        assert [r["loc"] for r in records] == [e.loc for e in batch]
        assert {r["event"] for r in records} == {"new"}
        assert list(records[7])[-2:] == ["priority", "event"]
        assert b.report.urls == 600
    assert b.report.new == 600
    # The compiled loop wrote the label into each line itself (for changed too: the
    # lines are then dropped), so no pass inserted it afterwards.
    assert b.label == (None if emit_mode == "changed" else b',"event":"new"')
    b.close()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.text(max_size=5), st.text(max_size=12) | st.integers(-(2**63), 2**63 - 1), max_size=4
        ),
        max_size=40,
    ),
    st.binary(max_size=6),
    st.sampled_from([b"", b"\n", b"}", b"}\n}", b"{}"]),
)
def test_labelled_lines_are_the_replace_they_stand_for(
    records: list[dict[str, Any]], tail: bytes, extra: bytes
) -> None:
    # _select_lines labels every line of a batch at once: the compiled pass must give
    # the bytes bytearray.replace gives, on real JSON lines and on odd trailing bytes.
    data = bytearray(b"".join(orjson.dumps(r) + b"\n" for r in records) + extra + tail)
    for label in (b',"event":"new"', b""):
        expected = bytes(data.replace(b"}\n", label + b"}\n"))
        assert chost.label_lines(data, label) == expected


def test_a_host_new_to_the_state_file_is_labelled_in_one_pass() -> None:
    # Every URL of a host the state file has never seen is new: the batch gets one
    # label, with no per-record list, whether its URLs come as the compiled loop's
    # text or as a list; the ledger chunk holds them either way.
    from harvester.state.chunks import NO_LASTMOD, unpack_urls

    b = url_batch(Config(), encoded=True, emit_mode="all", fresh=True)
    assert b.selection is not None
    urls = ["https://e.com/a", "https://e.com/é"]
    text = bytearray("".join(u + "\n" for u in urls).encode())
    for listed in (urls, (text, [len(text)])):
        kept, rows, every = b.selection.labels(
            b.report,
            array("Q", [1, 2]),
            array("q", [0, NO_LASTMOD]),
            listed,
            [(f"https://{HOST}/s.xml", 2)],
        )
        assert (kept, every) == ([], "new")
        assert rows is not None
        assert unpack_urls(rows.chunks[0][2]) == urls


def test_foreign_locs_are_counted_alike_and_emitted() -> None:
    # Locs on another host than the sitemap's: emitted, counted, the first few kept
    # (issue 30 item 11); the compiled loop tests the authority in C.
    locs = [
        "https://e.com/1",
        "https://cdn.e.com/1",
        "http://e.com:8080/x",
        "https://e.com.evil/1",
        "http://e.com?q=1",
        "https://e.com:99999/ü",  # not ASCII: the compiled loop's Python fallback
        *(f"https://other.example/{i}" for i in range(9)),
    ]
    batch: list[Any] = [UrlEntry(loc, None) for loc in locs]
    run_both([batch, batch[:3]], config(10**7, 10**7, False, False), 0)
    for compiled in (True, False):
        saved = batchmod._url_entries
        batchmod._url_entries = saved if compiled else None
        try:
            b = url_batch(config(10**7, 10**7, False, False))
            b.take(batch, "https://e.com/s.xml")
        finally:
            batchmod._url_entries = saved
        assert b.report.urls == len(locs)  # all emitted
        assert b.report.foreign_locs == 12
        assert b.report.foreign_loc_examples == [
            "https://cdn.e.com/1",
            "https://e.com.evil/1",
            "https://e.com:99999/ü",
            "https://other.example/0",
            "https://other.example/1",
        ]
        b.close()
