"""A seeded synthetic web on disk: sites of sitemaps for the loopback benchmarks and the demo.

``generate(profile, out_dir)`` writes::

    out_dir/manifest.json   profile, seed, params, port, and per host: address, origin,
                            role, dead, files (URL path, disk path, kind, bytes, URLs, type)
    out_dir/truth.json      expected URLs per host (count + order-independent digest; the
                            URL list itself for the small profiles), the total, and the
                            expected failures per host by class
    out_dir/seeds.txt       one origin a line (``http://127.1.0.1:8765``), dead hosts included
    out_dir/sites/<address>/<path>   the files, exactly the bytes to serve

Hosts are distinct loopback addresses, host ``i`` at ``127.1.{i // 250}.{i % 250 + 1}`` (no
``.0``/``.255``), all on one port fixed at generation time (``--port``, default 8765): the
URLs inside the documents name that host:port, so ``benchmarks.server`` serves the corpus on
the port in its manifest. The same seed and parameters give the same bytes; a corpus whose
manifest matches (generator version, profile, seed, params) is reused, not rewritten.

Profiles:

* ``many`` (issue 3's bench; issue 8's default): N hosts (default 2,000), each with a
  robots.txt whose ``Sitemap:`` line names an index, the index lists 1-5 children, each a
  urlset of 50-2,000 URLs (log-uniform: mean about 530, so about 3.1 million URLs at 2,000
  hosts), ``<loc>`` 60-120 characters, ``<lastmod>`` on about 90%, about 30% of the children
  gzip files (``.xml.gz``, served as application/gzip, not Content-Encoding).
* ``mixed`` (issue 52): ``many``'s sites (host ``i`` has the same sitemaps, children, gzip
  choices and URLs as host ``i`` of ``many``) with the extensions sites publish, drawn from
  a generator of their own: about 40% of the URLs carry 1-3 ``image:image`` (a caption on
  some), as WordPress and shop sitemaps do; a fifth of the hosts are multilingual, each of
  their URLs with 1-3 ``xhtml:link`` hreflang alternates; a twentieth are news sites whose
  URLs carry ``news:news``. ``--profile many`` beside it at the same ``--hosts`` is the
  plain corpus of the same size (``benchmarks/bench_mix.py``).
* ``demo`` (``make demo``; a few hundred URLs, six hosts): every discovery path and the
  usual failures, see ``_DEMO_ROLES``.
* ``big`` (issue 8): one host, an index of three children of 50,000 URLs each: a "rich"
  one (images and hreflang alternates, about 49.75 MiB uncompressed, under the 50 MiB
  protocol cap) served gzip, a plain one and a gzip one of plain entries.
* ``messy`` (issue 8): N hosts (default 500) of ``many``-like sites with the usual dirt
  (HTML error pages at listed children, 404 children, truncated gzip, a urlset served as
  text/html, empty urlsets, BOMs, no XML declaration, odd lastmods, blank-wrapped and CDATA
  locs, duplicate locs across children, missing robots.txt, CRLF robots.txt, redirects:
  robots.txt moved by a 301, children behind one or two 301/302 hops, a redirect loop);
  see ``_messy_host``. A redirect is a manifest file entry of kind ``redirect`` with
  ``redirect`` (the Location) and ``status``, and no ``file``.
* ``scale`` (issue 8): N hosts (default 20,000) of ``many``'s sites with less content
  each (1-3 children of 20-200 URLs): about 156 URLs a host, 3.1 million URLs at 20,000
  hosts; host ``i`` is the same at any N, so ``--hosts 2000`` is the fair comparison.

The digest of a host's URLs is the sum, modulo 2**64, of the first 8 bytes (big-endian) of
``blake2b(loc)`` over the distinct locs: order-independent, so a harvester's output can be
checked exactly in one streaming pass (``UrlTally``) without holding the URLs.

CLI::

    python -m benchmarks.webgen --profile many --out benchmarks/.corpus/web-many-h2000
    python -m benchmarks.webgen --profile demo --out /tmp/demo --port 8766
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import random
import shutil
import sys
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final
from xml.sax.saxutils import escape

GEN_VERSION: Final = 1  # bump whenever the bytes written change: invalidates cached corpora
DEFAULT_PORT: Final = 8765
PROFILES: Final = ("many", "demo", "big", "messy", "scale", "mixed")
NOT_IMPLEMENTED: Final = frozenset[str]()
DEFAULT_HOSTS: Final = {
    "many": 2_000,
    "demo": 6,
    "big": 1,
    "messy": 500,
    "scale": 20_000,
    "mixed": 2_000,
}
# profiles that take ``hosts``
SIZED_PROFILES: Final = frozenset({"many", "messy", "scale", "mixed"})
CORPUS_ROOT: Final = Path(__file__).resolve().parent / ".corpus"
PROTOCOL_MAX_BYTES: Final = 52_428_800
BIG_RICH_BYTES: Final = round(49.75 * 1024 * 1024)  # "about 50 MiB", under the protocol cap

NS_SM: Final = "http://www.sitemaps.org/schemas/sitemap/0.9"
NS_IMAGE: Final = "http://www.google.com/schemas/sitemap-image/1.1"
NS_XHTML: Final = "http://www.w3.org/1999/xhtml"
NS_NEWS: Final = "http://www.google.com/schemas/sitemap-news/0.9"

CONTENT_TYPES: Final = {
    ".xml": "application/xml",
    ".gz": "application/gzip",
    ".txt": "text/plain",
    ".html": "text/html",
}

_MASK64: Final = (1 << 64) - 1


class ProfileNotImplementedError(NotImplementedError):
    """A profile named by issue 8 that this generator does not implement yet."""


# --------------------------------------------------------------------------- addresses, digests


def host_address(index: int) -> str:
    """The loopback address of host ``index`` (0-based): ``127.1.{i // 250}.{i % 250 + 1}``."""
    if not 0 <= index < 250 * 256:
        raise ValueError(f"host index {index} out of range (at most {250 * 256} hosts)")
    return f"127.1.{index // 250}.{index % 250 + 1}"


def origin(address: str, port: int) -> str:
    """``http://address:port``: the origin a host is harvested at."""
    return f"http://{address}:{port}"


def loc_hash(loc: str) -> int:
    """64-bit hash of one loc (the unit of ``url_digest``)."""
    return int.from_bytes(hashlib.blake2b(loc.encode(), digest_size=8).digest(), "big")


def url_digest(locs: Any) -> str:
    """Order-independent digest of distinct locs: hex of the sum of ``loc_hash`` mod 2**64."""
    total = 0
    for loc in locs:
        total += loc_hash(loc)
    return f"{total & _MASK64:016x}"


@dataclass(slots=True)
class UrlTally:
    """Streaming check of harvested locs against the truth: per host count, digest, distinct.

    ``add(address, loc)`` per output record; ``distinct`` counts distinct locs over all hosts
    (a set of 64-bit hashes: about 60 bytes a URL, so use it after the run, not during).
    """

    per_host: dict[str, list[int]] = field(default_factory=dict)  # address -> [count, sum]
    hashes: set[int] = field(default_factory=set)
    records: int = 0

    def add(self, address: str, loc: str) -> None:
        h = loc_hash(loc)
        self.records += 1
        if h in self.hashes:
            return
        self.hashes.add(h)
        slot = self.per_host.get(address)
        if slot is None:
            self.per_host[address] = [1, h]
        else:
            slot[0] += 1
            slot[1] += h

    @property
    def distinct(self) -> int:
        return len(self.hashes)

    def compare(self, truth: GroundTruth) -> list[str]:
        """Human-readable differences from ``truth`` (empty when the URL sets are equal)."""
        problems: list[str] = []
        for address, expected in truth.urls_per_host.items():
            count, total = self.per_host.get(address, [0, 0])
            if count != expected:
                problems.append(f"{address}: {count} distinct URLs, expected {expected}")
            elif f"{total & _MASK64:016x}" != truth.digests[address]:
                problems.append(f"{address}: {count} URLs but not the expected set (digest)")
        problems.extend(
            f"{address}: {count} URLs from a host with none expected"
            for address, (count, _) in self.per_host.items()
            if address not in truth.urls_per_host
        )
        return problems

    def compare_salvaged(self, truth: GroundTruth) -> list[str]:
        """``compare``; on ``messy`` a host may also have salvaged every complete entry of
        its truncated children (truth.json's ``partial``): accepted, and summed up in a
        last line starting with ``SALVAGED``.
        """
        problems = self.compare(truth)
        if not problems or truth.profile != "messy":
            return problems
        hosts = json.loads((truth.out_dir / "truth.json").read_text())["hosts"]
        kept = []
        salvaged = 0
        for problem in problems:
            address = problem.split(":", 1)[0]
            partial = hosts.get(address, {}).get("partial") or {}
            count, total = self.per_host.get(address, [0, 0])
            want = truth.urls_per_host.get(address, 0) + sum(p["urls"] for p in partial.values())
            digest = int(truth.digests.get(address, "0"), 16)
            digest += sum(int(p["digest"], 16) for p in partial.values())
            if not partial or count != want or (total - digest) % 2**64:
                kept.append(problem)
            else:
                salvaged += count - truth.urls_per_host.get(address, 0)
        if salvaged:
            kept.append(
                f"SALVAGED {salvaged:,} URLs: every complete entry of the truncated gzip children"
                " of their hosts (truth.json 'partial'; accepted)"
            )
        return kept


# --------------------------------------------------------------------------- ground truth


@dataclass(frozen=True, slots=True)
class GroundTruth:
    """What a correct harvest of the corpus finds (loaded from ``truth.json``)."""

    profile: str
    seed: int
    port: int
    out_dir: Path
    total_urls: int
    urls_per_host: dict[str, int]  # address -> distinct URLs expected (0 included)
    digests: dict[str, str]  # address -> url_digest of those URLs
    failures: dict[str, dict[str, list[str | None]]]  # address -> class -> URLs (None: any)
    urls: dict[str, list[str]] | None  # address -> URLs, for the small profiles only
    reused: bool = False

    @property
    def manifest_path(self) -> Path:
        return self.out_dir / "manifest.json"

    @property
    def seeds_path(self) -> Path:
        return self.out_dir / "seeds.txt"

    @property
    def hosts(self) -> int:
        return len(self.urls_per_host)

    @classmethod
    def load(cls, out_dir: Path, *, reused: bool = False) -> GroundTruth:
        data = json.loads((out_dir / "truth.json").read_text())
        return cls(
            profile=data["profile"],
            seed=data["seed"],
            port=data["port"],
            out_dir=out_dir,
            total_urls=data["total_urls"],
            urls_per_host={a: h["urls"] for a, h in data["hosts"].items()},
            digests={a: h["digest"] for a, h in data["hosts"].items()},
            failures={a: h["failures"] for a, h in data["hosts"].items()},
            urls=data.get("urls"),
            reused=reused,
        )


def load_manifest(out_dir: Path) -> dict[str, Any]:
    """The parsed ``manifest.json`` of a generated corpus."""
    manifest: dict[str, Any] = json.loads((out_dir / "manifest.json").read_text())
    return manifest


# --------------------------------------------------------------------------- one host's files


@dataclass(slots=True)
class HostFiles:
    """The files of one host being generated, and its truth."""

    address: str
    port: int
    role: str
    site_dir: Path
    dead: bool = False
    files: list[dict[str, Any]] = field(default_factory=list)
    locs: list[str] = field(default_factory=list)  # every distinct loc expected
    failures: dict[str, list[str | None]] = field(default_factory=dict)

    @property
    def origin(self) -> str:
        return origin(self.address, self.port)

    def url(self, path: str) -> str:
        return self.origin + path

    def write(self, path: str, data: bytes, kind: str, urls: int = 0, **extra: Any) -> None:
        """Write the body served at URL ``path`` (gzip when the path ends in .gz)."""
        gz = path.endswith(".gz")
        body = gzip.compress(data, compresslevel=6, mtime=0) if gz else data
        if len(data) > PROTOCOL_MAX_BYTES or len(body) > PROTOCOL_MAX_BYTES:
            raise ValueError(f"{self.url(path)}: {len(data)} bytes, over the 50 MiB cap")
        disk = self.site_dir / path.lstrip("/")
        disk.parent.mkdir(parents=True, exist_ok=True)
        disk.write_bytes(body)
        entry: dict[str, Any] = {
            "path": path,
            "file": str(disk.relative_to(self.site_dir.parent.parent)),
            "kind": kind,
            "bytes": len(body),
            "bytes_uncompressed": len(data),
            "gzip": gz,
            "urls": urls,
            "content_type": extra.pop("content_type", None) or content_type(path),
        }
        entry.update(extra)
        self.files.append(entry)

    def redirect(self, path: str, target: str, status: int) -> None:
        """Serve ``status`` (301/302) at URL ``path`` with ``Location: target`` (no body)."""
        self.files.append(
            {
                "path": path,
                "kind": "redirect",
                "redirect": target,
                "status": status,
                "bytes": 0,
                "bytes_uncompressed": 0,
                "gzip": False,
                "urls": 0,
                "content_type": None,
            }
        )

    def fail(self, cls: str, url: str | None) -> None:
        self.failures.setdefault(cls, []).append(url)

    def summary(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "origin": self.origin,
            "role": self.role,
            "dead": self.dead,
            "files": self.files,
        }

    def truth(self, *, with_urls: bool) -> dict[str, Any]:
        if len(set(self.locs)) != len(self.locs):
            raise AssertionError(f"{self.address}: generated duplicate locs")
        out: dict[str, Any] = {
            "urls": len(self.locs),
            "digest": url_digest(self.locs),
            "failures": self.failures,
        }
        if with_urls:
            out["url_list"] = sorted(self.locs)
        return out


def content_type(path: str) -> str:
    """The Content-Type served for ``path``, by suffix."""
    return CONTENT_TYPES.get(os.path.splitext(path)[1], "application/octet-stream")


# --------------------------------------------------------------------------- realistic text

_SLUG_TEXT: Final = (
    "organic cotton slim fit stretch denim jeans classic crew neck shirt merino wool "
    "sweater waterproof hiking jacket leather ankle boots running shoes lightweight "
    "breathable mesh trainers linen summer dress floral print midi skirt oversized hoodie "
    "fleece lined joggers recycled puffer vest cashmere scarf knitted beanie stainless "
    "steel water bottle insulated travel mug bamboo cutting board cast iron skillet "
    "ceramic dinner plate glass storage jars wireless headphones bluetooth speaker smart "
    "watch fitness tracker charging cable phone case screen protector ergonomic office "
    "chair standing desk memory foam pillow duvet cover navy black white charcoal olive "
    "sand rust burgundy sage cream grey blue green red small medium large gift set "
    "limited edition new season bestseller handmade vegan sustainable premium everyday "
    "guide review how-to best top news update report recipe travel tips history"
)
_SLUG_WORDS: Final = tuple(_SLUG_TEXT.split())
_SECTIONS: Final = (
    "products",
    "collections",
    "shop",
    "p",
    "blog",
    "news",
    "articles",
    "catalog",
    "store",
    "guides",
)
_CATEGORIES: Final = (
    "womens-clothing",
    "mens-clothing",
    "kids",
    "shoes",
    "accessories",
    "home-kitchen",
    "electronics",
    "outdoor",
    "beauty",
    "sale",
    "new-arrivals",
    "technology",
    "lifestyle",
    "food-drink",
)
_LOCALES: Final = ("", "", "", "en-gb/", "en-us/", "de-de/", "fr-fr/", "es/", "it/", "nl/")
_CHANGEFREQS: Final = ("daily", "weekly", "weekly", "monthly", "monthly", "yearly", "hourly")
_PRIORITIES: Final = ("1.0", "0.9", "0.8", "0.7", "0.6", "0.5", "0.5", "0.4", "0.3")
_OFFSETS: Final = ("Z", "Z", "+00:00", "+01:00", "+02:00", "-04:00", "-05:00", "+05:30")
_INDEX_PATHS: Final = (
    "/sitemap_index.xml",
    "/sitemap.xml",
    "/sitemaps/index.xml",
    "/wp-sitemap.xml",
    "/sitemap-index.xml",
)
_EPOCH: Final = datetime(2022, 1, 1, tzinfo=UTC)


class _Text:
    """Seeded realistic values for one host."""

    def __init__(self, rng: random.Random, host: HostFiles) -> None:
        self.rng = rng
        self.base = host.origin
        self.locale = rng.choice(_LOCALES)
        self.sections = rng.sample(_SECTIONS, rng.randint(1, 3))
        self.categories = rng.sample(_CATEGORIES, rng.randint(2, 6))
        self.next_id = rng.randrange(10_000, 900_000)
        # Site style: some stamp every URL with a time, some a date, some nothing at all.
        self.date_style = rng.choice(("date", "datetime", "datetime", "mixed"))
        self.lastmod_share = rng.choice((1.0, 1.0, 0.95, 0.9, 0.7))
        self.extras = rng.random() < 0.4  # changefreq + priority
        self.pretty = rng.random() < 0.6

    def loc(self) -> str:
        """A unique, already-canonical URL of 60-120 characters (unescaped)."""
        rng = self.rng
        self.next_id += rng.randint(1, 9)
        head = (
            f"{self.base}/{self.locale}{rng.choice(self.sections)}/{rng.choice(self.categories)}/"
        )
        tail = f"-{self.next_id}" + rng.choice((".html", "", "", "/"))
        if rng.random() < 0.12:
            tail += f"?variant={rng.randrange(10**6, 10**9)}"
            if rng.random() < 0.3:
                tail += f"&color={rng.choice(_SLUG_WORDS)}"
        want = rng.randint(60, 120) - len(head) - len(tail)
        words = [rng.choice(_SLUG_WORDS)]
        size = len(words[0])
        while size < want:
            word = rng.choice(_SLUG_WORDS)
            words.append(word)
            size += len(word) + 1
        slug = "-".join(words)
        if size > want:
            cut = slug[:want].rstrip("-")
            slug = cut if len(cut) >= 3 else words[0]
        return head + slug + tail

    def lastmod(self) -> str | None:
        rng = self.rng
        if rng.random() >= self.lastmod_share:
            return None
        when = _EPOCH + timedelta(seconds=rng.randrange(1_000 * 86_400))
        style = self.date_style
        if style == "mixed":
            style = rng.choice(("date", "datetime"))
        if style == "date":
            return when.date().isoformat()
        return when.strftime("%Y-%m-%dT%H:%M:%S") + rng.choice(_OFFSETS)

    def url_entry(self, loc: str) -> str:
        rng = self.rng
        parts = [f"<loc>{escape(loc)}</loc>"]
        lastmod = self.lastmod()
        if lastmod is not None:
            parts.append(f"<lastmod>{lastmod}</lastmod>")
        if self.extras:
            parts.append(f"<changefreq>{rng.choice(_CHANGEFREQS)}</changefreq>")
            parts.append(f"<priority>{rng.choice(_PRIORITIES)}</priority>")
        if self.pretty:
            inner = "".join(f"\n    {p}" for p in parts)
            return f"  <url>{inner}\n  </url>\n"
        return "<url>" + "".join(parts) + "</url>\n"


def urlset(entries: list[str], *, extra_ns: str = "") -> bytes:
    head = f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS_SM}"{extra_ns}>\n'
    return (head + "".join(entries) + "</urlset>\n").encode()


