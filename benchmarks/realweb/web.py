"""The seeded web of ``benchmarks.realweb``: which domain does what, its bytes and its truth.

In: ``(domains, seed)`` and a ``Mix`` (``benchmarks.realweb.mix``: ``FIXED``, or drawn from
a seed). Out: ``build(domains, seed, mix) -> list[Site]``, the same list in every process
for the same arguments (the servers rebuild it instead of reading files; the runner
computes the truth from it), ``truth(sites)`` (per domain: expected class, URL count,
digest) and ``write_seeds``.

Domain ``i`` is ``d{i:05d}.realweb.test`` (and ``www.`` of it) on its own loopback
address ``address(i)`` = ``127.(16 + i // 62500).(i // 250 % 250).(i % 250 + 1)``. The
first domains take one kind each in ``KINDS`` order (so a 26-domain web has every kind);
the rest draw a kind from the mix (``random.Random(seed)``, one draw per domain). One
domain near the end of the list (``late_index``: 2 % from the end) is a `delay` site whose
chain is the mix's cap, the longest of the web: issue 51's host that, admitted late, holds
the end of the run. Every kind's content and latency come from ``random.Random(f"{seed}:{i}")``,
so domain ``i`` is the same whatever the web's size.

| kind | fixed % | what | expected |
| --- | ---: | --- | --- |
| `small` | 50.1 | https, robots.txt `Sitemap:` -> `/sitemap.xml`; 20-600 URLs | `ok` |
| `www` | 10 | like `small`, every apex URL 301 to `https://www.<domain>` | `ok` |
| `big` | 0.5 | https, sitemap index of gzip children; 10,000-50,000 URLs | `ok` |
| `http_only` | 5 | :443 resets (nftables), :80 serves like `small` | `ok` |
| `fallback` | 8 | robots.txt 404 or without `Sitemap:`; `/sitemap.xml` exists | `ok` |
| `soft404` | 3 | every path (robots.txt too) 200 text/html "page not found" | `none` |
| `nosite` | 3 | every path 404 | `none` |
| `robots_5xx` | 2 | robots.txt 503, `/sitemap.xml` exists | `http_status` |
| `robots_hang` | 1 | robots.txt never answered, `/sitemap.xml` exists | `timeout` |
| `hang` | 3 | TCP accepted on :80 and :443, nothing ever sent | `timeout` |
| `refused` | 4 | TCP reset on both ports (nftables `reject with tcp reset`) | `connect` |
| `dropped` | 3 | every packet dropped (nftables `drop`) | `timeout` |
| `dns_nx` | 3 | NXDOMAIN | `dns` |
| `dns_servfail` | 1 | SERVFAIL | `dns` |
| `dns_empty` | 2 | NOERROR, no A record | `dns` |
| `slow` | 0.5 | like `small`, every response (robots.txt too) 5-30 s to its first byte | `ok` |
| `https_dropped` | 0.3 | :443 drops every packet (nftables), :80 serves like `small` | `ok` |
| `wall_403` | 0.2 | every path, robots.txt too, 403 "Access denied" | `blocked` |
| `wall_challenge` | 0.1 | every path 403 + `cf-mitigated: challenge`, a challenge | `blocked` |
| `wall_401` | 0.05 | every path 401 + `WWW-Authenticate` | `blocked` |
| `wall_451` | 0.05 | every path 451 | `blocked` |
| `delay` | 0.1 | robots.txt `Crawl-delay` 1-30 s, an index of 4-40 urlsets (<= 200 s) | `ok` |
| `bigindex` | 0.1 | an index of 60-400 gzip urlsets of 20-200 URLs | `ok` |
| `probe_only` | 1 | `small`, robots.txt names none, the sitemap at `/wp-sitemap.xml` | `ok` |
| `gz_only` | 0.5 | `small`, robots.txt names none, the sitemap at `/sitemap.xml.gz` | `ok` |
| `link_only` | 0.5 | `small`, robots.txt names none, the sitemap at `LINKED`, see below | `ok` |

(The random mix's shares and ranges: ``benchmarks.realweb.mix``.) Details. Every https
site's :80 answers 301 to the same URL on https. `small` and the sites with its content
(`www`, `http_only`, `fallback`, `robots_5xx`, `robots_hang`, `slow`, `https_dropped`):
robots.txt names `/sitemap.xml`, a urlset (70 %) or an index of 1-3 urlsets; 20-600
URLs (log-uniform); 80 % of the sites give a lastmod. `www`: the content and its locs
live on `www.<domain>`; every apex URL, http or https, answers 301 to it. `big`:
robots.txt -> `/sitemap_index.xml` -> `.xml.gz` children (application/gzip, not a
Content-Encoding) of at most 10,000 URLs each. `fallback`: half have no robots.txt
(404), half one without `Sitemap:`. `robots_5xx`: RFC 9309 says a 5xx robots.txt means
"assume complete disallow", so the expected outcome is that failure, not the URLs.
`hang`: no TLS handshake either. `link_only`: the sitemap at ``LINKED``
(``/assets/map-1.xml``, which no probe guesses), named only by the home page's
``<link rel="sitemap" type="application/xml">`` (issue 49's hidden kinds: ``_hide``).
`none`: no sitemap exists, so a correct harvest finds
no URL; a soft-404 HTML page at a probed location is no sitemap either. The walls
(issue 51): a bot wall answers every path, robots.txt included, with its status; the
site has sitemaps behind it, but a correct tool reports `blocked`, not `none`.

Latency: each responding site waits ``latency`` seconds before every response, drawn per
site from a lognormal with median 60 ms (sigma 0.7, so p90 ~150 ms), at most 2 s; `big`,
`delay` and `bigindex` sites median 100 ms; `slow` sites their TTFB. DNS latency is the
resolver's (``benchmarks.realweb.dns``).

Truth digest of a domain: the sum mod 2**64 of the first 8 bytes (little endian) of
``blake2b(loc)`` over its distinct locs (webgen's definition), order-independent.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from benchmarks.realweb.mix import EXPECT, FIXED, KINDS, WALL_STATUS, Mix

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["EXPECT", "KINDS"]  # (re-exported: the kinds live in mix.py)

SUFFIX: Final = "realweb.test"
HEALTHY: Final = frozenset(k for k, v in EXPECT.items() if v == "ok")
# Kinds with the content of `small` (robots -> sitemap), behind a failure for two of them
WITH_CONTENT: Final = frozenset(
    {"small", "www", "http_only", "fallback", "robots_5xx", "robots_hang", "slow"}
    | {"https_dropped", "probe_only", "gz_only", "link_only"}
)
HIDDEN: Final = frozenset({"probe_only", "gz_only", "link_only"})  # robots.txt names none
HTTP_ONLY: Final = frozenset({"http_only", "https_dropped"})  # content on http://
# Kinds whose :443 completes a TLS handshake (a certificate is made for them)
TLS_KINDS: Final = frozenset(
    {"small", "www", "big", "fallback", "soft404", "nosite", "robots_5xx", "robots_hang"}
    | {"slow", "delay", "bigindex", *HIDDEN, *WALL_STATUS}
)
DNS_KIND: Final = {"dns_nx": "nxdomain", "dns_servfail": "servfail", "dns_empty": "empty"}
NS_SM: Final = "http://www.sitemaps.org/schemas/sitemap/0.9"
SOFT404: Final = (
    b"<!DOCTYPE html>\n<html><head><title>Page not found</title></head>"
    b"<body><h1>Oops! That page can&rsquo;t be found.</h1>"
    b"<p>It looks like nothing was found at this location.</p></body></html>\n"
)
SECTIONS: Final = ("blog", "news", "products", "docs", "category/shoes", "p", "en/articles")
LINKED: Final = "/assets/map-1.xml"  # `link_only`: a path no probe guesses
LATE_DELAY: Final = 10  # the late host's Crawl-delay (issue 53's example: 10 s x 20 files)


def address(i: int) -> str:
    """The loopback address of domain ``i`` (never 127.0.x.x: the DNS server is there)."""
    return f"127.{16 + i // 62_500}.{i // 250 % 250}.{i % 250 + 1}"


def domain(i: int) -> str:
    """The name of domain ``i``: ``d00042.realweb.test``."""
    return f"d{i:05d}.{SUFFIX}"


def late_index(domains: int) -> int | None:
    """The index of the web's late long-chain host (2 % from the end), None on a web too
    small to have one besides one domain of each kind."""
    i = domains - 1 - domains // 50
    return i if i >= len(KINDS) else None


@dataclass(frozen=True, slots=True)
class Page:
    """One response of a site: status, Content-Type, body, Location (redirects), headers."""

    status: int
    content_type: str = ""
    body: bytes = b""
    location: str = ""
    headers: tuple[tuple[str, str], ...] = ()


HANG: Final = Page(0)  # never answered
WALL_BODY: Final = b"<!DOCTYPE html>\n<html><head><title>Access denied</title></head><body>"
WALLS: Final = {
    "wall_403": Page(403, "text/html; charset=utf-8", WALL_BODY + b"Error 1020</body></html>\n"),
    "wall_challenge": Page(
        403,
        "text/html; charset=UTF-8",
        b"<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>"
        b"<noscript>Enable JavaScript and cookies to continue</noscript></body></html>\n",
        headers=(("cf-mitigated", "challenge"), ("Cache-Control", "no-cache")),
    ),
    "wall_401": Page(
        401,
        "text/html",
        WALL_BODY + b"401</body></html>\n",
        headers=(("WWW-Authenticate", 'Basic realm="site"'),),
    ),
    "wall_451": Page(
        451, "text/html", WALL_BODY + b"Unavailable for legal reasons</body></html>\n"
    ),
}


@dataclass(slots=True)
class Site:
    """One domain: its kind, name, address, DNS answer, latency, pages and truth."""

    index: int
    kind: str
    name: str
    address: str
    latency: float  # seconds before every response (the TTFB of a `slow` site)
    scheme: str = "https"  # the scheme of the content
    content_host: str = ""  # the host serving the content (www.<name> for `www`)
    pages: dict[str, Page] = field(default_factory=dict)  # path -> page, on content_host
    default: Page | None = None  # a path not in pages (None: 404)
    locs: list[str] = field(default_factory=list)  # the truth (distinct locs)
    crawl_delay: float = 0.0  # robots.txt Crawl-delay (0: none)

    @property
    def expect(self) -> str:
        """The expected class: ``ok`` or a harvester failure class (or ``none``)."""
        return EXPECT[self.kind]

    @property
    def dns(self) -> str:
        """The DNS answer: ``a``, ``nxdomain``, ``servfail`` or ``empty``."""
        return DNS_KIND.get(self.kind, "a")


def digest(locs: list[str]) -> int:
    """Order-independent digest of a set of locs (see the module docstring)."""
    total = 0
    for loc in set(locs):
        total += int.from_bytes(hashlib.blake2b(loc.encode()).digest()[:8], "little")
    return total % 2**64


def _lognormal(rng: random.Random, median: float, sigma: float, cap: float) -> float:
    return min(cap, median * math.exp(rng.gauss(0.0, sigma)))


def _log_uniform(rng: random.Random, lo: float, hi: float) -> int:
    return round(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def urlset(locs: list[str], rng: random.Random) -> bytes:
    """A urlset of ``locs``, with a lastmod on each (80 % of the draws of ``rng``) or none."""
    dated = rng.random() < 0.8
    parts = [f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS_SM}">\n']
    for k, loc in enumerate(locs):
        if dated:
            day = 1 + (k * 7 + len(loc)) % 28
            parts.append(
                f"<url><loc>{loc}</loc><lastmod>2025-{1 + k % 12:02d}-{day:02d}</lastmod></url>\n"
            )
        else:
            parts.append(f"<url><loc>{loc}</loc></url>\n")
    parts.append("</urlset>\n")
    return "".join(parts).encode()


def index(children: list[str]) -> bytes:
    """A sitemapindex of ``children`` (absolute URLs)."""
    body = "".join(f"<sitemap><loc>{c}</loc></sitemap>\n" for c in children)
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{NS_SM}">\n{body}'
        "</sitemapindex>\n"
    ).encode()


def _locs(base: str, n: int, rng: random.Random) -> list[str]:
    section = rng.choice(SECTIONS)
    slug = rng.choice(("item", "post", "article", "page", "entry"))
    return [f"{base}/{section}/{slug}-{k:06d}-{(k * 2_654_435_761) % 99_991:05d}" for k in range(n)]


XML: Final = "application/xml"
GZIP: Final = "application/gzip"
TEXT: Final = "text/plain"
HTML: Final = "text/html; charset=utf-8"
ROBOTS: Final = "User-agent: *\nDisallow: /admin/\nDisallow: /cart\n"


def gz(body: bytes) -> bytes:
    """``body`` gzipped, the same bytes in every process (mtime 0: a server restarted
    between two runs serves the files it served before)."""
    return gzip.compress(body, compresslevel=6, mtime=0)


def _split(site: Site, locs: list[str], size: int, rng: random.Random, *, packed: bool) -> str:
    """Serve ``locs`` as children of ``size`` URLs of ``/sitemap_index.xml`` (``.xml.gz``
    when ``packed``); returns the index's path."""
    base = f"{site.scheme}://{site.content_host}"
    children = []
    for c, start in enumerate(range(0, len(locs), size)):
        body = urlset(locs[start : start + size], rng)
        path = f"/sitemaps/part-{c + 1}.xml" + (".gz" if packed else "")
        site.pages[path] = Page(200, GZIP, gz(body)) if packed else Page(200, XML, body)
        children.append(base + path)
    site.pages["/sitemap_index.xml"] = Page(200, XML, index(children))
    return "/sitemap_index.xml"


