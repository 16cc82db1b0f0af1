"""crawl/htmlpage.py: what an HTML page says (links, canonical, generator, sitemaps, noindex)."""

from __future__ import annotations

from harvester.crawl.htmlpage import MAX_HTML_BYTES, MAX_LINKS, parse_html

BASE = "http://127.0.0.2/dir/page"


def test_links_resolved_deduplicated_in_order_without_fragments() -> None:
    page = parse_html(
        b'<a href="/x">1</a><a href="y#f">2</a><a href="/x#z">3</a>'
        b'<a href="mailto:a@b">4</a><a href="javascript:void(0)">5</a>'
        b'<area href="https://127.0.0.3/q"><a href="/n" rel="nofollow">6</a>',
        BASE,
    )
    assert page.links == ("http://127.0.0.2/x", "http://127.0.0.2/dir/y", "https://127.0.0.3/q")


def test_base_canonical_generator_sitemap_noindex() -> None:
    page = parse_html(
        b'<html><head><base href="http://127.0.0.2/root/">'
        b'<link rel="canonical" href="/c"><meta name="generator" content="WordPress 6.5">'
        b'<link rel="sitemap" href="map.xml"><meta name="robots" content="noindex, follow">'
        b'</head><body><a href="z">z</a></body></html>',
        BASE,
    )
    assert page.canonical == "http://127.0.0.2/c"
    assert page.generator == "WordPress 6.5"
    assert page.sitemaps == ("http://127.0.0.2/root/map.xml",)
    assert page.noindex
    assert page.links == ("http://127.0.0.2/root/z",)


def test_headers_give_generator_and_noindex() -> None:
    page = parse_html(b"<p>hi</p>", BASE, {"X-Powered-By": "Hugo", "X-Robots-Tag": "none"})
    assert (page.generator, page.noindex) == ("Hugo", True)
    page = parse_html(b"<p>hi</p>", BASE, {"X-Robots-Tag": "googlebot: noindex"})
    assert page.noindex
    assert not parse_html(b'<meta name="robots" content="index">', BASE).noindex


def test_hostile_input_never_raises_and_is_capped() -> None:
    assert parse_html(b"", BASE).links == ()
    assert parse_html(b"\x00\xff\xfe<<<>>>", BASE).canonical is None
    entity = b'<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><a href="&e;">x</a>'
    assert all("passwd" not in link for link in parse_html(entity, BASE).links)
    many = b"".join(b'<a href="/%d">.</a>' % i for i in range(MAX_LINKS + 10))
    assert len(parse_html(many, BASE).links) == MAX_LINKS
    big = b'<a href="/first">.</a>' + b" " * MAX_HTML_BYTES + b'<a href="/late">.</a>'
    page = parse_html(big, BASE)
    assert page.truncated
    assert page.links == ("http://127.0.0.2/first",)
