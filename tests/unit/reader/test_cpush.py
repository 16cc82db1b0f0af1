"""The urlset reader that drives libxml2 itself (harvester/reader/_cpush.pyx) reads what lxml reads.

Every document is read twice: through ``_cpush`` (the default where it is built) and
through lxml's ``XMLPullParser`` with the same compiled walker (``parse._urlset_push``
set to None). Entries, stats, status and the error (class and message) must be equal:
on every conformance case, on the walker's corner cases, on generated documents (half
of them damaged byte by byte) fed in random pieces, and at the entry cap. The one
known difference, an undeclared entity, is tested on its own. tests/unit/reader/test_cparse.py
compares the default with the pure-Python path as well.
"""

from __future__ import annotations

import gc
import weakref
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvester.config import ReaderConfig
from harvester.errors import LimitExceeded, ParseError, TruncatedDocument
from harvester.models import Entry, Kind, ReadStats, UrlEntry
from harvester.reader import parse
from harvester.reader.sitemap import SitemapReader, read_bytes
from tests.compiled import compiled_module
from tests.paths import DATA
from tests.strategies import mutated
from tests.unit.reader.documents import CORNERS, SM, generated, urlset

if TYPE_CHECKING:
    from pathlib import Path

cpush = compiled_module("_cpush")

CASES = DATA / "conformance" / "cases"


Outcome = tuple[list[Entry], Kind | None, str, tuple[type, str] | None, dict[str, object]]


def outcome(pieces: list[bytes], cfg: ReaderConfig | None = None) -> Outcome:
    entries, result = read_bytes(pieces, cfg=cfg)
    error = None if result.error is None else (type(result.error), str(result.error))
    return entries, result.kind, result.status, error, result.stats.as_dict()


def without_fast_path(pieces: list[bytes], cfg: ReaderConfig | None = None) -> Outcome:
    """``outcome`` with every <url> read from libxml2's tree (no fast path)."""
    saved = cpush.fast_path(False)
    try:
        return outcome(pieces, cfg)
    finally:
        cpush.fast_path(saved)


def fast_urls(data: bytes, cfg: ReaderConfig | None = None) -> int:
    """How many <url>s of ``data`` the fast path read."""
    parser = parse.XmlSitemapParser(
        Kind.URLSET, parse.EntrySink(ReadStats(), cfg or ReaderConfig())
    )
    assert isinstance(parser._push, cpush.UrlsetPush)
    out: list[Entry] = []
    try:
        parser.feed(data, out)
        parser.close(out)
    except ParseError:
        pass
    return int(parser._push.fast_urls)


def damaged_pieces(data: bytes, draw: st.DataObject) -> list[bytes]:
    """``data``, half the time damaged byte by byte, cut in up to five pieces anywhere."""
    if draw.draw(st.booleans()):
        data = draw.draw(mutated(data))
    cuts = sorted(draw.draw(st.lists(st.integers(0, len(data)), max_size=4)))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def through_lxml(pieces: list[bytes], cfg: ReaderConfig | None = None) -> Outcome:
    saved = parse._urlset_push
    assert saved is cpush.UrlsetPush  # what it is compared with is read through this module
    parse._urlset_push = None  # hypothesis and function-scoped fixtures do not mix
    try:
        return outcome(pieces, cfg)
    finally:
        parse._urlset_push = saved


def test_it_is_the_reader_in_use() -> None:
    # Built here, so a urlset must go through it (else these tests compare lxml with itself).
    assert cpush.AVAILABLE, cpush.MISSING
    parser = parse.XmlSitemapParser(Kind.URLSET, parse.EntrySink(ReadStats(), ReaderConfig()))
    assert isinstance(parser._push, cpush.UrlsetPush)
    assert parser._parser is None
    index = parse.XmlSitemapParser(Kind.SITEMAPINDEX, parse.EntrySink(ReadStats(), ReaderConfig()))
    assert index._push is None  # indexes, RSS and Atom stay with lxml


@pytest.mark.parametrize("path", sorted(CASES.iterdir()), ids=lambda p: p.name)
def test_conformance_cases_read_the_same(path: Path) -> None:
    data = path.read_bytes()
    assert outcome([data]) == through_lxml([data])


@pytest.mark.parametrize("name", sorted(CORNERS))
@pytest.mark.parametrize("extensions", [True, False])
def test_corner_cases_read_the_same(name: str, extensions: bool) -> None:
    cfg = ReaderConfig(extensions=extensions)
    assert outcome([CORNERS[name]], cfg) == through_lxml([CORNERS[name]], cfg)


