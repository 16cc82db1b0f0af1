"""crawl/htmlpage.py parses as the bytes arrive: the same pages as the whole-body parse it
replaced (kept here as ``whole``, the reference), in any chunking, and its memory does not
grow with the page (tracemalloc: the parser keeps the results, not a tree nor the bytes)."""

from __future__ import annotations

import random
import tracemalloc
from typing import TYPE_CHECKING

import pytest
from lxml import etree

from harvester.crawl.htmlpage import (
    MAX_HREF,
    MAX_HTML_BYTES,
    MAX_LINKS,
    HtmlPage,
    HtmlReader,
    _absolute,
    _noindex,
    parse_html,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

BASE = "http://127.0.0.2/dir/page"


def whole(data: bytes, url: str, headers: Mapping[str, str] | None = None) -> HtmlPage:
    """The parse before streaming (the tree of the first MAX_HTML_BYTES, then its nodes)."""
    headers = headers or {}
    header_generator = headers.get("X-Generator") or headers.get("X-Powered-By")
    noindex = _noindex(headers.get("X-Robots-Tag", ""))
    truncated = len(data) > MAX_HTML_BYTES
    root = None
    if data[:MAX_HTML_BYTES].strip():
        parser = etree.HTMLParser(
            recover=True,
            no_network=True,
            remove_comments=True,
            remove_pis=True,
            default_doctype=False,
            huge_tree=False,
        )
        try:
            root = etree.fromstring(data[:MAX_HTML_BYTES], parser)
        except (etree.LxmlError, ValueError):
            root = None
    if root is None:
        return HtmlPage(url, generator=header_generator, noindex=noindex, truncated=truncated)
    base = url
    for node in root.iter("base"):
        href = node.get("href")
        if href:
            base = _absolute(base, href) or base
        break
    links: dict[str, None] = {}
    sitemaps: dict[str, None] = {}
    canonical = generator = None
    for node in root.iter("a", "area", "link", "meta"):
        tag = node.tag
        if tag == "meta":
            name = (node.get("name") or "").strip().lower()
            content = (node.get("content") or "").strip()
            if name == "generator" and generator is None and content:
                generator = content[:200]
            elif name in ("robots", "googlebot") and _noindex(content):
                noindex = True
            continue
        href = node.get("href")
        if not href or len(href) > MAX_HREF:
            continue
        absolute = _absolute(base, href)
        if absolute is None:
            continue
        if tag != "link":
            if len(links) < MAX_LINKS and "nofollow" not in (node.get("rel") or "").lower():
                links.setdefault(absolute)
            continue
        rels = (node.get("rel") or "").lower().split()
        if "canonical" in rels and canonical is None:
            canonical = absolute
        if "sitemap" in rels:
            sitemaps.setdefault(absolute)
    return HtmlPage(
        url,
        tuple(links),
        canonical,
        generator or header_generator,
        tuple(sitemaps),
        noindex,
        truncated,
    )


def streamed(
    data: bytes, url: str, sizes: list[int], headers: dict[str, str] | None = None
) -> HtmlPage:
    reader = HtmlReader(url, headers)
    at = 0
    for size in sizes:
        reader.feed(data[at : at + size])
        at += size
    reader.feed(data[at:])
    return reader.close()


PAGES = [
    b"",
    b"   \n\t ",
    b"\x00\xff\xfe<<<>>>",
    b"<p>hi</p>",
    b'<a href="/x">1</a><a href="y#f">2</a><a href="/x#z">3</a><a href="mailto:a@b">4</a>'
    b'<a href="javascript:void(0)">5</a><area href="https://127.0.0.3/q">'
    b'<a href="/n" rel="nofollow">6</a><a href="">e</a><a>none</a>',
    b'<html><head><base href="http://127.0.0.2/root/"><link rel="canonical" href="/c">'
    b'<meta name="generator" content="WordPress 6.5"><link rel="sitemap" href="map.xml">'
    b'<meta name="robots" content="noindex, follow"></head><body><a href="z">z</a></body></html>',
    # <base> after links and <link>s: it applies to them all (the first one only)
    b'<html><head><link rel="sitemap" href="m.xml"><link rel="Canonical Other" href="c">'
    b'</head><body><a href="a">a</a><base href="/b1/"><a href="b">b</a><base href="/b2/">'
    b"</body></html>",
    b'<base href=""><a href="q">q</a><base href="/late/">',
    b'<BASE HREF="http://[::1/"><A HREF="x">x</A>',
    b'<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><a href="&e;">x</a>',
    b"<?xml version=\"1.0\"?><!-- c --><a href=/unquoted>u</a><a href='/single'>s</a>",
    b'<meta name="GENERATOR" content="  Hugo 0.120  "><meta name="generator" content="other">'
    b'<meta name="googlebot" content="NOINDEX"><meta name="robots" content="index">',
    b'<html><head><meta charset="iso-8859-1"><title>caf\xe9</title></head>'
    b'<body><a href="/caf\xe9">x</a><a href="/%C3%A9">y</a></body></html>',
    b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1252">'
    b'</head><body><a href="/\x93q\x94">x</a></body></html>',
    "<html><body><a href='/\u00e9t\u00e9'>\u00e9</a></body></html>".encode(),
    b"\xef\xbb\xbf<html><body><a href='/bom'>b</a></body></html>",
    b"<table><tr><a href='/in-table'>t</a><td><form><a href='/f'>f</a></table></div></p>",
    b"<svg><a href='/svg'>s</a></svg><math><a href='/m'>m</a></math>",
    b'<a href="' + b"/" + b"x" * MAX_HREF + b'">long</a><a href="/ok">ok</a>',
    b"".join(b'<a href="/%d">.</a>' % i for i in range(MAX_LINKS + 10)),
    b'<a href="/first">.</a>' + b" " * MAX_HTML_BYTES + b'<a href="/late">.</a>',
    b'<a href="/cut-at-the-cap">' + b"x" * (MAX_HTML_BYTES - 30) + b'<a href="/after">',
]
HEADERS = [None, {"X-Powered-By": "Hugo", "X-Robots-Tag": "none"}, {"X-Generator": "Drupal"}]


@pytest.mark.parametrize("data", PAGES, ids=range(len(PAGES)))
@pytest.mark.parametrize("headers", HEADERS, ids=range(len(HEADERS)))
def test_the_streamed_page_is_the_whole_body_parse(
    data: bytes, headers: dict[str, str] | None
) -> None:
    expected = whole(data, BASE, headers)
    assert parse_html(data, BASE, headers) == expected
    rng = random.Random(len(data))
    for sizes in ([1] * 200, [7, 3, 1, 64], [rng.randint(1, 300) for _ in range(50)]):
        assert streamed(data, BASE, sizes, headers) == expected


def test_random_markup_in_random_chunks_is_the_whole_body_parse() -> None:
    rng = random.Random(49)
    parts = [
        b'<a href="/p{}">',
        b"</a>",
        b'<base href="/b{}/">',
        b'<link rel="sitemap" href="s{}">',
        b'<link rel="canonical" href="c{}">',
        b'<meta name="generator" content="g{}">',
        b"<div>",
        b"</div>",
        b"<p>text {}",
        b'<area href="#{}">',
        b"<!-- {} -->",
        b"<",
        b'<a rel="nofollow" href="n{}">',
        b"<head>",
        b"<body>",
        b"<script>var a='<a href=x>'",
        b"</script>",
        b'<meta name="robots" content="{}">',
        b"&amp;",
        b"\xc3\xa9",
        b"\xe9",
    ]
    for _ in range(300):
        data = b"".join(
            rng.choice(parts).replace(b"{}", b"%d" % rng.randint(0, 9))
            for _ in range(rng.randint(0, 40))
        )
        sizes = [rng.randint(1, 40) for _ in range(rng.randint(0, 10))]
        assert streamed(data, BASE, sizes) == whole(data, BASE), data


def _big_page(size: int) -> bytes:
    head = b'<html><head><link rel="sitemap" href="/map.xml"></head><body>'
    para = b"<p>" + b"lorem ipsum dolor sit amet " * 30 + b'<a href="/x">x</a></p>\n'
    return head + para * (size // len(para)) + b"</body></html>"


def _peak(data: bytes, chunk: int = 16_384) -> tuple[int, HtmlPage]:
    """Python memory at its peak while ``data`` is fed chunk by chunk (its own bytes not
    counted: a fetch holds one chunk at a time)."""
    tracemalloc.start()
    try:
        reader = HtmlReader(BASE)
        view = memoryview(data)
        for at in range(0, len(data), chunk):
            reader.feed(bytes(view[at : at + chunk]))
        page = reader.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, page


def test_memory_does_not_grow_with_the_page() -> None:
    small, big = _big_page(200_000), _big_page(MAX_HTML_BYTES - 1_000)
    small_peak, small_page = _peak(small)
    big_peak, big_page = _peak(big)
    assert big_page.sitemaps == small_page.sitemaps == ("http://127.0.0.2/map.xml",)
    assert big_page.links == ("http://127.0.0.2/x",)
    # Well under the page, and no more for a page 10 times the size.
    assert big_peak < len(big) / 10
    assert big_peak < small_peak + 64 * 1024
