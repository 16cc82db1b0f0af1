"""The realweb over time (issue 53): generation g of the web, its validators, and its truth.

In: the web of ``web.build(domains, seed, mix)`` (generation 0) and a generation number.
Out: ``evolve(sites, seed, g)`` puts generation ``g`` into the sites' pages (each
generation mutates a seeded 5 % of the sitemaps of the previous one), with ``ETag`` and
``Last-Modified`` on the sitemaps of the sites that send validators; ``listing(site)``
(loc -> lastmod of everything the site lists) and ``delta(before, after)`` (the exact
delta a correct tool reports between two generations). Pure and deterministic: the HTTP
server rebuilds generation g in its own process, the runner computes the truth.

A site's sitemaps as data (``Sitemaps``): its urlsets (path -> entries), its indexes
(path -> child paths), its redirects (path -> path) and the generation in which each
file last changed (its ``Last-Modified``). Generation g draws, with
``random.Random(f"cron:{seed}:{g}")``, ``SHARE`` of the urlsets of the healthy sites
(sorted, so the draw is the same everywhere) and mutates each one way (``OPS``):

| op | what | the truth |
| --- | --- | --- |
| `add` | 5 % more URLs (at least 1), dated on a dated urlset | `new` |
| `remove` | 5 % of its URLs gone (at least 1; the file keeps 1) | `removed` |
| `lastmod` | 10 % of its URLs get a later lastmod (honest hosts only: else `add`) | `changed` |
| `redirect` | the file moves to ``/moved/g<g><path>``; its old path: a 301 there | nothing: moved |
| `resplit` | half its URLs move to another urlset of the host (else `add`) | nothing: moved |

An honest host is one whose every urlset gives a lastmod in generation 0: the only
hosts whose lastmod moves, and the only ones whose `changed` a correct tool can report
(issue 53: `changed` only where lastmod is trusted; a moved URL is unchanged, neither
removed nor new). Validators per site (``random.Random(f"validators:{seed}:{i}")``): ETag
and Last-Modified 55 %, ETag only 15 %, Last-Modified only 15 %, none 15 %.
"""

from __future__ import annotations

import gzip
import hashlib
import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from typing import Final

from benchmarks.realweb.web import GZIP, NS_SM, XML, Page, Site, gz, index

SHARE: Final = 0.05  # of the urlsets, mutated per generation
OPS: Final = (("add", 30), ("remove", 20), ("lastmod", 20), ("redirect", 15), ("resplit", 15))
VALIDATORS: Final = (("both", 55), ("etag", 15), ("last_modified", 15), ("none", 15))
BASE: Final = datetime(2025, 12, 1, tzinfo=UTC)  # Last-Modified of generation 0's files
BASE_HTTP: Final = format_datetime(BASE, usegmt=True)
_URL = re.compile(rb"<url><loc>([^<]*)</loc>(?:<lastmod>([^<]*)</lastmod>)?</url>")
_CHILD = re.compile(rb"<sitemap><loc>([^<]*)</loc>")

Entry = tuple[str, str | None]  # (loc, lastmod)


def gen_date(g: int) -> str:
    """The lastmod given in generation ``g`` (after every lastmod of generation 0)."""
    return (datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=7 * g)).strftime("%Y-%m-%d")


@dataclass(slots=True)
class Sitemaps:
    """One site's sitemaps as data (see the module docstring)."""

    base: str  # scheme://content_host
    urlsets: dict[str, list[Entry]] = field(default_factory=dict)
    dated: dict[str, bool] = field(default_factory=dict)
    indexes: dict[str, list[str]] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    changed_at: dict[str, int] = field(default_factory=dict)

    @property
    def honest(self) -> bool:
        """Every urlset gives a lastmod."""
        return all(self.dated.values())


def parse(site: Site) -> Sitemaps:
    """The sitemaps of a site of generation 0 (``web.py``'s own bytes: a regex reads them)."""
    maps = Sitemaps(f"{site.scheme}://{site.content_host}")
    for path, page in sorted(site.pages.items()):
        if page.content_type not in (XML, GZIP):
            continue
        body = gzip.decompress(page.body) if page.content_type == GZIP else page.body
        if b"<sitemapindex" in body[:200]:
            children = [m.decode().removeprefix(maps.base) for m in _CHILD.findall(body)]
            maps.indexes[path] = children
        else:
            entries = [(m[0].decode(), m[1].decode() or None) for m in _URL.findall(body)]
            maps.urlsets[path] = entries
            maps.dated[path] = any(lastmod for _, lastmod in entries)
        maps.changed_at[path] = 0
    return maps


