"""The streaming reader end to end on bytes: hostile input, caps, partial documents, memory."""

from __future__ import annotations

import gzip
import time
import tracemalloc
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

from harvester.config import ReaderConfig
from harvester.models import Kind, SitemapChild, UrlEntry
from harvester.reader.sitemap import UTF8_VIOLATION, SitemapReader, read_bytes
from harvester.urls.records import record
from tests.paths import DATA

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

HOSTILE = DATA / "hostile"
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(n: int, *, extra: str = "", start: int = 0) -> bytes:
    body = "".join(
        f"<url><loc>https://example.com/p/{i}</loc><lastmod>2024-01-02</lastmod>{extra}</url>"
        for i in range(start, start + n)
    )
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="{NS}">{body}</urlset>'.encode()


def locs(entries: Sequence[object]) -> list[str]:
    return [e.loc for e in entries if isinstance(e, UrlEntry | SitemapChild)]


@pytest.mark.parametrize(
    "name",
    ["xxe_file.xml", "xxe_http.xml", "billion_laughs.xml", "parameter_entity.xml"],
)
def test_entity_declarations_are_refused_before_parsing(name: str) -> None:
    start = time.process_time()  # CPU time: what the document costs, however loaded the machine
    entries, result = read_bytes((HOSTILE / name).read_bytes(), f"http://example.com/{name}")
    assert entries == []
    assert result.status == "error"
    assert result.error is not None
    assert result.error.kind == "forbidden_construct"
    assert result.error.url == f"http://example.com/{name}"
    assert time.process_time() - start < 2  # never expanded (a billion laughs takes minutes)


@pytest.mark.parametrize("name", ["doctype_plain.xml", "doctype_external_dtd.xml"])
def test_doctype_without_entities_is_ignored_not_loaded(name: str) -> None:
    entries, result = read_bytes((HOSTILE / name).read_bytes())
    assert locs(entries) == ["http://example.com/a"]
    assert result.status == "ok"
    assert "DOCTYPE ignored (never loaded)" in result.stats.warnings


def test_html_page_is_not_a_sitemap() -> None:
    entries, result = read_bytes((HOSTILE / "html_page.html").read_bytes(), "http://e.com/s.xml")
    assert entries == []
    assert result.error is not None
    assert result.error.kind == "not_a_sitemap"
    assert "HTML" in result.error.message


def test_utf16_with_bom() -> None:
    data = (HOSTILE / "utf16_bom.xml").read_bytes()
    entries, result = read_bytes([data[i : i + 5] for i in range(0, len(data), 5)])
    assert result.status == "ok", result.error
    assert locs(entries) == ["http://example.com/été"]


def test_undeclared_latin1_falls_back_to_cp1252() -> None:
    entries, result = read_bytes((HOSTILE / "undeclared_latin1.xml").read_bytes())
    assert result.status == "ok", result.error
    assert locs(entries) == ["http://example.com/café"]


@pytest.mark.parametrize("size", [0, 1, 2, 7])
def test_text_bytes_that_are_not_utf8_become_percent_escapes(size: int) -> None:
    # Issue 30 item 2: a latin-1 é (0xE9) in a text sitemap is the URL .../caf%E9 the
    # server answers, not caf\ufffd (caf%EF%BF%BD); a valid é (C3 A9) stays itself, also
    # split between chunks; an invalid byte last in a chunk is escaped once the next says.
    body = (
        b"https://e.com/caf\xe9\nhttps://e.com/caf\xc3\xa9\nhttps://e.com/\xc3\nhttps://e.com/\xe9"
    )
    chunks = [body] if not size else [body[i : i + size] for i in range(0, len(body), size)]
    entries, result = read_bytes(chunks)
    assert locs(entries) == [
        "https://e.com/caf%E9",
        "https://e.com/caf\u00e9",
        "https://e.com/%C3",
        "https://e.com/%E9",
    ]
    assert record(entries[0], None)["url"] == "https://e.com/caf%E9"
    assert result.status == "ok"
    assert result.stats.violations == [UTF8_VIOLATION]


