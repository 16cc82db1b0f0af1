"""What one HTML page says about its site: its links, canonical, generator, sitemaps, noindex.

Pure and I/O-free. In: a page's bytes, whole (``parse_html``) or chunk by chunk as
they arrive (``HtmlReader``; only the first ``MAX_HTML_BYTES`` are parsed), the URL
it was served from (links are resolved against it, or against its ``<base href>``)
and its response headers. Out: an ``HtmlPage``.

Parsing streams and is hardened like the sitemap reader's: lxml's HTML parser fed
chunk by chunk with a target that keeps only the results (no tree: memory does not
grow with the page), ``no_network``, ``recover`` and ``huge_tree`` off (libxml2's
HTML parser never loads a DTD or an external entity), comments and PIs dropped, and
any parser failure gives an empty page, never an exception. Hrefs longer than
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
from typing import TYPE_CHECKING, Any
from urllib.parse import urldefrag, urljoin

from lxml import etree

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "CHUNK",
    "MAX_HREF",
    "MAX_HTML_BYTES",
    "MAX_LINKS",
    "HtmlPage",
    "HtmlReader",
    "parse_html",
]

# A home page's links and head fit in far less; a bigger body is cut, not refused.
MAX_HTML_BYTES = 2 * 1024 * 1024
MAX_LINKS = 5_000  # links kept per page (a link farm's page must not grow a host's walk)
MAX_HREF = 2_048  # longer hrefs are dropped (no URL the sitemap protocol allows is longer)
CHUNK = 65_536  # bytes fed to the parser at once by ``parse_html``


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
    """Parse ``data`` served from ``url`` (with ``headers``); never raises. (``HtmlReader``
    fed ``data`` in ``CHUNK``-byte pieces: the same page a fetch streams.)"""
    reader = HtmlReader(url, headers)
    for start in range(0, min(len(data), MAX_HTML_BYTES + 1), CHUNK):
        reader.feed(data[start : start + CHUNK])
    return reader.close()


class HtmlReader:
    """One page parsed as its bytes arrive: ``feed`` each chunk, then ``close`` for the
    ``HtmlPage``. Never raises.

    lxml's HTML parser calls a target (``_Collect``) per start tag, so no tree is built:
    what a page holds is its results (at most ``MAX_LINKS`` links) and the parser's
    small state, whatever its size. Bytes past ``MAX_HTML_BYTES`` are not parsed.
    """

    __slots__ = ("_collect", "_failed", "_headers", "_parser", "_size", "url")

    def __init__(self, url: str, headers: Mapping[str, str] | None = None) -> None:
        self.url = url
        self._headers = headers or {}
        self._collect = _Collect(url)
        # (Typed Any: the stubs' target protocol wants data() and end(), which a target
        # leaves out on purpose: lxml then neither builds nor hands over any text.)
        target: Any = self._collect
        self._parser = etree.HTMLParser(
            target=target,
            recover=True,
            no_network=True,
            remove_comments=True,
            remove_pis=True,
            default_doctype=False,
            huge_tree=False,
        )
        self._size = 0
        self._failed = False

    def feed(self, chunk: bytes) -> None:
        """Parse the next ``chunk`` of the body (past ``MAX_HTML_BYTES``: only counted)."""
        room = MAX_HTML_BYTES - self._size
        self._size += len(chunk)
        if room <= 0 or self._failed or not chunk:
            return
        try:
            self._parser.feed(chunk[:room])
        except (etree.LxmlError, ValueError):
            self._failed = True  # (as the whole-body parse: nothing of it is kept)

    def close(self) -> HtmlPage:
        """The page (a parser failure, or nothing but white space: no element read)."""
        headers = self._headers
        header_generator = headers.get("X-Generator") or headers.get("X-Powered-By")
        noindex = _noindex(headers.get("X-Robots-Tag", ""))
        truncated = self._size > MAX_HTML_BYTES
        got = self._collect
        if not self._failed:
            try:
                self._parser.close()
            except (etree.LxmlError, ValueError):
                self._failed = True
        if self._failed or not got.started:
            return HtmlPage(
                self.url, generator=header_generator, noindex=noindex, truncated=truncated
            )
        got.resolve()
        return HtmlPage(
            self.url,
            tuple(got.links),
            got.canonical,
            got.generator or header_generator,
            tuple(got.sitemaps),
            noindex or got.noindex,
            truncated,
        )


class _Collect:
    """lxml parser target: the links, canonical, generator, sitemaps and noindex of the
    start tags it is given, in document order.

    An href is resolved against the page's first ``<base href>`` wherever that is (as a
    browser does): until one is seen, hrefs wait unresolved (``_pending``, each once, at
    most ``MAX_LINKS`` of them: past that the page is taken to have none, and they are
    resolved against its URL).
    """

    def __init__(self, url: str) -> None:
        self.base: str | None = None  # None: no <base href> seen yet
        self.url = url
        self.started = False  # an element was read (an empty document has none)
        self.links: dict[str, None] = {}
        self.sitemaps: dict[str, None] = {}
        self.canonical: str | None = None
        self.generator: str | None = None
        self.noindex = False
        # (tag, href, rel) in document order, each once: a repeated link costs nothing
        self._pending: dict[tuple[str, str, str], None] | None = {}

    def start(self, tag: str, attrib: Mapping[str, str]) -> None:
        """One start tag."""
        self.started = True
        if tag == "meta":
            name = (attrib.get("name") or "").strip().lower()
            content = (attrib.get("content") or "").strip()
            if name == "generator" and self.generator is None and content:
                self.generator = content[:200]
            elif name in ("robots", "googlebot") and _noindex(content):
                self.noindex = True
        elif tag == "base" and self.base is None:
            href = attrib.get("href")  # (the first <base> decides, an empty one too)
            self.base = (_absolute(self.url, href) if href else None) or self.url
            self.resolve()
        elif tag in ("a", "area", "link"):
            href = attrib.get("href")
            if not href or len(href) > MAX_HREF:
                return
            rel = attrib.get("rel") or ""
            if self._pending is None:
                self._take(tag, href, rel)
                return
            self._pending.setdefault((tag, href, rel))
            if len(self._pending) > MAX_LINKS:
                self.resolve()  # (a <base> this late is taken to be none)

    def resolve(self) -> None:
        """Resolve the hrefs waiting for a ``<base>``; later ones are resolved at once."""
        pending, self._pending = self._pending, None
        for tag, href, rel in pending or ():
            self._take(tag, href, rel)

    def _take(self, tag: str, href: str, rel: str) -> None:
        absolute = _absolute(self.base or self.url, href)
        if absolute is None:
            return
        if tag != "link":
            if len(self.links) < MAX_LINKS and "nofollow" not in rel.lower():
                self.links.setdefault(absolute)
            return
        rels = rel.lower().split()
        if "canonical" in rels and self.canonical is None:
            self.canonical = absolute
        if "sitemap" in rels:
            self.sitemaps.setdefault(absolute)

    def close(self) -> None:
        """(The parser's end: ``HtmlReader.close`` reads the results.)"""


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
