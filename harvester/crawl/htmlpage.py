"""What one HTML page says about its site: its links, canonical, generator, sitemaps, noindex.

Pure and I/O-free. In: a page's bytes (only the first ``MAX_HTML_BYTES`` are
parsed), the URL it was served from (links are resolved against it, or against
its ``<base href>``) and its response headers. Out: an ``HtmlPage``.

Parsing is hardened like the sitemap reader's: lxml's HTML parser with
``no_network``, ``recover`` and ``huge_tree`` off (libxml2's HTML parser never
loads a DTD or an external entity), comments and PIs dropped, and any parser
failure gives an empty page, never an exception. Hrefs longer than
``MAX_HREF`` and schemes other than http(s) are dropped; at most ``MAX_LINKS``
links are kept per page, in document order, each once.

Example::

    page = parse_html(body, "https://example.com/", response.headers)
    page.links        # absolute http(s) URLs, fragments removed
    page.sitemaps     # <link rel="sitemap" href>
    page.generator    # "WordPress 6.5" (meta generator, else X-Generator / X-Powered-By)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urldefrag, urljoin

from lxml import etree

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["MAX_HREF", "MAX_HTML_BYTES", "MAX_LINKS", "HtmlPage", "parse_html"]

# A home page's links and head fit in far less; a bigger body is cut, not refused.
MAX_HTML_BYTES = 2 * 1024 * 1024
MAX_LINKS = 5_000  # links kept per page (a link farm's page must not grow a host's walk)
MAX_HREF = 2_048  # longer hrefs are dropped (no URL the sitemap protocol allows is longer)


@dataclass(frozen=True, slots=True)
class HtmlPage:
    """The parts of a page discovery, the links walk and the coverage check read."""

    url: str  # where it was served from
    links: tuple[str, ...] = ()  # <a href> / <area href>, absolute, no fragment, in order
    canonical: str | None = None  # <link rel="canonical" href>, absolute
    generator: str | None = None  # <meta name="generator">, else X-Generator/X-Powered-By
    sitemaps: tuple[str, ...] = ()  # <link rel="sitemap" href>, absolute
    noindex: bool = False  # <meta name="robots"> or X-Robots-Tag says noindex
    truncated: bool = False  # the body was longer than MAX_HTML_BYTES


def parse_html(data: bytes, url: str, headers: Mapping[str, str] | None = None) -> HtmlPage:
    """Parse ``data`` served from ``url`` (with ``headers``); never raises."""
    headers = headers or {}
    header_generator = headers.get("X-Generator") or headers.get("X-Powered-By")
    noindex = _noindex(headers.get("X-Robots-Tag", ""))
    truncated = len(data) > MAX_HTML_BYTES
    root = _parse(data[:MAX_HTML_BYTES])
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


def _noindex(directives: str) -> bool:
    """Whether a robots meta content or X-Robots-Tag value says noindex (or none)."""
    words = {w.strip().lower() for w in directives.replace(":", ",").split(",")}
    return "noindex" in words or "none" in words


def _absolute(base: str, href: str) -> str | None:
    """``href`` resolved against ``base``, its fragment removed; None unless http(s)."""
    try:
        url = urldefrag(urljoin(base, href.strip())).url
    except ValueError:  # an invalid IPv6 literal, say
        return None
    return url if url.startswith(("http://", "https://")) else None


def _parse(data: bytes) -> etree._Element | None:
    if not data.strip():
        return None
    parser = etree.HTMLParser(
        recover=True,
        no_network=True,
        remove_comments=True,
        remove_pis=True,
        default_doctype=False,
        huge_tree=False,
    )
    try:
        root = etree.fromstring(data, parser)
    except (etree.LxmlError, ValueError):
        return None
    return root