def _chain(site: Site, rng: random.Random, mix: Mix, *, late: bool) -> tuple[list[str], str]:
    """`delay` and `bigindex`: (locs, sitemap path); sets ``crawl_delay`` for `delay`."""
    base = f"{site.scheme}://{site.content_host}"
    per_child = _log_uniform(rng, 20, 200)
    if site.kind == "bigindex":
        children = min(_log_uniform(rng, *mix.bigindex_children), int(2 * mix.chain_cap))
    elif late:  # the longest chain of the web: Crawl-delay x (robots, index, children)
        site.crawl_delay = LATE_DELAY
        children = max(2, round(mix.chain_cap / LATE_DELAY) - 1)
    else:
        site.crawl_delay = _log_uniform(rng, *mix.crawl_delay)
        children = _log_uniform(rng, *mix.delay_children)
        if (children + 1) * site.crawl_delay > mix.chain_cap:
            children = max(2, math.floor(mix.chain_cap / site.crawl_delay) - 1)
    locs = _locs(base, children * per_child, rng)
    return locs, _split(site, locs, per_child, rng, packed=site.kind == "bigindex")


def _content(site: Site, rng: random.Random, mix: Mix, *, late: bool = False) -> None:
    """Fill ``site.pages`` and ``site.locs`` for a kind that serves sitemaps."""
    base = f"{site.scheme}://{site.content_host}"
    pages = site.pages
    if site.kind in ("delay", "bigindex"):
        locs, sitemap = _chain(site, rng, mix, late=late)
    elif site.kind == "big":
        n = _log_uniform(rng, *mix.big_urls)
        locs = _locs(base, n, rng)
        sitemap = _split(site, locs, 10_000, rng, packed=True)
    else:
        n = _log_uniform(rng, *mix.small_urls)
        locs = _locs(base, n, rng)
        if rng.random() < mix.urlset_share or site.kind == "fallback":
            pages["/sitemap.xml"] = Page(200, XML, urlset(locs, rng))
        else:
            parts = rng.randint(1, 3)
            size = math.ceil(n / parts)
            children = []
            for c in range(parts):
                path = f"/sitemap-{c + 1}.xml"
                pages[path] = Page(200, XML, urlset(locs[c * size : (c + 1) * size], rng))
                children.append(base + path)
            pages["/sitemap.xml"] = Page(200, XML, index(children))
        sitemap = "/sitemap.xml"
    robots = ROBOTS + (f"Crawl-delay: {site.crawl_delay:g}\n" if site.crawl_delay else "")
    if site.kind in HIDDEN:
        _hide(site, robots)
    elif site.kind == "fallback":
        if rng.random() < 0.5:
            pages["/robots.txt"] = Page(200, TEXT, robots.encode())
    elif site.kind == "robots_5xx":
        pages["/robots.txt"] = Page(503, TEXT, b"503 Service Unavailable\n")
    elif site.kind == "robots_hang":
        pages["/robots.txt"] = HANG
    else:
        pages["/robots.txt"] = Page(200, TEXT, f"{robots}\nSitemap: {base}{sitemap}\n".encode())
    if site.expect == "ok":
        site.locs = locs