def urlset(entries: list[Entry]) -> bytes:
    """A urlset of ``entries`` in ``web.urlset``'s layout."""
    parts = [f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS_SM}">\n']
    for loc, lastmod in entries:
        date = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
        parts.append(f"<url><loc>{loc}</loc>{date}</url>\n")
    parts.append("</urlset>\n")
    return "".join(parts).encode()


def _validators(kind: str, body: bytes, changed_at: int) -> tuple[tuple[str, str], ...]:
    out = []
    if kind in ("both", "etag"):
        out.append(("ETag", f'"{hashlib.blake2b(body, digest_size=8).hexdigest()}"'))
    if kind in ("both", "last_modified"):
        when = BASE + timedelta(days=changed_at)
        out.append(("Last-Modified", format_datetime(when, usegmt=True)))
    return tuple(out)


def render(site: Site, maps: Sitemaps, validators: str) -> None:
    """Replace ``site``'s sitemap pages by ``maps`` (robots.txt and the rest are kept)."""
    pages = {p: v for p, v in site.pages.items() if v.content_type not in (XML, GZIP)}
    for path, entries in maps.urlsets.items():
        body = urlset(entries)
        kind = GZIP if path.endswith(".gz") else XML
        head = _validators(validators, body, maps.changed_at[path])
        pages[path] = Page(200, kind, gz(body) if kind == GZIP else body, headers=head)
    for path, children in maps.indexes.items():
        body = index([maps.base + c for c in children])
        pages[path] = Page(200, XML, body, headers=_validators(validators, body, 0))
    for path, target in maps.redirects.items():
        pages[path] = Page(301, location=maps.base + target)
    site.pages = pages


def _op(rng: random.Random, maps: Sitemaps, path: str) -> str:
    op = rng.choices([n for n, _ in OPS], [w for _, w in OPS])[0]
    if op == "lastmod" and not maps.honest:
        return "add"
    if op == "remove" and len(maps.urlsets[path]) < 2:
        return "add"
    if op == "resplit" and len(maps.urlsets) < 2:
        return "add"
    return op