def sitemapindex(children: list[tuple[str, str | None]]) -> bytes:
    parts = [f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{NS_SM}">\n']
    for loc, lastmod in children:
        mod = f"\n    <lastmod>{lastmod}</lastmod>" if lastmod else ""
        parts.append(f"  <sitemap>\n    <loc>{escape(loc)}</loc>{mod}\n  </sitemap>\n")
    parts.append("</sitemapindex>\n")
    return "".join(parts).encode()


def robots_txt(sitemaps: list[str], *, disallow: tuple[str, ...] = ("/cart", "/checkout")) -> bytes:
    lines = ["User-agent: *", *(f"Disallow: {d}" for d in disallow), ""]
    lines.extend(f"Sitemap: {s}" for s in sitemaps)
    return ("\n".join(lines) + "\n").encode()


def rules20_robots_txt(sitemaps: list[str], text: _Text) -> bytes:
    """A robots.txt of 20 rules for ``*`` (18 Disallow, 2 Allow) fitted to ``text``'s URLs.

    Four Disallow rules and one Allow meet this host's URLs (about a sixth of them end up
    disallowed: query variants, one category's ``.html`` pages, slugs with ``-gift-`` or
    ``-new-``); the rest are the usual shop paths no sitemap URL is under. Drawn from
    nothing random, so the host's URLs are the same bytes as without it
    (``generate(..., robots_rules=20)``).
    """
    first = f"/{text.locale}{text.sections[0]}/{text.categories[0]}/"
    disallow = [*_NO_MATCH_DISALLOW, "/*?variant=", f"{first}*.html$", "/*-gift-", "/*-new-"]
    allow = ["/wp-admin/admin-ajax.php", "/*?variant=*&color="]
    lines = ["User-agent: *", *(f"Disallow: {d}" for d in disallow)]
    lines += [*(f"Allow: {a}" for a in allow), ""]
    lines.extend(f"Sitemap: {s}" for s in sitemaps)
    return ("\n".join(lines) + "\n").encode()


_NO_MATCH_DISALLOW: Final = (
    "/cart",
    "/checkout",
    "/account/",
    "/search",
    "/tmp/",
    "/admin/",
    "/api/",
    "/login",
    "/register",
    "/wishlist",
    "/compare",
    "/print/",
    "/*.pdf$",
    "/wp-admin/",
)


def _host_rng(profile: str, seed: int, index: int) -> random.Random:
    return random.Random(f"webgen:{GEN_VERSION}:{profile}:{seed}:{index}")


# --------------------------------------------------------------------------- profile: many

# Per profile: (fewest children, most children, fewest URLs a child, most URLs a child).
_SHAPES: Final = {"many": (1, 5, 50, 2_000), "scale": (1, 3, 20, 200)}


def _many_host(args: tuple[int, int, int, str, int]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Host ``index`` of ``many``; return (manifest entry, truth entry)."""
    return _shaped_host("many", args)


def _scale_host(args: tuple[int, int, int, str, int]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Host ``index`` of ``scale``: ``many``'s site, with 1-3 children of 20-200 URLs."""
    return _shaped_host("scale", args)


def _mixed_host(args: tuple[int, int, int, str, int]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Host ``index`` of ``mixed``: ``many``'s host with image, hreflang and news entries."""
    return _shaped_host("mixed", args)


class _Extras:
    """The extension elements of ``mixed``'s URLs, from a generator apart from the host's."""

    def __init__(self, rng: random.Random, text: _Text) -> None:
        self.rng = rng
        self.text = text
        self.image_share = rng.choice((0.0, 0.2, 0.4, 0.6, 0.8))  # mean 0.4
        self.captions = rng.random() < 0.5
        self.langs = rng.sample(_HREFLANGS, rng.randint(1, 3)) if rng.random() < 0.2 else []
        self.news = rng.random() < 0.05

    def namespaces(self) -> str:
        ns = f'\n        xmlns:image="{NS_IMAGE}"\n        xmlns:xhtml="{NS_XHTML}"'
        return ns + (f'\n        xmlns:news="{NS_NEWS}"' if self.news else "")

    def add(self, entry: str, loc: str) -> str:
        """``entry`` (one ``<url>`` element) with this URL's extension elements."""
        rng, base = self.rng, self.text.base
        path = loc[len(base) :]
        parts: list[str] = []
        for lang in self.langs:
            href = escape(f"{base}/{lang.lower()}{path}")
            parts.append(f'<xhtml:link rel="alternate" hreflang="{lang}" href="{href}"/>')
        if rng.random() < self.image_share:
            slug = path.rsplit("/", 1)[-1].split("?")[0] or "item"
            for number in range(rng.choice((1, 1, 1, 2, 3))):
                caption = ""
                if self.captions:
                    words = " ".join(rng.choice(_SLUG_WORDS) for _ in range(rng.randint(2, 6)))
                    caption = f"<image:caption>{words}</image:caption>"
                parts.append(
                    f"<image:image><image:loc>{base}/img/{slug}-{number}.jpg</image:loc>"
                    f"{caption}</image:image>"
                )
        if self.news:
            day = _EPOCH + timedelta(seconds=rng.randrange(1_000 * 86_400))
            title = " ".join(rng.choice(_SLUG_WORDS) for _ in range(rng.randint(3, 8)))
            parts.append(
                "<news:news><news:publication><news:name>The Daily</news:name>"
                "<news:language>en</news:language></news:publication>"
                f"<news:publication_date>{day.strftime('%Y-%m-%dT%H:%M:%SZ')}"
                f"</news:publication_date><news:title>{title}</news:title></news:news>"
            )
        if not parts:
            return entry
        cut = entry.rindex("</url>")
        return entry[:cut] + "".join(parts) + entry[cut:]


_HREFLANGS: Final = ("en-GB", "de-DE", "fr-FR", "es-ES", "it-IT", "nl-NL", "pl-PL")


def _shaped_host(
    profile: str, args: tuple[int, int, int, str, int]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A ``many``-style host (robots.txt -> index -> children) of ``_SHAPES[profile]``.

    Host ``i`` is the same whatever the number of hosts (its generator is seeded by the
    profile, the seed and ``i``): the first 2,000 hosts of ``scale`` at 20,000 hosts are
    ``scale`` at 2,000 hosts.
    """
    seed, index, port, sites, robots_rules = args
    # mixed: many's host, its extensions drawn apart (the same URLs, files and gzip).
    shape = "many" if profile == "mixed" else profile
    least, most, fewest, most_urls = _SHAPES[shape]
    ln_min, ln_max = math.log(fewest), math.log(most_urls)
    rng = _host_rng(shape, seed, index)
    address = host_address(index)
    host = HostFiles(address, port, profile, Path(sites) / address)
    text = _Text(rng, host)
    extras = _Extras(_host_rng(profile, seed, index), text) if profile == "mixed" else None
    index_path = rng.choice(_INDEX_PATHS)
    sitemaps = [host.url(index_path)]
    robots = rules20_robots_txt(sitemaps, text) if robots_rules else robots_txt(sitemaps)
    host.write("/robots.txt", robots, "robots")
    children: list[tuple[str, str | None]] = []
    for number in range(1, rng.randint(least, most) + 1):
        count = min(most_urls, max(fewest, round(math.exp(rng.uniform(ln_min, ln_max)))))
        gz = rng.random() < 0.3
        path = f"/sitemap-{rng.choice(('posts', 'pages', 'products', 'p'))}-{number}.xml"
        path += ".gz" if gz else ""
        locs = [text.loc() for _ in range(count)]
        host.locs.extend(locs)
        if extras is None:
            body = urlset([text.url_entry(loc) for loc in locs])
        else:
            entries = [extras.add(text.url_entry(loc), loc) for loc in locs]
            body = urlset(entries, extra_ns=extras.namespaces())
        host.write(path, body, "urlset", len(locs))
        children.append((host.url(path), text.lastmod()))
    host.write(index_path, sitemapindex(children), "index")
    return host.summary(), host.truth(with_urls=False)


def _generate_many(
    seed: int,
    hosts: int,
    port: int,
    sites: Path,
    jobs: int,
    profile: str = "many",
    robots_rules: int = 0,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    work = [(seed, i, port, str(sites), robots_rules) for i in range(hosts)]
    one = {"scale": _scale_host, "mixed": _mixed_host}.get(profile, _many_host)
    if jobs > 1 and hosts >= 50:
        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(one, work, chunksize=max(1, hosts // (jobs * 8))))
    else:
        results = [one(w) for w in work]
    manifest_hosts = [m for m, _ in results]
    truth = {m["address"]: t for m, t in results}
    return manifest_hosts, truth


# --------------------------------------------------------------------------- profile: demo

# address index -> role; see the module docstring of scripts/demo.py for the story of each.
_DEMO_ROLES: Final = ("full", "fallback", "text", "loop", "html", "dead")


def _demo_host(seed: int, index: int, role: str, port: int, sites: Path) -> HostFiles:
    rng = _host_rng("demo", seed, index)
    address = host_address(index)
    host = HostFiles(address, port, role, sites / address)
    text = _Text(rng, host)

    def child(path: str, count: int) -> str:
        locs = [text.loc() for _ in range(count)]
        host.locs.extend(locs)
        host.write(path, urlset([text.url_entry(loc) for loc in locs]), "urlset", count)
        return host.url(path)

    if role == "full":  # robots.txt -> index -> gzip child, plain child, 404 child
        host.write("/robots.txt", robots_txt([host.url("/sitemap_index.xml")]), "robots")
        children = [
            child("/sitemap-products.xml.gz", 120),
            child("/sitemap-pages.xml", 60),
            host.url("/sitemap-archive.xml"),  # listed, never written: 404
        ]
        host.fail("http_status", host.url("/sitemap-archive.xml"))
        host.write(
            "/sitemap_index.xml",
            sitemapindex([(c, text.lastmod()) for c in children]),
            "index",
        )
    elif role == "fallback":  # no robots.txt (404): found at /sitemap.xml
        child("/sitemap.xml", 80)
    elif role == "text":  # robots.txt lists a text sitemap
        locs = [text.loc() for _ in range(40)]
        host.locs.extend(locs)
        host.write("/robots.txt", robots_txt([host.url("/sitemap.txt")]), "robots")
        host.write("/sitemap.txt", "".join(f"{loc}\n" for loc in locs).encode(), "text", 40)
    elif role == "loop":  # an index listing itself, a nested index listing it back, shared child
        host.write("/robots.txt", robots_txt([host.url("/sitemap_index.xml")]), "robots")
        shared = child("/sitemap-shared.xml", 50)
        other = child("/sitemap-other.xml", 30)
        top = host.url("/sitemap_index.xml")
        nested = host.url("/sitemap_index_2.xml")
        host.write(
            "/sitemap_index.xml",
            sitemapindex([(top, None), (shared, None), (nested, None), (shared, None)]),
            "index",
        )
        host.write("/sitemap_index_2.xml", sitemapindex([(top, None), (other, None)]), "index")
    elif role == "html":  # robots.txt names a sitemap URL that serves an HTML page
        host.write("/robots.txt", robots_txt([host.url("/sitemap.xml")]), "robots")
        page = (
            "<!DOCTYPE html>\n<html><head><title>Page not found</title></head>\n"
            "<body><h1>Oops</h1><p>We moved things around.</p></body></html>\n"
        )
        host.write("/sitemap.xml", page.encode(), "html", content_type="text/html")
        host.fail("not_a_sitemap", host.url("/sitemap.xml"))
    elif role == "dead":  # nothing listens at this address
        host.dead = True
        host.fail("connect", None)
    else:  # pragma: no cover - the roles are a constant
        raise AssertionError(role)
    return host


def _generate_demo(
    seed: int, port: int, sites: Path
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    made = [_demo_host(seed, i, role, port, sites) for i, role in enumerate(_DEMO_ROLES)]
    return [h.summary() for h in made], {h.address: h.truth(with_urls=True) for h in made}


# --------------------------------------------------------------------------- profile: messy

# Odd but readable lastmod values (the URL still counts; only the lastmod is dubious).
_ODD_LASTMODS: Final = (
    "2024-05-01T10:00:00",  # no offset
    "2024-05-01 10:00:00",  # space, no offset
    "2024-05",  # year-month (W3C datetime allows it)
    "2024",  # year only
    "2024-05-01T10:00:00.123456+02:00",  # fraction
    "2024-05-01T10:00+02:00",  # no seconds (W3C datetime allows it)
    "  2024-05-01  ",  # surrounded by blanks
    "20240501",  # basic ISO format: not W3C
    "01/05/2024",  # not a date format at all
    "not-a-date",
    "",  # empty element
    "2024-13-45",  # out of range
)
_HTML_ERROR: Final = (
    "<!DOCTYPE html>\n<html><head><title>{title}</title></head>\n"
    "<body><h1>{title}</h1><p>Sorry, something went wrong.</p></body></html>\n"
)
# Per child: what happens to it (weights), see _messy_host.
_CHILD_FATES: Final = (
    ("ok", 55),
    ("ok_gz", 15),
    ("html_error", 7),  # 200 text/html error page at a listed child: not_a_sitemap
    ("missing", 7),  # listed, never written: 404
    ("truncated_gz", 6),  # gzip cut short: bad_gzip; a prefix of entries is salvageable
    ("wrong_type", 5),  # a good urlset served as text/html
    ("empty", 5),  # a valid urlset with no <url>
    ("redirect_loop", 2),  # 301 to itself: redirects
)
# Per child that has a body: served at its listed URL (86 %), behind one redirect (10 %:
# 302 or 301 to /moved/<path>) or behind two (4 %: 301 to /old/<path>, then 302 to
# /moved/<path>); Location absolute or relative, both allowed by RFC 9110.
_CHILD_HOPS: Final = ((0, 86), (1, 10), (2, 4))
PROFILE_REVISION: Final = {"messy": 2}  # 2: redirects (part of the corpus identity)


def _messy_entry(text: _Text, loc: str, odd: float) -> str:
    """An entry with, at rate ``odd``, a dirty but readable loc or an odd lastmod."""
    rng = text.rng
    if rng.random() >= odd:
        return text.url_entry(loc)
    how = rng.randrange(4)
    if how == 0:
        loc_xml = f"\n      {escape(loc)}\n    "  # blanks around the URL
    elif how == 1 and "]]>" not in loc:
        loc_xml = f"<![CDATA[{loc}]]>"
    else:
        loc_xml = escape(loc)
    lastmod = rng.choice(_ODD_LASTMODS) if how >= 2 else text.lastmod()
    mod = "" if lastmod is None else f"<lastmod>{lastmod}</lastmod>"
    return f"  <url><loc>{loc_xml}</loc>{mod}</url>\n"


def _messy_urlset(text: _Text, locs: list[str], odd: float, prolog: str) -> bytes:
    body = urlset([_messy_entry(text, loc, odd) for loc in locs])
    if prolog == "bom":
        return b"\xef\xbb\xbf" + body
    if prolog == "nodecl":  # no XML declaration at all (allowed: UTF-8 is the default)
        return body.split(b"\n", 1)[1]
    return body


def _truncate_gzip(data: bytes, rng: random.Random) -> tuple[bytes, int]:
    """``data`` gzipped and cut at 40-80 %; and the number of complete ``</url>`` in it."""
    full = gzip.compress(data, compresslevel=6, mtime=0)
    cut = full[: max(20, int(len(full) * rng.uniform(0.4, 0.8)))]
    prefix = zlib.decompressobj(wbits=31).decompress(cut)
    return cut, prefix.count(b"</url>")


def _messy_host(args: tuple[int, int, int, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Host ``index`` of ``messy``: a ``many``-like site with the usual dirt, and its truth.

    robots.txt (missing on 15 %: the index is then at /sitemap.xml; CRLF, lower-case
    ``sitemap:``, comments and a BOM on some) -> an index of 2-5 children of 20-400 URLs,
    each child's fate drawn from ``_CHILD_FATES``; 30 % of the hosts put odd lastmods,
    blank-wrapped or CDATA locs on 20 % of their entries; some children repeat locs of an
    earlier child (duplicates: the truth counts distinct URLs); a child may start with a BOM
    or have no XML declaration. Redirects: 15 % of the robots.txt are a 301 to another
    path; a child with a body is served behind one (10 %) or two (4 %) 301/302 hops
    (absolute or relative Location, same host); 2 % of the children redirect to
    themselves (``redirects``). Truth: the URLs of the readable children (``urls``,
    ``digest``), the failures by class, and ``partial``: per truncated child the distinct
    new URLs of its complete entries before the cut (what a salvaging reader may add).
    """
    seed, index, port, sites = args
    rng = _host_rng("messy", seed, index)
    address = host_address(index)
    host = HostFiles(address, port, "messy", Path(sites) / address)
    text = _Text(rng, host)
    odd = 0.2 if rng.random() < 0.3 else 0.0
    has_robots = rng.random() >= 0.15
    index_path = rng.choice(_INDEX_PATHS) if has_robots else "/sitemap.xml"
    partial: dict[str, dict[str, Any]] = {}
    children: list[tuple[str, str | None]] = []
    fates, weights = zip(*_CHILD_FATES, strict=True)
    hop_counts, hop_weights = zip(*_CHILD_HOPS, strict=True)
    for number in range(1, rng.randint(2, 5) + 1):
        fate = rng.choices(fates, weights)[0]
        gz = fate in ("ok_gz", "truncated_gz")
        path = f"/sitemap-{rng.choice(('posts', 'pages', 'products'))}-{number}.xml"
        path += ".gz" if gz else ""
        url = host.url(path)
        children.append((url, rng.choice((text.lastmod(), rng.choice(_ODD_LASTMODS)))))
        count = rng.randint(20, 400)
        if fate == "missing":
            host.fail("http_status", url)
            continue
        if fate == "redirect_loop":
            host.redirect(path, rng.choice((url, path)), 301)
            host.fail("redirects", url)
            continue
        hops = rng.choices(hop_counts, hop_weights)[0]
        if hops:
            final = "/moved" + path
            first = "/old" + path if hops == 2 else final
            host.redirect(path, rng.choice((host.url(first), first)), rng.choice((301, 302)))
            if hops == 2:
                host.redirect(first, host.url(final), 302)
            path = final
        if fate == "html_error":
            page = _HTML_ERROR.format(title=rng.choice(("Page not found", "Error 500")))
            host.write(path, page.encode(), "html", content_type="text/html")
            host.fail("not_a_sitemap", url)
            continue
        locs = [text.loc() for _ in range(0 if fate == "empty" else count)]
        dupes = host.locs and fate != "empty" and rng.random() < 0.2
        repeats = host.locs[: rng.randint(1, 30)] if dupes else []
        prolog = rng.choice(("", "", "", "bom", "nodecl"))
        data = _messy_urlset(text, locs + repeats, odd, prolog)
        if fate == "truncated_gz":
            body, complete = _truncate_gzip(data, rng)
            entries = (locs + repeats)[:complete]
            new = [loc for loc in dict.fromkeys(entries) if loc not in set(host.locs)]
            partial[url] = {"urls": len(new), "digest": url_digest(new)}
            host.fail("bad_gzip", url)
            _write_raw(host, path, body, "urlset", len(locs), gzip_flag=True)
            continue
        host.locs.extend(locs)
        extra = {"content_type": "text/html"} if fate == "wrong_type" else {}
        host.write(path, data, "urlset", len(locs), **extra)
    host.write(index_path, sitemapindex(children), "index")
    if has_robots:
        body = robots_txt([host.url(index_path)])
        if rng.random() < 0.3:
            body = body.replace(b"Sitemap:", b"sitemap:").replace(b"\n", b"\r\n")
        if rng.random() < 0.2:
            body = b"\xef\xbb\xbf# robots.txt for a messy site\n" + body
        robots_path = "/robots.txt"
        if rng.random() < 0.15:  # robots.txt moved: 301 to another path on the same host
            robots_path = rng.choice(("/static/robots.txt", "/robots-live.txt"))
            host.redirect("/robots.txt", host.url(robots_path), 301)
        host.write(robots_path, body, "robots")
    truth = host.truth(with_urls=False)
    truth["partial"] = partial  # url -> salvageable prefix (distinct new URLs, digest)
    return host.summary(), truth


def _write_raw(
    host: HostFiles, path: str, body: bytes, kind: str, urls: int, *, gzip_flag: bool
) -> None:
    """Write ``body`` as is (already compressed, or deliberately broken)."""
    disk = host.site_dir / path.lstrip("/")
    disk.parent.mkdir(parents=True, exist_ok=True)
    disk.write_bytes(body)
    host.files.append(
        {
            "path": path,
            "file": str(disk.relative_to(host.site_dir.parent.parent)),
            "kind": kind,
            "bytes": len(body),
            "bytes_uncompressed": len(body),
            "gzip": gzip_flag,
            "urls": urls,
            "content_type": content_type(path),
            "broken": True,
        }
    )


def _generate_messy(
    seed: int, hosts: int, port: int, sites: Path, jobs: int
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    work = [(seed, i, port, str(sites)) for i in range(hosts)]
    if jobs > 1 and hosts >= 50:
        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(_messy_host, work, chunksize=max(1, hosts // (jobs * 8))))
    else:
        results = [_messy_host(w) for w in work]
    return [m for m, _ in results], {m["address"]: t for m, t in results}


# --------------------------------------------------------------------------- profile: big


def _rich_entry(text: _Text, loc: str, budget: int) -> str:
    """A product ``<url>`` with hreflang alternates and images, padded to about ``budget``."""
    rng = text.rng
    path = loc[len(text.base) :]
    page = path[len(text.locale) + 1 :] if text.locale else path[1:]
    parts = [f"  <url>\n    <loc>{escape(loc)}</loc>\n"]
    lastmod = text.lastmod()
    if lastmod:
        parts.append(f"    <lastmod>{lastmod}</lastmod>\n")
    parts.append(f"    <changefreq>{rng.choice(_CHANGEFREQS)}</changefreq>\n")
    parts.append(f"    <priority>{rng.choice(_PRIORITIES)}</priority>\n")
    langs = ("en-GB", "de-DE", "fr-FR", "es-ES", "it-IT", "nl-NL")
    for lang in rng.sample(langs, rng.choice((1, 2, 2, 3))):
        href = escape(f"{text.base}/{lang.lower()}/{page}")
        parts.append(f'    <xhtml:link rel="alternate" hreflang="{lang}" href="{href}"/>\n')
    slug = path.rsplit("/", 1)[-1].split("?")[0] or "item"
    for number in range(rng.choice((1, 1, 1, 2))):
        parts.append(
            f"    <image:image>\n      <image:loc>{text.base}/img/{slug}-{number}.jpg</image:loc>\n"
        )
        if number == 0:
            parts.append("@PAD@")
        parts.append("    </image:image>\n")
    parts.append("  </url>\n")
    body = "".join(parts)
    caption_tags = len("      <image:caption></image:caption>\n")
    room = budget - len(body.encode()) + len("@PAD@") - caption_tags
    words: list[str] = []
    size = -1
    while size < max(12, room):
        word = rng.choice(_SLUG_WORDS)
        words.append(word)
        size += len(word) + 1
    caption = f"      <image:caption>{' '.join(words)}</image:caption>\n"
    return body.replace("@PAD@", caption)


def _generate_big(
    seed: int, port: int, sites: Path
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    rng = _host_rng("big", seed, 0)
    address = host_address(0)
    host = HostFiles(address, port, "big", sites / address)
    text = _Text(rng, host)
    text.lastmod_share = 1.0
    children: list[tuple[str, str | None]] = []

    # 1. rich, about 49.75 MiB uncompressed, gzip on the wire.
    ns = f'\n        xmlns:image="{NS_IMAGE}"\n        xmlns:xhtml="{NS_XHTML}"'
    locs = [text.loc() for _ in range(50_000)]
    head = len(urlset([], extra_ns=ns))
    entries: list[str] = []
    written = head
    for number, loc in enumerate(locs):
        budget = (BIG_RICH_BYTES - written) // (len(locs) - number)
        entry = _rich_entry(text, loc, budget)
        written += len(entry.encode())
        entries.append(entry)
    host.locs.extend(locs)
    path = "/sitemap-products-rich.xml.gz"
    host.write(path, urlset(entries, extra_ns=ns), "urlset", len(locs))
    children.append((host.url(path), text.lastmod()))
    del entries

    # 2. and 3. plain entries: one plain file, one gzip file.
    for path in ("/sitemap-pages.xml", "/sitemap-posts.xml.gz"):
        locs = [text.loc() for _ in range(50_000)]
        host.locs.extend(locs)
        host.write(path, urlset([text.url_entry(loc) for loc in locs]), "urlset", len(locs))
        children.append((host.url(path), text.lastmod()))

    host.write("/sitemap_index.xml", sitemapindex(children), "index")
    host.write("/robots.txt", robots_txt([host.url("/sitemap_index.xml")]), "robots")
    return [host.summary()], {address: host.truth(with_urls=False)}


# --------------------------------------------------------------------------- generate


def default_out_dir(profile: str, hosts: int, seed: int, port: int, robots_rules: int = 0) -> Path:
    """Where the benchmarks keep a profile's corpus (``benchmarks/.corpus``, git-ignored)."""
    rules = f"-r{robots_rules}" if robots_rules else ""
    return CORPUS_ROOT / f"web-{profile}-h{hosts}-s{seed}-p{port}{rules}"


_SHAPED_PROFILES: Final = ("many", "scale", "mixed")


def generate(
    profile: str,
    out_dir: Path,
    *,
    seed: int = 1,
    hosts: int | None = None,
    port: int = DEFAULT_PORT,
    force: bool = False,
    jobs: int | None = None,
    robots_rules: int = 0,
) -> GroundTruth:
    """Write (or reuse) the ``profile`` corpus in ``out_dir``; return its ground truth.

    ``hosts`` applies to ``many``, ``messy`` and ``scale`` (defaults 2,000, 500, 20,000);
    ``jobs`` is the number of generator processes (default: the CPU count);
    ``robots_rules`` 20 (``many``, ``scale``, ``mixed``): every host's robots.txt holds 20
    rules for ``*`` (``rules20_robots_txt``; the sitemaps are the same bytes). Raises
    ``ProfileNotImplementedError`` for a profile in ``NOT_IMPLEMENTED`` (none now),
    ``ValueError`` for an unknown profile or bad parameters.
    """
    if profile in NOT_IMPLEMENTED:
        raise ProfileNotImplementedError(f"profile {profile!r} is not implemented yet (issue 8)")
    if profile not in DEFAULT_HOSTS:
        raise ValueError(f"unknown profile {profile!r}; choose from {', '.join(PROFILES)}")
    if hosts is None or profile not in SIZED_PROFILES:
        if hosts not in (None, DEFAULT_HOSTS[profile]):
            raise ValueError(f"profile {profile!r} has {DEFAULT_HOSTS[profile]} hosts, not {hosts}")
        hosts = DEFAULT_HOSTS[profile]
    if not 1 <= hosts <= 250 * 256:
        raise ValueError(f"hosts must be in 1..{250 * 256}, not {hosts}")
    if not 1 <= port <= 65535:
        raise ValueError(f"bad port {port}")
    out_dir = Path(out_dir)
    params: dict[str, Any] = {"hosts": hosts, "port": port}
    if profile in PROFILE_REVISION:
        params["revision"] = PROFILE_REVISION[profile]
    if robots_rules not in (0, 20) or (robots_rules and profile not in _SHAPED_PROFILES):
        raise ValueError(f"robots_rules must be 0 or 20 (many, scale, mixed), not {robots_rules}")
    if robots_rules:  # only then in the identity: the corpora written before stay reusable
        params["robots_rules"] = robots_rules
    identity = {"version": GEN_VERSION, "profile": profile, "seed": seed, "params": params}
    if not force and _reusable(out_dir, identity):
        return GroundTruth.load(out_dir, reused=True)

    started = time.perf_counter()
    sites = out_dir / "sites"
    marker = out_dir / ".webgen"
    if sites.exists():
        if not (marker.exists() or (out_dir / "manifest.json").exists()):
            raise SystemExit(f"{sites} exists and was not written by webgen: not touching it")
        shutil.rmtree(sites)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("manifest.json", "truth.json", "seeds.txt"):
        (out_dir / name).unlink(missing_ok=True)
    marker.write_text("generation in progress or interrupted; safe to delete this directory\n")
    sites.mkdir()
    if profile in _SHAPED_PROFILES:
        manifest_hosts, truth_hosts = _generate_many(
            seed, hosts, port, sites, jobs or os.cpu_count() or 1, profile, robots_rules
        )
    elif profile == "messy":
        manifest_hosts, truth_hosts = _generate_messy(
            seed, hosts, port, sites, jobs or os.cpu_count() or 1
        )
    elif profile == "demo":
        manifest_hosts, truth_hosts = _generate_demo(seed, port, sites)
    else:
        manifest_hosts, truth_hosts = _generate_big(seed, port, sites)

    url_lists = {a: t.pop("url_list") for a, t in truth_hosts.items() if "url_list" in t}
    total_urls = sum(t["urls"] for t in truth_hosts.values())
    files = [f for h in manifest_hosts for f in h["files"]]
    seconds = time.perf_counter() - started
    truth: dict[str, Any] = {
        "profile": profile,
        "seed": seed,
        "port": port,
        "total_urls": total_urls,
        "hosts": truth_hosts,
    }
    if url_lists:
        truth["urls"] = url_lists
    manifest = {
        **identity,
        "port": port,
        "total_urls": total_urls,
        "total_files": len(files),
        "total_bytes": sum(f["bytes"] for f in files),
        "total_bytes_uncompressed": sum(f["bytes_uncompressed"] for f in files),
        "generated_seconds": round(seconds, 2),
        "hosts": manifest_hosts,
    }
    (out_dir / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    write_seeds(out_dir, manifest)
    # The manifest goes last: its presence (with matching params) means the corpus is complete.
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    marker.unlink()
    return GroundTruth.load(out_dir)


def write_seeds(out_dir: Path, manifest: dict[str, Any]) -> Path:
    """Write ``out_dir/seeds.txt``: every host's origin, one a line (dead hosts included)."""
    path = out_dir / "seeds.txt"
    text = "".join(f"{h['origin']}\n" for h in manifest["hosts"])
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def _reusable(out_dir: Path, identity: dict[str, Any]) -> bool:
    """True when ``out_dir`` holds a complete corpus with this identity (files spot-checked)."""
    try:
        manifest = load_manifest(out_dir)
        if (out_dir / ".webgen").exists() or not (out_dir / "truth.json").exists():
            return False
        if any(manifest.get(k) != v for k, v in identity.items()):
            return False
        return all(
            (out_dir / f["file"]).stat().st_size == f["bytes"]
            for h in manifest["hosts"]
            for f in h["files"]
            if "file" in f  # redirects have no file
        )
    except (OSError, ValueError, KeyError):
        return False


def describe(truth: GroundTruth) -> str:
    """One line: the corpus's size, for humans."""
    manifest = load_manifest(truth.out_dir)
    files = manifest["total_files"]
    gz = sum(f["gzip"] for h in manifest["hosts"] for f in h["files"])
    return (
        f"{truth.profile}: {truth.hosts} hosts, {files} files ({gz} gzip),"
        f" {truth.total_urls:,} URLs, {manifest['total_bytes'] / 1e6:.1f} MB on disk"
        f" ({manifest['total_bytes_uncompressed'] / 1e6:.1f} MB uncompressed),"
        f" port {truth.port}, in {truth.out_dir}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.webgen",
        description="Generate (or reuse) a seeded synthetic web of sitemaps on disk.",
    )
    ap.add_argument("--profile", choices=PROFILES, default="many")
    ap.add_argument("--out", type=Path, help="corpus directory (default: benchmarks/.corpus/...)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--hosts", type=int, help="number of hosts (many: 2,000, messy: 500, scale: 20,000)"
    )
    ap.add_argument("--port", type=int, default=DEFAULT_PORT, help="port the URLs name")
    ap.add_argument("--jobs", type=int, help="generator processes (default: CPU count)")
    ap.add_argument("--force", action="store_true", help="regenerate even if a match exists")
    ap.add_argument(
        "--robots-rules",
        type=int,
        choices=(0, 20),
        default=0,
        help="20: every host's robots.txt holds 20 rules for * (many, scale, mixed)",
    )
    args = ap.parse_args(argv)
    hosts = args.hosts if args.hosts is not None else DEFAULT_HOSTS.get(args.profile, 0)
    out = args.out or default_out_dir(args.profile, hosts, args.seed, args.port, args.robots_rules)
    started = time.perf_counter()
    try:
        truth = generate(
            args.profile,
            out,
            seed=args.seed,
            hosts=args.hosts,
            port=args.port,
            force=args.force,
            jobs=args.jobs,
            robots_rules=args.robots_rules,
        )
    except (ProfileNotImplementedError, ValueError) as exc:
        print(f"webgen: {exc}", file=sys.stderr)
        return 2
    verb = "reused" if truth.reused else "generated"
    print(f"# {verb} in {time.perf_counter() - started:.1f} s: {describe(truth)}", file=sys.stderr)
    print(f"total URLs: {truth.total_urls}")
    print(f"seeds: {truth.seeds_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