def _hide(site: Site, robots: str) -> None:
    """Issue 49: move a `small`-like site's ``/sitemap.xml`` where only discovery beyond
    robots.txt finds it, behind a physical robots.txt that names none: `probe_only`,
    WordPress core's ``/wp-sitemap.xml`` (a platform probe); `gz_only`, ``/sitemap.xml.gz``
    only (gzip bytes); `link_only`, ``LINKED``, which only the home page's
    ``<link rel="sitemap">`` names."""
    pages = site.pages
    sitemap = pages.pop("/sitemap.xml")
    if site.kind == "probe_only":
        pages["/wp-sitemap.xml"] = sitemap
    elif site.kind == "gz_only":
        pages["/sitemap.xml.gz"] = Page(200, GZIP, gz(sitemap.body))
    else:
        pages[LINKED] = sitemap
        pages["/"] = Page(200, HTML, home_page(site.name, LINKED))
    pages["/robots.txt"] = Page(200, TEXT, robots.encode())


def home_page(title: str, sitemap: str) -> bytes:
    """A home page whose head announces ``sitemap`` with ``<link rel="sitemap">``."""
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>\n'
        f'<link rel="stylesheet" href="/assets/site.css">\n'
        f'<link rel="sitemap" type="application/xml" title="Sitemap" href="{sitemap}">\n'
        f'</head><body><h1>{title}</h1><p><a href="/about">About</a></p></body></html>\n'
    ).encode()


