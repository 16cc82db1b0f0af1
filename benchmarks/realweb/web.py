"""The seeded web of ``benchmarks.realweb``: which domain does what, its bytes and its truth.

In: ``(domains, seed)``. Out: ``build(domains, seed) -> list[Site]``, the same list in
every process for the same arguments (the server rebuilds it instead of reading files; the
runner computes the truth from it), ``truth(sites)`` (per domain: expected class, URL
count, digest) and ``write_seeds``.

Domain ``i`` is ``d{i:05d}.realweb.test`` (and ``www.`` of it) on its own loopback
address ``address(i)`` = ``127.(16 + i // 62500).(i // 250 % 250).(i % 250 + 1)``. The
first domains take one kind each in ``KINDS`` order (so even a 30-domain web has every
kind); the rest draw a kind from ``MIX`` by weight (``random.Random(seed)``). Every kind's
content and latency come from ``random.Random(f"{seed}:{i}")``, so domain ``i`` is the
same whatever the web's size.

| kind | % | what | expected |
| --- | ---: | --- | --- |
| `small` | 51.5 | https, robots.txt `Sitemap:` -> `/sitemap.xml`; 20-600 URLs | `ok` |
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

Details. Every https site's :80 answers 301 to the same URL on https. `small` and the
sites with its content (`www`, `http_only`, `fallback`, `robots_5xx`, `robots_hang`):
robots.txt names `/sitemap.xml`, a urlset (70 %) or an index of 1-3 urlsets; 20-600
URLs (log-uniform); 80 % of the sites give a lastmod. `www`: the content and its locs
live on `www.<domain>`; every apex URL, http or https, answers 301 to it. `big`:
robots.txt -> `/sitemap_index.xml` -> `.xml.gz` children (application/gzip, not a
Content-Encoding) of at most 10,000 URLs each. `fallback`: half have no robots.txt
(404), half one without `Sitemap:`. `robots_5xx`: RFC 9309 says a 5xx robots.txt means
"assume complete disallow", so the expected outcome is that failure, not the URLs.
`hang`: no TLS handshake either. `none`: no sitemap exists, so a correct harvest finds
no URL; a soft-404 HTML page at a probed location is no sitemap either.

Latency: each responding site waits ``latency`` seconds before every response, drawn per
site from a lognormal with median 60 ms (sigma 0.7, so p90 ~150 ms), at most 2 s; `big` sites
median 100 ms. DNS latency is the resolver's (``benchmarks.realweb.dns``).

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

if TYPE_CHECKING:
    from pathlib import Path

SUFFIX: Final = "realweb.test"
MIX: Final[dict[str, float]] = {
    "small": 51.5,
    "www": 10,
    "big": 0.5,
    "http_only": 5,
    "fallback": 8,
    "soft404": 3,
    "nosite": 3,
    "robots_5xx": 2,
    "robots_hang": 1,
    "hang": 3,
    "refused": 4,
    "dropped": 3,
    "dns_nx": 3,
    "dns_servfail": 1,
    "dns_empty": 2,
}
KINDS: Final = tuple(MIX)
EXPECT: Final[dict[str, str]] = {
    "small": "ok",
    "www": "ok",
    "big": "ok",
    "http_only": "ok",
    "fallback": "ok",
    "soft404": "none",
    "nosite": "none",
    "robots_5xx": "http_status",
    "robots_hang": "timeout",
    "hang": "timeout",
    "refused": "connect",
    "dropped": "timeout",
    "dns_nx": "dns",
    "dns_servfail": "dns",
    "dns_empty": "dns",
}
HEALTHY: Final = frozenset(k for k, v in EXPECT.items() if v == "ok")
# Kinds with the same content as `small` (robots → sitemap) behind a failure
WITH_CONTENT: Final = HEALTHY | {"robots_5xx", "robots_hang"}
DNS_KIND: Final = {"dns_nx": "nxdomain", "dns_servfail": "servfail", "dns_empty": "empty"}
NS_SM: Final = "http://www.sitemaps.org/schemas/sitemap/0.9"
SOFT404: Final = (
    b"<!DOCTYPE html>\n<html><head><title>Page not found</title></head>"
    b"<body><h1>Oops! That page can&rsquo;t be found.</h1>"
    b"<p>It looks like nothing was found at this location.</p></body></html>\n"
)
SECTIONS: Final = ("blog", "news", "products", "docs", "category/shoes", "p", "en/articles")


def address(i: int) -> str:
    """The loopback address of domain ``i`` (never 127.0.x.x: the DNS server is there)."""
    return f"127.{16 + i // 62_500}.{i // 250 % 250}.{i % 250 + 1}"


def domain(i: int) -> str:
    """The name of domain ``i``: ``d00042.realweb.test``."""
    return f"d{i:05d}.{SUFFIX}"


@dataclass(frozen=True, slots=True)
class Page:
    """One response of a site: status, Content-Type, body, Location (redirects)."""

    status: int
    content_type: str = ""
    body: bytes = b""
    location: str = ""


HANG: Final = Page(0)  # never answered


@dataclass(slots=True)
class Site:
    """One domain: its kind, name, address, DNS answer, latency, pages and truth."""

    index: int
    kind: str
    name: str
    address: str
    latency: float
    scheme: str = "https"  # the scheme of the content
    content_host: str = ""  # the host serving the content (www.<name> for `www`)
    pages: dict[str, Page] = field(default_factory=dict)  # path -> page, on content_host
    default: Page | None = None  # a path not in pages (None: 404)
    locs: list[str] = field(default_factory=list)  # the truth (distinct locs)

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


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    return round(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _urlset(locs: list[str], rng: random.Random) -> bytes:
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


def _index(children: list[str]) -> bytes:
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


def _content(site: Site, rng: random.Random) -> None:
    """Fill ``site.pages`` and ``site.locs`` for a kind that serves sitemaps."""
    base = f"{site.scheme}://{site.content_host}"
    pages = site.pages
    if site.kind == "big":
        n = _log_uniform(rng, 10_000, 50_000)
        locs = _locs(base, n, rng)
        children = []
        for c, start in enumerate(range(0, n, 10_000)):
            path = f"/sitemaps/part-{c + 1}.xml.gz"
            body = gzip.compress(_urlset(locs[start : start + 10_000], rng), compresslevel=6)
            pages[path] = Page(200, GZIP, body)
            children.append(base + path)
        pages["/sitemap_index.xml"] = Page(200, XML, _index(children))
        sitemap = "/sitemap_index.xml"
    else:
        n = _log_uniform(rng, 20, 600)
        locs = _locs(base, n, rng)
        if rng.random() < 0.7 or site.kind == "fallback":
            pages["/sitemap.xml"] = Page(200, XML, _urlset(locs, rng))
        else:
            parts = rng.randint(1, 3)
            size = math.ceil(n / parts)
            children = []
            for c in range(parts):
                path = f"/sitemap-{c + 1}.xml"
                pages[path] = Page(200, XML, _urlset(locs[c * size : (c + 1) * size], rng))
                children.append(base + path)
            pages["/sitemap.xml"] = Page(200, XML, _index(children))
        sitemap = "/sitemap.xml"
    robots = "User-agent: *\nDisallow: /admin/\nDisallow: /cart\n"
    if site.kind == "fallback":
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


def build(domains: int, seed: int = 1, *, content: bool = True) -> list[Site]:
    """The web: ``domains`` sites, deterministic in ``(domains, seed)`` (see the docstring).

    ``content=False`` leaves pages and locs empty (kinds, names, addresses and latencies
    are the same): what the DNS server and the namespace set-up need.
    """
    picker = random.Random(seed)
    names, weights = list(MIX), list(MIX.values())
    sites = []
    for i in range(domains):
        kind = KINDS[i] if i < len(KINDS) else picker.choices(names, weights)[0]
        rng = random.Random(f"{seed}:{i}")
        latency = _lognormal(rng, 0.1 if kind == "big" else 0.06, 0.7, 2.0)
        site = Site(i, kind, domain(i), address(i), round(latency, 4))
        site.scheme = "http" if kind == "http_only" else "https"
        site.content_host = f"www.{site.name}" if kind == "www" else site.name
        if not content:
            pass
        elif kind in WITH_CONTENT:
            _content(site, rng)
        elif kind == "soft404":
            site.default = Page(200, HTML, SOFT404)
        sites.append(site)
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