@settings(max_examples=300, deadline=None)
@given(generated(), st.booleans(), st.data())
def test_generated_documents_read_the_same(
    data: bytes, extensions: bool, draw: st.DataObject
) -> None:
    # Cut anywhere: the 16 KiB slices and the four bytes of the first reset fall where
    # lxml's do, so even a non-fatal error ends the same piece the same way.
    pieces = damaged_pieces(data, draw)
    cfg = ReaderConfig(extensions=extensions)
    ours = outcome(pieces, cfg)
    theirs = through_lxml(pieces, cfg)
    if ours[3] is not None and " not defined at line" in ours[3][1]:
        # An undeclared entity: lxml's feed ignores the error and starts a new document
        # with the next piece, so what it says then is anyone's guess (see the test below).
        assert ours[3][0] is ParseError
        return
    assert ours == theirs


@settings(max_examples=300, deadline=None)
@given(generated(), st.booleans(), st.data())
def test_the_fast_path_reads_what_the_tree_reads(
    data: bytes, extensions: bool, draw: st.DataObject
) -> None:
    # Both through this module: the fast path (values read from the parser's events,
    # their nodes never built) against the tree it stands in for, on the same pieces;
    # an undeclared entity included.
    pieces = damaged_pieces(data, draw)
    cfg = ReaderConfig(extensions=extensions)
    assert outcome(pieces, cfg) == without_fast_path(pieces, cfg)


@pytest.mark.parametrize("name", sorted(CORNERS))
@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_corner_cases_read_the_same_with_and_without_the_fast_path(name: str, chunk: int) -> None:
    data = CORNERS[name]
    pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    assert outcome(pieces) == without_fast_path(pieces)


def test_the_fast_path_reads_plain_urls_and_leaves_the_rest_to_the_tree() -> None:
    assert fast_urls(CORNERS["many slices"]) == 3000
    # Blanks around values are dropped as the tree drops them; not in an empty <url>,
    # where libxml2 keeps them as its text (so the tree reads that one).
    assert fast_urls(CORNERS["blanks around values"]) == 2
    assert fast_urls(CORNERS["images"]) == 0  # an extension child: read from the tree
    assert fast_urls(CORNERS["markup inside loc"]) == 0
    assert fast_urls(CORNERS["attributes on values"]) == 0
    assert fast_urls(CORNERS["a dtd"]) == 0  # libxml2 reads the declarations on the way
    # Text beside the values: the tree, unless it is blanks libxml2 would drop anyway.
    assert fast_urls(CORNERS["text beside values"]) == 2
    # 69 values; 16; 40 images of two caps each; 33 links of three attributes each.
    assert fast_urls(CORNERS["more values than the fast path holds"]) == 1
    saved = cpush.fast_path(False)
    try:
        assert fast_urls(CORNERS["many slices"]) == 0
    finally:
        cpush.fast_path(saved)


def test_images_and_alternates_are_read_without_their_nodes() -> None:
    data = CORNERS["images and alternates as sites publish them"]
    assert fast_urls(data) == 2
    entries = outcome([data])[0]
    assert isinstance(entries[0], UrlEntry)
    assert isinstance(entries[1], UrlEntry)
    assert [(i.loc, i.title, i.caption, i.geo_location, i.license) for i in entries[0].images] == [
        ("https://i.e.com/1.jpg", "T & U", "c & d\ne", "G", "https://e.com/l"),
        ("https://i.e.com/2.jpg", None, None, None, None),
    ]
    assert entries[1].alternates == (
        ("de", "https://e.com/de?a=1&b=2"),
        ("fr", "https://e.com/&fr\u00e9"),
        ("", "https://e.com/blanklang"),
        ("it", "https://e.com/it"),
        ("x", "a"),
    )
    assert [i.loc for i in entries[1].images] == ["https://i.e.com/3.jpg"]
    assert entries[1].changefreq is not None
    # One oddity in each <url>: all of them read from the tree, wherever it came.
    odd = CORNERS["images and alternates the fast path leaves to the tree"]
    assert fast_urls(odd) == 0
    assert len(outcome([odd])[0]) == 17


def test_a_value_past_the_fast_paths_bound_goes_to_the_tree() -> None:
    # Its text kept up to 1 MiB; past that the builder takes the <url> (and its own
    # limit on a text node, 10 MB, ends a document where it always did: test_hostile).
    data = urlset(
        "<loc>https://e.com/a</loc>",
        "<loc>https://e.com/" + "x" * 1_500_000 + "</loc><lastmod>2024-01-02</lastmod>",
        "<loc>https://e.com/c</loc>",
    )
    pieces = [data[i : i + 65_536] for i in range(0, len(data), 65_536)]
    ours = outcome(pieces)
    assert ours == without_fast_path(pieces)
    # (the long loc is over the URL length limit: dropped and counted, as always)
    assert [e.loc for e in ours[0]] == ["https://e.com/a", "https://e.com/c"]
    assert fast_urls(data) == 2