def test_xml_declared_utf8_with_bytes_that_are_not_is_read_with_percent_escapes() -> None:
    doc = (
        b'<?xml version="1.0" encoding="utf-8"?><urlset xmlns="' + NS.encode() + b'">'
        b"<url><loc>https://e.com/a</loc></url><url><loc>https://e.com/caf\xe9</loc>"
        b"<lastmod>2024-01-02</lastmod></url><url><loc>https://e.com/b</loc></url></urlset>"
    )
    for chunks in ([doc], [doc[i : i + 5] for i in range(0, len(doc), 5)]):
        entries, result = read_bytes(chunks)
        assert locs(entries) == ["https://e.com/a", "https://e.com/caf%E9", "https://e.com/b"]
        assert result.status == "ok"
        assert result.stats.violations == [UTF8_VIOLATION]


def test_undeclared_xml_that_began_as_utf8_escapes_a_later_bad_byte() -> None:
    # The encoding of an undeclared document is decided on its first bytes (UTF-8, or
    # cp1252 when they are not: test_undeclared_latin1_falls_back_to_cp1252); a bad byte
    # after a UTF-8 start is escaped as in a declared one.
    doc = urlset(50)[:-9] + b"<url><loc>https://e.com/caf\xe9</loc></url></urlset>"
    doc = doc.replace(b'<?xml version="1.0" encoding="UTF-8"?>', b"")
    entries, result = read_bytes([doc[i : i + 512] for i in range(0, len(doc), 512)])
    assert locs(entries)[-1] == "https://e.com/caf%E9"
    assert len(entries) == 51
    assert result.status == "ok"
    assert result.stats.violations == [UTF8_VIOLATION]


def test_two_roots_keeps_the_first_and_flags() -> None:
    entries, result = read_bytes((HOSTILE / "two_roots.xml").read_bytes())
    assert locs(entries) == ["http://example.com/a"]
    assert result.status == "partial"
    assert result.error is not None
    assert result.error.kind == "bad_xml"


@pytest.mark.parametrize(
    ("root", "entry"), [("urlset", "url"), ("sitemapindex", "sitemap")], ids=["urlset", "index"]
)
def test_a_namespace_that_is_no_uri_keeps_the_complete_entries(root: str, entry: str) -> None:
    # Issue 30 item 13: libxml2 calls the xmlns no valid URI (an error at the end); the
    # entries are still read by local name, as in any other namespace, and kept.
    ns = "http://www}sitemaps.org/schemas/sitemap/0.9"
    doc = f'<{root} xmlns="{ns}"><{entry}><loc>https://e.com/a</loc></{entry}></{root}>junk'
    entries, result = read_bytes(doc.encode())
    assert locs(entries) == ["https://e.com/a"]
    assert result.status == "partial"
    assert result.error is not None
    assert result.error.kind == "bad_xml"


def test_truncated_document_keeps_complete_entries_only() -> None:
    data = urlset(10)
    cut = data.index(b"/p/7</loc>") + 3  # inside the 8th loc
    entries, result = read_bytes(data[:cut])
    assert locs(entries) == [f"https://example.com/p/{i}" for i in range(7)]
    assert result.status == "partial"
    assert result.error is not None
    assert result.error.kind == "truncated"