def mutate(rng: random.Random, maps: Sitemaps, path: str, g: int) -> str:
    """Mutate the urlset at ``path`` one way (``OPS``); returns the op."""
    op = _op(rng, maps, path)
    entries = maps.urlsets[path]
    n = max(1, len(entries) // 20)
    if op == "add":
        date = gen_date(g) if maps.dated[path] else None
        slug = path.strip("/").replace("/", "-").replace(".", "-")
        entries += [(f"{maps.base}/added/g{g}-{slug}-{k}", date) for k in range(n)]
    elif op == "remove":
        for k in sorted(rng.sample(range(len(entries)), min(n, len(entries) - 1)), reverse=True):
            del entries[k]
    elif op == "lastmod":
        for k in rng.sample(range(len(entries)), max(1, len(entries) // 10)):
            entries[k] = (entries[k][0], gen_date(g))
    elif op == "redirect":
        moved = f"/moved/g{g}{path}"
        maps.urlsets[moved] = maps.urlsets.pop(path)
        maps.dated[moved] = maps.dated.pop(path)
        for old, target in maps.redirects.items():  # one hop, not a chain
            if target == path:
                maps.redirects[old] = moved
        maps.redirects[path] = moved
        path = moved
    else:  # resplit: half of its URLs now listed by a sibling
        other = rng.choice(sorted(p for p in maps.urlsets if p != path))
        half = len(entries) // 2
        maps.urlsets[other] += [
            (loc, lastmod if maps.dated[other] else None) for loc, lastmod in entries[:half]
        ]
        del entries[:half]
        maps.changed_at[other] = g
    maps.changed_at[path] = g
    return op


def validators_of(site: Site, seed: int) -> str:
    """Which validators ``site`` sends with its sitemaps (``VALIDATORS``)."""
    rng = random.Random(f"validators:{seed}:{site.index}")
    return rng.choices([n for n, _ in VALIDATORS], [w for _, w in VALIDATORS])[0]


def evolve(
    sites: list[Site], seed: int, generation: int
) -> tuple[dict[str, Sitemaps], dict[str, int]]:
    """Put ``generation`` of the web into ``sites`` (generation 0 gets its validators).

    Returns each healthy site's ``Sitemaps`` by name, and the ops of the last
    generation by name (what changed since the one before).
    """
    maps = {s.name: parse(s) for s in sites if s.expect == "ok" and s.pages}
    ops: dict[str, int] = {}
    for g in range(1, generation + 1):
        ops = step(maps, seed, g)
    for site in sites:
        if site.name in maps:
            render(site, maps[site.name], validators_of(site, seed))
    return maps, ops


def listing(maps: Sitemaps) -> dict[str, str | None]:
    """loc -> lastmod of every URL the site lists (its urlsets are all reachable)."""
    out: dict[str, str | None] = {}
    for entries in maps.urlsets.values():
        for loc, lastmod in entries:
            out[loc] = lastmod
    return out


Snapshot = dict[str, tuple[bool, dict[str, str | None]]]  # name -> (honest, listing)


def step(maps: dict[str, Sitemaps], seed: int, g: int) -> dict[str, int]:
    """Generation ``g - 1`` -> ``g``, in place: mutate ``SHARE`` of the urlsets; the ops."""
    rng = random.Random(f"cron:{seed}:{g}")
    files = sorted((name, path) for name, m in maps.items() for path in m.urlsets)
    ops: dict[str, int] = {}
    for name, path in rng.sample(files, round(SHARE * len(files))):
        op = mutate(rng, maps[name], path, g)
        ops[op] = ops.get(op, 0) + 1
    return ops


def snapshots(
    sites: list[Site], seed: int, last: int
) -> tuple[list[Snapshot], list[dict[str, int]]]:
    """What the web lists in generations 0..``last``, and each generation's ops."""
    maps = {s.name: parse(s) for s in sites if s.expect == "ok" and s.pages}
    out, ops = [], []
    for g in range(last + 1):
        ops.append(step(maps, seed, g) if g else {})
        out.append({name: (m.honest, listing(m)) for name, m in maps.items()})
    return out, ops


@dataclass(frozen=True, slots=True)
class Delta:
    """What a correct tool reports between two generations (sets of locs)."""

    new: frozenset[str]
    changed: frozenset[str]
    removed: frozenset[str]

    def events(self) -> dict[str, frozenset[str]]:
        """Event name -> locs."""
        return {"new": self.new, "changed": self.changed, "removed": self.removed}


def delta(before: Snapshot | None, after: Snapshot) -> Delta:
    """The delta from ``before`` (None: a first run, every URL new) to ``after``."""
    new: set[str] = set()
    changed: set[str] = set()
    removed: set[str] = set()
    for name, (honest, now) in after.items():
        was = before[name][1] if before is not None and name in before else {}
        new.update(loc for loc in now if loc not in was)
        removed.update(loc for loc in was if loc not in now)
        if honest:
            changed.update(
                loc
                for loc, lastmod in now.items()
                if loc in was and lastmod and (was[loc] or "") < lastmod
            )
    return Delta(frozenset(new), frozenset(changed), frozenset(removed))


def not_modified(page: Page, if_none_match: str, if_modified_since: str) -> bool:
    """Whether a conditional GET of ``page`` gets a 304 (RFC 9110 13.2.2: If-None-Match
    decides when sent, else If-Modified-Since against the page's Last-Modified)."""
    head = dict(page.headers)
    if page.status != 200 or not (if_none_match or if_modified_since):
        return False
    if if_none_match:
        etag = head.get("ETag")
        tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
        return etag is not None and (etag in tags or "*" in tags)
    modified = head.get("Last-Modified")
    if modified is None:
        return False
    try:
        return parsedate_to_datetime(modified) <= parsedate_to_datetime(if_modified_since)
    except (TypeError, ValueError):  # a date we cannot read: send the page
        return False