@pytest.mark.parametrize("chunk", [1, 3, 5, 4096, 16_384, 16_385, 100_000])
def test_pieces_of_any_size_read_the_same(chunk: int) -> None:
    data = CORNERS["many slices"].removesuffix(b"</url></urlset>")  # the last <url> open
    pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    ours = outcome(pieces)
    assert ours == through_lxml(pieces)
    assert len(ours[0]) == 2999
    assert ours[2] == "partial"
    assert ours[3] is not None
    assert ours[3][0] is TruncatedDocument


@pytest.mark.parametrize("cap", [1, 2, 2999])
def test_the_entry_cap_stops_both_at_the_same_entry(cap: int) -> None:
    # LimitExceeded is raised inside libxml2's callback here: the parser is stopped and
    # the exception raised again by feed(), with the entries before it kept.
    cfg = ReaderConfig(max_entries_per_file=cap)
    ours = outcome([CORNERS["many slices"]], cfg)
    assert ours == through_lxml([CORNERS["many slices"]], cfg)
    assert len(ours[0]) == cap
    assert ours[3] is not None
    assert ours[3][0] is LimitExceeded


def test_an_undeclared_entity_names_itself() -> None:
    # lxml ignores the error while feeding, restarts its parser and at the end says
    # "no element found at line 0, column 0"; here the error names the entity and where.
    data = urlset("<loc>https://e.com/a</loc>", "<loc>https://e.com/&nbsp;b</loc>")
    entries, result = read_bytes([data])
    assert [e.loc for e in entries] == ["https://e.com/a"]
    assert result.status == "partial"
    assert isinstance(result.error, ParseError)
    assert "Entity 'nbsp' not defined" in str(result.error)
    assert result.error.line == 1


def test_what_is_read_is_freed() -> None:
    # The tree holds the <url> still open, never the ones read: memory does not grow
    # with the file.
    sink = parse.EntrySink(ReadStats(), ReaderConfig())
    parser = parse.XmlSitemapParser(Kind.URLSET, sink)
    push = parser._push
    assert push is not None
    out: list[Entry] = []
    data = CORNERS["many slices"]
    parser.feed(data[:-40], out)  # ends inside the last <url>
    assert len(out) == 2999
    assert push.held() == 1
    parser.feed(data[-40:], out)
    parser.close(out)
    assert len(out) == 3000
    assert push.held() == 0


def test_a_parser_is_freed_without_the_cycle_collector() -> None:
    # The reader keeps no reference to its XmlSitemapParser (that would be a cycle, and
    # each document's libxml2 context would wait for a collection).
    gc.disable()
    try:
        parser = parse.XmlSitemapParser(Kind.URLSET, parse.EntrySink(ReadStats(), ReaderConfig()))
        out: list[Entry] = []
        # Markup nested in a news value: the Python walker's copy path too.
        parser.feed(CORNERS["video and news"].replace(b"<news:title>N", b"<news:title>N<b/>"), out)
        parser.close(out)
        assert len(out) == 1
        assert isinstance(out[0], UrlEntry)
        assert out[0].videos
        assert out[0].news
        ref = weakref.ref(parser)
        del parser
        assert ref() is None
    finally:
        gc.enable()


def test_errors_end_the_document_and_later_input_is_ignored() -> None:
    reader = SitemapReader("https://e.com/s.xml")
    good = f"<urlset {SM}><url><loc>https://e.com/a</loc></url><url><loc>https://e.com/b</lo>"
    assert [e.loc for e in reader.feed(good.encode())] == ["https://e.com/a"]
    assert reader.failed
    assert reader.feed(b"</url></urlset>") == []
    assert reader.finish() == []
    result = reader.result()
    assert result.status == "partial"
    assert "Opening and ending tag mismatch" in str(result.error)
    assert result.error is not None
    assert result.error.url == "https://e.com/s.xml"


def test_without_it_urlsets_go_back_to_lxml(monkeypatch: pytest.MonkeyPatch) -> None:
    # Here it loaded against the libxml2 lxml runs (MISSING would say why not). Where
    # it cannot (another libxml2, a missing function), parse._urlset_push is None and a
    # urlset parser is lxml's XMLPullParser again, reading the same entries.
    assert cpush.MISSING is None
    assert parse._urlset_push is cpush.UrlsetPush
    monkeypatch.setattr(parse, "_urlset_push", None)
    parser = parse.XmlSitemapParser(Kind.URLSET, parse.EntrySink(ReadStats(), ReaderConfig()))
    assert parser._push is None
    assert parser._parser is not None
    out: list[Entry] = []
    parser.feed(CORNERS["plain"], out)
    parser.close(out)
    assert [e.loc for e in out] == ["https://e.com/a"]
