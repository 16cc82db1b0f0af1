"""The compiled <url> walker (reader/_cparse.pyx) reads exactly what the Python path reads.

Every document is read twice, once with the compiled walker (through
harvester/reader/_cpush.pyx for a urlset, where it is built) and once with
``parse._url_entry`` set to None (the Python path alone, as on a machine without a
C compiler, or with HARVESTER_PURE_PYTHON=1), and the entries, stats and errors must
be equal: on every conformance case, on hand-made corner cases (CDATA, entities,
markup nested in values, attributes, namespaces, videos and news that the walker
leaves to Python), and on generated documents. The first read must go through the
walker (``test_the_compiled_walker_is_in_use``, and ``both`` checks it each time);
with HARVESTER_PURE_PYTHON=1 there is none, and this module is skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvester.config import ReaderConfig
from harvester.models import Entry, Kind, ReadStats, UrlEntry
from harvester.reader import parse
from harvester.reader.sitemap import read_bytes
from tests.compiled import compiled_module
from tests.paths import DATA
from tests.strategies import mutated
from tests.unit.reader.documents import CORNERS, generated, urlset

if TYPE_CHECKING:
    from pathlib import Path

cparse = compiled_module("_cparse")

CASES = DATA / "conformance" / "cases"


def outcome(data: bytes, cfg: ReaderConfig | None = None) -> tuple[object, ...]:
    entries, result = read_bytes([data], cfg=cfg)
    error = None if result.error is None else (type(result.error), str(result.error))
    return entries, result.kind, result.status, error, result.stats.as_dict()


def both(
    data: bytes, monkeypatch: pytest.MonkeyPatch, cfg: ReaderConfig | None = None
) -> tuple[tuple[object, ...], tuple[object, ...]]:
    assert parse._url_entry is cparse.url_entry  # the first read is the compiled one
    compiled = outcome(data, cfg)
    with monkeypatch.context() as m:
        m.setattr(parse, "_url_entry", None)
        pure = outcome(data, cfg)
    return compiled, pure


def test_the_compiled_walker_is_in_use() -> None:
    # Built here, so the parser must use it: its entry builder and drain, and a named
    # context for them (else these tests would compare the Python path with itself).
    assert parse._url_entry is cparse.url_entry
    assert parse._drain_sitemap is cparse.drain
    for kind in (Kind.URLSET, Kind.SITEMAPINDEX):
        parser = parse.XmlSitemapParser(kind, parse.EntrySink(ReadStats(), ReaderConfig()))
        assert isinstance(parser._entry_ctx, cparse.EntryContext)


def test_the_context_holds_the_named_fields_it_was_made_from() -> None:
    sink = parse.EntrySink(ReadStats(), ReaderConfig(max_entries_per_file=7))
    parser = parse.XmlSitemapParser(Kind.URLSET, sink, extensions=False)
    ctx = parser._entry_ctx
    assert isinstance(ctx, cparse.EntryContext)
    urls = ctx.builder
    assert urls is parser._urls
    assert (ctx.extensions, ctx.cap, ctx.entry_type) == (False, 7, UrlEntry)
    assert ctx.stats is sink.stats
    assert ctx.seen is sink.seen
    assert ctx.changefreqs is urls.changefreqs
    assert ctx.priorities is urls.priorities


@pytest.mark.parametrize("path", sorted(CASES.iterdir()), ids=lambda p: p.name)
def test_conformance_cases_read_the_same(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled, pure = both(path.read_bytes(), monkeypatch)
    assert compiled == pure


@pytest.mark.parametrize("name", sorted(CORNERS))
@pytest.mark.parametrize("extensions", [True, False])
def test_corner_cases_read_the_same(
    name: str, extensions: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = ReaderConfig(extensions=extensions)
    compiled, pure = both(CORNERS[name], monkeypatch, cfg)
    assert compiled == pure


@pytest.mark.parametrize("cap", [1, 2, 3])
def test_the_entry_cap_reads_the_same(cap: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = urlset(*(f"<loc>https://e.com/{i}</loc>" for i in range(5)))
    compiled, pure = both(data, monkeypatch, ReaderConfig(max_entries_per_file=cap))
    assert compiled == pure
    assert compiled[3] is not None  # the cap is an error, with the entries before it kept


def test_the_protocol_limit_is_flagged_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    data = urlset(*(f"<loc>https://e.com/{i}</loc>" for i in range(50_002)))
    compiled, pure = both(data, monkeypatch)
    assert compiled == pure
    assert "more than 50000 entries" in str(compiled[4])


def test_what_the_walker_reads() -> None:
    # Not only equal to the Python path: right. Values decoded, trimmed, first image loc.
    entries, _ = read_bytes([CORNERS["images"]])
    (entry,) = entries
    assert isinstance(entry, UrlEntry)
    # The reader builds entries with tuple.__new__: every field must be there.
    assert len(entry) == len(UrlEntry._fields)
    assert entry.loc == "https://e.com/a"
    assert [(i.loc, i.caption, i.title) for i in entry.images] == [
        ("https://i.e.com/1.jpg", "c & d", None),
        ("https://i.e.com/2.jpg", None, None),
    ]
    entries, _ = read_bytes([CORNERS["alternates"]])
    assert isinstance(entries[0], UrlEntry)
    assert entries[0].alternates == (
        ("de", "https://e.com/de"),
        ("fr", "https://e.com/?a=1&b=2"),
        ("es", "https://e.com/\u00e9s"),
    )
    entries, _ = read_bytes([CORNERS["text then cdata"]])
    assert entries[0].loc == "https://e.com/a&b/c"


@settings(max_examples=200, deadline=None)
@given(generated(), st.booleans(), st.data())
def test_generated_documents_read_the_same(
    data: bytes, extensions: bool, draw: st.DataObject
) -> None:
    # Half of them damaged at the byte level too (the reader fuzzer's mutations): the
    # walker runs C over whatever tree libxml2 built from it, and must agree there too.
    if draw.draw(st.booleans()):
        data = draw.draw(mutated(data))
    cfg = ReaderConfig(extensions=extensions)
    compiled = outcome(data, cfg)
    saved = parse._url_entry
    assert saved is cparse.url_entry  # the first read was the compiled one
    parse._url_entry = None  # hypothesis and function-scoped fixtures do not mix
    try:
        pure = outcome(data, cfg)
    finally:
        parse._url_entry = saved
    error = compiled[3]
    if parse._urlset_push is not None and error is not None and " not defined at" in str(error):
        # An undeclared entity: read by _cpush, the error names it; lxml's feed parser
        # restarts and says something else (tests/unit/reader/test_cpush.py).
        assert pure[3] is not None
        return
    assert compiled == pure


@pytest.mark.parametrize("chunk", [1, 7, 100, 20_000])
def test_chunked_documents_read_the_same(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Entries closing in every possible piece of the input: the drain finds the root
    # once, and later drains prune what earlier ones handled.
    data = CORNERS["many slices"][:30_000] + b"</url></urlset>"
    pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    assert parse._url_entry is cparse.url_entry
    compiled = read_bytes(pieces)
    with monkeypatch.context() as m:
        m.setattr(parse, "_url_entry", None)
        pure = read_bytes(pieces)
    assert compiled[0] == pure[0]
    assert compiled[1].stats.as_dict() == pure[1].stats.as_dict()
    assert len(compiled[0]) > 300


def test_the_drain_prunes_what_it_handled(monkeypatch: pytest.MonkeyPatch) -> None:
    # Handled entries leave the tree (parse._prune's job), so a big file's tree stays small.
    # (lxml's parser: harvester/reader/_cpush.pyx frees as it reads, test_cpush checks it.)
    monkeypatch.setattr(parse, "_urlset_push", None)
    sink = parse.EntrySink(ReadStats(), ReaderConfig())
    parser = parse.XmlSitemapParser(Kind.URLSET, sink)
    out: list[Entry] = []
    parser.feed(CORNERS["many slices"][:-20], out)  # open: the last <url>s are not closed
    assert len(out) > 2900
    assert parser._root is not None
    assert len(parser._root) <= 1  # at most the <url> still being read