def _site(i: int, kind: str, seed: int, mix: Mix, *, content: bool, late: bool) -> Site:
    rng = random.Random(f"{seed}:{i}")
    median = mix.slow_latency if kind in ("big", "delay", "bigindex") else mix.latency[0]
    latency = _lognormal(rng, median, mix.latency[1], 2.0)
    if kind == "slow":
        latency = math.exp(rng.uniform(*(math.log(t) for t in mix.ttfb)))
    site = Site(i, kind, domain(i), address(i), round(latency, 4))
    site.scheme = "http" if kind in HTTP_ONLY else "https"
    site.content_host = f"www.{site.name}" if kind == "www" else site.name
    if not content:
        pass
    elif kind in WITH_CONTENT or kind in ("big", "delay", "bigindex"):
        _content(site, rng, mix, late=late)
    elif kind == "soft404":
        site.default = Page(200, HTML, SOFT404)
    elif kind in WALLS:
        site.default = WALLS[kind]
    return site


def build(domains: int, seed: int = 1, mix: Mix = FIXED, *, content: bool = True) -> list[Site]:
    """The web: ``domains`` sites, deterministic in ``(domains, seed, mix)`` (see the docstring).

    ``content=False`` leaves pages and locs empty (kinds, names, addresses, latencies and
    Crawl-delays are the same): what the DNS server and the namespace set-up need.
    """
    picker = random.Random(seed)
    late = late_index(domains)
    sites = []
    for i in range(domains):
        # One draw per domain, used or not, so that a domain given its kind on purpose
        # leaves every later domain's draw where it was.
        drawn = mix.pick(picker.random()) if i >= 15 else ""
        kind = KINDS[i] if i < len(KINDS) else "delay" if i == late else drawn
        sites.append(_site(i, kind, seed, mix, content=content, late=i == late))
    return sites


@dataclass(frozen=True, slots=True)
class Truth:
    """What a correct harvest of one domain gives."""

    name: str
    kind: str
    expect: str
    urls: int
    digest: int


def truth(sites: list[Site]) -> dict[str, Truth]:
    """Per domain name: its expected class, distinct URL count and digest."""
    return {
        s.name: Truth(s.name, s.kind, s.expect, len(set(s.locs)), digest(s.locs)) for s in sites
    }


def write_seeds(sites: list[Site], path: Path, *, scheme: str = "") -> Path:
    """One line per domain: the bare name (``scheme=""``, as a domain list has it) or
    ``{scheme}://name/robots.txt`` (what a SitemapSpider is given)."""
    if scheme:
        lines = [f"{scheme}://{s.name}/robots.txt" for s in sites]
    else:
        lines = [s.name for s in sites]
    path.write_text("\n".join(lines) + "\n")
    return path


def domain_of(host: str) -> str:
    """The domain a host name belongs to (``www.`` removed)."""
    host = host.lower().rstrip(".")
    return host.removeprefix("www.")