def test_truncated_gzip_keeps_what_was_decoded() -> None:
    gz = gzip.compress(urlset(2000))
    entries, result = read_bytes(gz[: len(gz) // 2])
    assert 0 < len(entries) < 2000
    assert locs(entries) == [f"https://example.com/p/{i}" for i in range(len(entries))]
    assert result.status == "partial"
    assert result.error is not None
    assert result.error.kind == "bad_gzip"


def test_gzip_inside_gzip() -> None:
    entries, result = read_bytes(gzip.compress(gzip.compress(urlset(3))))
    assert len(entries) == 3
    assert result.stats.gzip_layers == 2


def test_decompressed_cap_stops_a_bomb_quickly() -> None:
    # 200 MB of whitespace inside a urlset compresses to ~200 KB.
    payload = urlset(5)[:-9] + b" " * 200_000_000 + b"</urlset>"
    gz = gzip.compress(payload, compresslevel=1)
    cfg = ReaderConfig(max_decompressed_bytes=1_000_000)
    reader = SitemapReader("http://e.com/bomb.xml.gz", cfg)
    entries = []
    for i in range(0, len(gz), 65536):
        entries += reader.feed(gz[i : i + 65536])
        if reader.failed:
            break
    entries += reader.finish()
    result = reader.result()
    assert result.stats.bytes_in < len(gz)  # stopped in the first chunks, not at the end
    assert len(entries) == 5
    assert result.status == "partial"
    assert result.error is not None
    assert result.error.kind == "too_large"
    assert result.stats.bytes_out <= 1_000_000


def gzip_stream(head: bytes, fill: bytes, size: int) -> Iterator[bytes]:
    """gzip of ``head`` then ``size`` bytes of ``fill``, made as it is read (1 MiB at a time)."""
    deflate = zlib.compressobj(1, zlib.DEFLATED, 31)
    yield deflate.compress(head)
    block = fill * (1 << 20)
    for _ in range(size // len(block)):
        yield deflate.compress(block)
    yield deflate.flush()


def test_a_whitespace_bomb_is_too_large_at_libxml2s_text_limit() -> None:
    # Issue 30 item 9: 4 GiB of blanks after three <url>s, in ~4 MB of gzip. libxml2's
    # limit on one text node (10,000,000 bytes) is met before the 50 MiB decompressed cap:
    # a resource limit, named, not malformed XML.
    reader = SitemapReader("http://e.com/bomb.xml.gz")
    entries = []
    for chunk in gzip_stream(urlset(3)[: -len(b"</urlset>")], b" ", 4 << 30):
        entries += reader.feed(chunk)
        if reader.failed:
            break
    entries += reader.finish()
    result = reader.result()
    assert len(entries) == 3
    assert result.status == "partial"
    assert result.error is not None
    assert result.error.kind == "too_large"
    assert "10,000,000 bytes" in result.error.message
    assert "libxml2" in result.error.message
    assert result.stats.bytes_out < 2 * 10_000_000  # stopped at the limit, not at 4 GiB


@pytest.mark.parametrize(
    ("tail", "limit"),
    [
        ("<url><loc>" + "x" * 10_000_001 + "</loc></url>", "10,000,000 bytes"),
        ("<!--" + "x" * 10_000_001 + "-->", "10,000,000 bytes"),
        ("<url><loc><![CDATA[" + "x" * 10_000_001 + "]]></loc></url>", "10,000,000 bytes"),
        ("<u" + "x" * 50_001 + "/>", "50,000 bytes"),
        ("<a>" * 300 + "</a>" * 300, "256"),
    ],
    ids=["text", "comment", "cdata", "name", "depth"],
)
def test_libxml2_resource_limits_are_too_large(tail: str, limit: str) -> None:
    doc = urlset(2)[: -len(b"</urlset>")] + tail.encode() + b"</urlset>"
    entries, result = read_bytes([doc[i : i + 65536] for i in range(0, len(doc), 65536)])
    assert len(entries) == 2
    assert result.status == "partial"
    assert result.error is not None
    assert result.error.kind == "too_large", result.error
    assert limit in result.error.message


def test_entries_per_file_cap() -> None:
    entries, result = read_bytes(urlset(20), cfg=ReaderConfig(max_entries_per_file=5))
    assert len(entries) == 5
    assert result.error is not None
    assert result.error.kind == "limit"
    assert result.status == "partial"


def test_protocol_limits_are_flagged_not_enforced() -> None:
    long_loc = "https://example.com/" + "a" * 2100
    doc = f'<urlset xmlns="{NS}"><url><loc>{long_loc}</loc></url></urlset>'.encode()
    entries, result = read_bytes(doc)
    assert locs(entries) == [long_loc]
    assert result.stats.violations == ["loc longer than 2048 characters"]
    entries, result = read_bytes(urlset(50_001))
    assert len(entries) == 50_001
    assert result.stats.violations == ["more than 50000 entries"]


def test_over_long_loc_dropped_and_counted() -> None:
    doc = f'<urlset xmlns="{NS}"><url><loc>https://e.com/{"a" * 9000}</loc></url></urlset>'
    entries, result = read_bytes(doc.encode())
    assert entries == []
    assert result.stats.dropped_too_long == 1
    assert result.status == "ok"


def test_non_http_locs_dropped_and_counted() -> None:
    doc = (
        f'<urlset xmlns="{NS}"><url><loc>javascript:alert(1)</loc></url>'
        "<url><loc>file:///etc/passwd</loc></url><url><loc>/relative</loc></url>"
        "<url><loc>https://ok.example/</loc></url></urlset>"
    )
    entries, result = read_bytes(doc.encode())
    assert locs(entries) == ["https://ok.example/"]
    assert result.stats.dropped_invalid_loc == 3


BAD_LOCS = [
    "https://exa mple.com/x",
    "http://[::1/x",
    "http://www.example.com:99999/x",
    "http://" + "a" * 300 + ".com/x",
    "http://" + ".".join(["abcdefghi"] * 30) + ".com/x",
    "http:///x",
    "http://user@/x",
]
GOOD_LOCS = ["https://e.com/a", "http://[::1]:8080/b", "https://例え.jp/c", "https://e.com/d"]


def as_kind(kind: str, locs: Sequence[str]) -> bytes:
    def item(loc: str) -> str:
        loc = loc.replace("&", "&amp;")
        return {
            "urlset": f"<url><loc>{loc}</loc></url>",
            "index": f"<sitemap><loc>{loc}</loc></sitemap>",
            "rss": f"<item><link>{loc}</link></item>",
            "atom": f'<entry><link href="{loc}"/></entry>',
        }[kind]

    if kind == "text":
        return "\n".join(locs).encode()
    body = "".join(item(loc) for loc in locs)
    return {
        "urlset": f'<urlset xmlns="{NS}">{body}</urlset>',
        "index": f'<sitemapindex xmlns="{NS}">{body}</sitemapindex>',
        "rss": f'<rss version="2.0"><channel>{body}</channel></rss>',
        "atom": f'<feed xmlns="http://www.w3.org/2005/Atom">{body}</feed>',
    }[kind].encode()


@pytest.mark.parametrize("kind", ["urlset", "index", "rss", "atom", "text"])
def test_locs_with_no_usable_host_or_port_are_dropped_and_counted(kind: str) -> None:
    # Issue 30 item 1: a host that can be no DNS name or IP literal, or a port outside
    # 1-65535, is never emitted (its record would have the broken string as url and an
    # empty host, or one with a space); it is counted, and the first five are kept.
    mixed = [loc for pair in zip(GOOD_LOCS, BAD_LOCS, strict=False) for loc in pair]
    entries, result = read_bytes(as_kind(kind, mixed + BAD_LOCS[len(GOOD_LOCS) :]))
    assert locs(entries) == GOOD_LOCS
    assert result.status == "ok"
    assert result.stats.dropped_invalid_loc == len(BAD_LOCS)
    assert result.stats.invalid_loc_examples == [loc[:200] for loc in BAD_LOCS[:5]]


def test_a_newline_or_tab_inside_a_loc_is_removed_as_the_url_parser_does() -> None:
    doc = f'<urlset xmlns="{NS}"><url><loc>https://exa\nmple.com/x\ty</loc></url></urlset>'
    entries, result = read_bytes(doc.encode())
    assert locs(entries) == ["https://exa\nmple.com/x\ty"]  # as published
    assert record(entries[0], None)["url"] == "https://example.com/xy"
    assert result.stats.dropped_invalid_loc == 0


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    doc = f'<urlset xmlns="{NS}"><url><loc>https://e.com/a</loc></url>' + "<x>" * 100_000
    start = time.process_time()  # CPU time: what the document costs, however loaded
    entries, result = read_bytes(doc.encode())
    assert time.process_time() - start < 2
    assert locs(entries) == ["https://e.com/a"]
    assert result.status == "partial"


def test_nul_bytes_are_an_xml_error() -> None:
    entries, result = read_bytes(urlset(2)[:-9] + b"\x00\x00</urlset>")
    assert len(entries) == 2
    assert result.status == "partial"


def test_empty_body() -> None:
    entries, result = read_bytes(b"")
    assert entries == []
    assert result.error is not None
    assert result.error.kind == "not_a_sitemap"


@pytest.mark.parametrize(
    "body",
    [
        b"Service Unavailable",
        b"Error 503: the server is busy.\r\nPlease try again later.\r\n",
        b"lorem ipsum dolor\nsit amet\n\n",
        b"# sitemap coming soon\n",
        b"/page/1\n/page/2\nwww.example.com/3\n",
        b"\xef\xbb\xbfnot found",
    ],
    ids=["one line", "error page", "words", "a comment", "no absolute url", "bom"],
)
def test_text_with_no_url_line_is_not_a_sitemap(body: bytes) -> None:
    # Issue 30 item 4: a 200 body of plain text with no URL line at all is not an empty
    # text sitemap: the crawl moves on to the next fallback location on not_a_sitemap.
    for chunks in ([body], [body[i : i + 3] for i in range(0, len(body), 3)]):
        entries, result = read_bytes(chunks)
        assert entries == []
        assert result.status == "error"
        assert result.error is not None
        assert result.error.kind == "not_a_sitemap"
        assert "no URL" in result.error.message


def test_a_text_sitemap_with_url_lines_is_one_even_when_they_are_dropped() -> None:
    body = b"# urls\nhttps://e.com/a\nhttps://e.com/a\nhttp:///x\n"
    entries, result = read_bytes(body)
    assert locs(entries) == ["https://e.com/a"]
    assert result.status == "ok"
    entries, result = read_bytes(b"https://e.com/" + b"a" * 9000 + b"\n")
    assert (entries, result.status, result.stats.dropped_too_long) == ([], "ok", 1)


def test_junk_text_is_given_up_before_its_end() -> None:
    reader = SitemapReader("http://e.com/sitemap.txt")
    fed = 0
    while not reader.failed and fed < 64 << 20:
        reader.feed(b"All work and no play makes Jack a dull boy.\n" * 1000)
        fed += 45_000
    assert reader.failed
    assert fed <= 2 << 20  # a text sitemap has a URL line in its first MiB
    reader.finish()
    result = reader.result()
    assert result.error is not None
    assert result.error.kind == "not_a_sitemap"


def test_index_children_and_kind() -> None:
    doc = (
        f'<sitemapindex xmlns="{NS}"><sitemap><loc>https://e.com/a.xml</loc>'
        "<lastmod>2024-05-01T10:00:00+02:00</lastmod></sitemap></sitemapindex>"
    )
    entries, result = read_bytes(doc.encode())
    assert result.kind is Kind.SITEMAPINDEX
    (child,) = entries
    assert isinstance(child, SitemapChild)
    assert child.lastmod is not None
    assert child.lastmod.isoformat() == "2024-05-01T08:00:00+00:00"
    assert result.stats.children == 1


def test_text_sitemap_long_line_without_newline_is_bounded() -> None:
    reader = SitemapReader(cfg=ReaderConfig(max_url_length=100))
    reader.feed(b"https://e.com/a\n")
    for _ in range(100):
        reader.feed(b"x" * 1000)
    entries = reader.feed(b"\nhttps://e.com/b\n") + reader.finish()
    assert locs(entries) == ["https://e.com/b"]
    assert reader.result().stats.dropped_too_long == 1


def test_feed_after_failure_is_ignored() -> None:
    reader = SitemapReader()
    reader.feed(b"<html><body>")
    assert reader.failed
    assert reader.feed(urlset(3)) == []


def _peak_growth(data: bytes) -> int:
    reader = SitemapReader(cfg=ReaderConfig(max_decompressed_bytes=1 << 30))
    tracemalloc.start()
    count = 0
    for i in range(0, len(data), 65536):
        count += len(reader.feed(data[i : i + 65536]))
    count += len(reader.finish())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert reader.result().status == "ok"
    return peak


def test_memory_does_not_grow_with_document_size() -> None:
    """A 10x larger document must not need 10x the memory (entries are freed as we go).

    Each entry carries ~520 bytes of XML. The only thing allowed to grow is the
    in-document dedup set (an int per loc: ~100-160 bytes with the set's slack).
    """
    extra = (
        "<changefreq>daily</changefreq>"
        + "<image:x xmlns:image='urn:i'>"
        + "z" * 400
        + "</image:x>"
    )
    small = gzip.compress(urlset(2_000, extra=extra), 1)
    large = gzip.compress(urlset(20_000, extra=extra), 1)
    small_peak, large_peak = _peak_growth(small), _peak_growth(large)
    assert large_peak < small_peak + 18_000 * 200


def test_rss_pubdate_in_iso_form_is_read_and_counted() -> None:
    doc = (
        b"<rss><channel><item><link>https://e.com/a</link>"
        b"<pubDate>2024-03-01T10:00:00Z</pubDate></item>"
        b"<item><link>https://e.com/b</link><pubDate>garbage</pubDate></item></channel></rss>"
    )
    entries, result = read_bytes(doc)
    assert [e.lastmod.isoformat() if e.lastmod else None for e in entries] == [
        "2024-03-01T10:00:00+00:00",
        None,
    ]
    assert result.stats.lastmod_invalid == 1


UTF32_DOC = (
    '<?xml version="1.0" encoding="UTF-32"?>'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    "<url><loc>https://e.example/café</loc></url><url><loc>https://e.example/b</loc></url>"
    "</urlset>"
)


@pytest.mark.parametrize("codec", ["utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("bom", [True, False], ids=["bom", "no-bom"])
@pytest.mark.parametrize("declared", [True, False], ids=["declared", "undeclared"])
@pytest.mark.parametrize("split", [None, 1, 3, 6])
def test_utf32_documents_are_read_not_taken_for_empty_text(
    codec: str, bom: bool, declared: bool, split: int | None
) -> None:
    """Issue 30 item 3: UTF-32 (LE BOM ``FF FE 00 00`` was taken for UTF-16, and the rest
    for an empty text sitemap reported ``ok``)."""
    doc = UTF32_DOC if declared else UTF32_DOC.split("?>", 1)[1]
    data = ("\ufeff" if bom else "").encode(codec) + doc.encode(codec)
    chunks = [data] if split is None else [data[:split], data[split:]]
    entries, result = read_bytes(chunks)
    assert (result.kind, result.status) == (Kind.URLSET, "ok")
    assert [e.loc for e in entries] == ["https://e.example/café", "https://e.example/b"]


@pytest.mark.parametrize("codec", ["utf-32", "utf-32-le", "utf-32-be"])
def test_utf32_text_sitemaps_are_read(codec: str) -> None:
    entries, result = read_bytes("https://e.example/a\nhttps://e.example/b\n".encode(codec))
    assert (result.kind, result.status) == (Kind.TEXT, "ok")
    assert [e.loc for e in entries] == ["https://e.example/a", "https://e.example/b"]
