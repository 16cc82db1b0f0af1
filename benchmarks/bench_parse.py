"""Parse-throughput benchmark: our ``SitemapReader`` against the raw lxml + zlib limit.

Makes (seeded, cached in ``benchmarks/.corpus/``) a 50,000-URL urlset of about
50 MiB uncompressed (every ``<url>`` with lastmod, changefreq, priority, 1-3
``image:image`` and 2-4 ``xhtml:link`` alternates, about 1 KB each) plus its
``.gz``, and a 5,000-URL one of about 5 MiB, then measures on the same bytes:

* ``raw``: the limit. Streaming ``zlib.decompressobj(wbits=47)`` of 64 KiB file
  chunks into ``lxml.etree.XMLPullParser(events=("end",), tag="{sm}url")``; per
  url element the text of ``loc`` and ``lastmod`` is extracted and dropped,
  only a count is kept; then the element is cleared and its finished siblings
  deleted (flat memory).
* ``ours``: ``SitemapReader`` fed the same 64 KiB chunks (gzip is detected by
  the reader), counting entries; the count and ``result().status == "ok"``
  are checked.

Every measurement runs in a fresh subprocess so its peak RSS is its own
(Linux ``VmHWM``; ``ru_maxrss`` is inherited from the parent, see ``_rss_kib``);
it reports the RSS baseline after imports and before reading, the peak, and
the growth (peak - baseline). Timing is the best of ``--repeat``
runs; the growth is the worst of them. MB = 10**6 bytes everywhere; MB/s
counts uncompressed bytes.

Targets (the issue): ours/raw in URLs/s >= 0.7; peak RSS growth on the 50 MiB
file < 30 MB and within 10 MB of the 5 MiB file's.

Usage::

    python -m benchmarks.bench_parse              # all files, best of 3
    python -m benchmarks.bench_parse --repeat 5 --files 50gz
    python -m benchmarks.bench_parse --profile    # cProfile of ours, top 25 by tottime
    python benchmarks/bench_parse.py --check      # exit 1 if a target is missed
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import json
import os
import random
import resource
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parent.parent
CORPUS_DIR: Final = Path(__file__).resolve().parent / ".corpus"
if __package__ in (None, ""):  # run as a script: make ``harvester`` importable from the checkout
    sys.path.insert(0, str(ROOT))

CHUNK: Final = 64 * 1024  # file read size, both modes
GEN_VERSION: Final = 1  # bump when the generator's output changes: invalidates cached corpora
PROTOCOL_MAX_BYTES: Final = 52_428_800  # the reader's default cap: the corpus must stay below

NS_SM: Final = "http://www.sitemaps.org/schemas/sitemap/0.9"
NS_IMAGE: Final = "http://www.google.com/schemas/sitemap-image/1.1"
NS_XHTML: Final = "http://www.w3.org/1999/xhtml"
URL_TAG: Final = f"{{{NS_SM}}}url"
LOC_TAG: Final = f"{{{NS_SM}}}loc"
LASTMOD_TAG: Final = f"{{{NS_SM}}}lastmod"
BENCH_URL: Final = "https://www.example-shop.com/sitemap_products_1.xml.gz"


# --------------------------------------------------------------------------- corpus


@dataclass(frozen=True, slots=True)
class CorpusSpec:
    """One generated sitemap: ``urls`` entries, ``target_bytes`` uncompressed."""

    key: str  # short name used on the command line and in the output
    label: str  # human name in the table
    urls: int
    target_bytes: int
    gz: bool  # which of the two written files is measured


# 49.75 MiB: "about 50 MiB" yet under the 50 MiB protocol limit the reader enforces by default.
BYTES_PER_URL: Final = round(49.75 * 1024 * 1024 / 50_000)
SPECS: Final = (
    CorpusSpec("50gz", "50 MiB .xml.gz", 50_000, 50_000 * BYTES_PER_URL, gz=True),
    CorpusSpec("50xml", "50 MiB .xml", 50_000, 50_000 * BYTES_PER_URL, gz=False),
    CorpusSpec("5gz", "5 MiB .xml.gz", 5_000, 5_000 * BYTES_PER_URL, gz=True),
)

_WORD_TEXT: Final = (
    "organic cotton slim fit stretch denim jeans classic crew neck t-shirt merino "
    "wool sweater waterproof hiking jacket leather ankle boots running shoes "
    "lightweight breathable mesh trainers linen summer dress floral print midi "
    "skirt oversized hoodie fleece lined joggers recycled polyester puffer vest "
    "cashmere scarf knitted beanie stainless steel water bottle insulated travel "
    "mug bamboo cutting board cast iron skillet non-stick frying pan ceramic dinner "
    "plate set glass storage jars wireless noise cancelling headphones bluetooth "
    "speaker smart watch fitness tracker usb-c charging cable fast charger phone "
    "case tempered glass screen protector ergonomic office chair standing desk "
    "memory foam pillow duvet cover king size queen single double navy black white "
    "charcoal olive sand rust burgundy sage cream grey blue green red pink yellow "
    "small medium large extra pack of two three gift set limited edition new season "
    "bestseller sale handmade vegan sustainable premium everyday essential men "
    "women kids unisex Größe Übergröße café crème naïve façade piñata déjà"
)
_WORDS: Final = tuple(_WORD_TEXT.split())
_SLUG_WORDS: Final = _WORDS[:-8]  # ASCII only
_SECTIONS: Final = ("products", "collections", "shop", "p", "catalog", "store")
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
)
_LOCALES: Final = (
    ("en-gb", "en-GB"),
    ("en-us", "en-US"),
    ("de-de", "de-DE"),
    ("fr-fr", "fr-FR"),
    ("es-es", "es-ES"),
    ("it-it", "it-IT"),
    ("nl-nl", "nl-NL"),
    ("sv-se", "sv-SE"),
)
_QUERY_KEYS: Final = ("variant", "color", "size", "ref", "sku", "utm_source", "lang", "page")
_CHANGEFREQS: Final = (
    ("always", 1),
    ("hourly", 4),
    ("daily", 30),
    ("weekly", 40),
    ("monthly", 20),
    ("yearly", 5),
)
_PRIORITIES: Final = ("1.0", "0.9", "0.8", "0.8", "0.7", "0.6", "0.5", "0.5", "0.4", "0.3")
_OFFSETS: Final = ("+00:00", "+01:00", "+02:00", "-04:00", "-05:00", "-07:00", "+05:30", "+09:00")


class _Generator:
    """Seeded generator of one realistic product urlset (images + hreflang alternates)."""

    def __init__(self, seed: int, urls: int, target_bytes: int) -> None:
        self.rng = random.Random(seed * 1_000_003 + urls)
        self.urls = urls
        self.target_bytes = target_bytes
        rng = self.rng
        self.shop = rng.randrange(10_000, 99_999)
        start = datetime(2023, 1, 1, tzinfo=UTC)
        self.start = start
        # Realistic repetition: sites stamp many URLs with the same day or the same
        # batch-publish instant; the rest carry a per-page "updated at".
        self.days = [
            (start + timedelta(days=rng.randrange(900))).date().isoformat() for _ in range(600)
        ]
        self.batch = [self._instant() for _ in range(1_500)]
        freq_names, freq_weights = zip(*_CHANGEFREQS, strict=True)
        self.freqs = rng.choices(freq_names, freq_weights, k=4096)
        self.bases = 0  # bytes of the entries before padding, to size the padding

    def _instant(self) -> str:
        """One full W3C datetime: seconds, sometimes a fraction, Z or an offset."""
        rng = self.rng
        when = self.start + timedelta(seconds=rng.randrange(900 * 86_400))
        text = when.strftime("%Y-%m-%dT%H:%M:%S")
        r = rng.random()
        if r < 0.15:
            text += f".{rng.randrange(1_000_000):06d}"
        elif r < 0.25:
            text += f".{rng.randrange(1_000):03d}"
        return text + ("Z" if rng.random() < 0.3 else rng.choice(_OFFSETS))

    def _lastmod(self) -> str:
        r = self.rng.random()
        if r < 0.30:
            return self.rng.choice(self.days)
        if r < 0.65:
            return self.rng.choice(self.batch)
        return self._instant()

    def _text(self, min_bytes: int) -> str:
        """Words (XML-escaped, sometimes with an ``&amp;``) of at least ``min_bytes`` bytes."""
        rng = self.rng
        words: list[str] = []
        size = -1
        while size < min_bytes:
            word = "&amp;" if rng.random() < 0.04 else rng.choice(_WORDS)
            if not words:
                word = word.capitalize()
            words.append(word)
            size += 1 + len(word.encode())
        return " ".join(words)

    def _entry(self, index: int, budget: float, last: bool) -> str:
        """One ``<url>``; its first image caption pads it towards ``budget`` bytes on average."""
        rng = self.rng
        (locale, _), *_ = others = rng.sample(_LOCALES, rng.choice((3, 3, 3, 3, 3, 4, 4, 4, 5, 5)))
        section = rng.choice(_SECTIONS)
        category = rng.choice(_CATEGORIES)
        ident = 100_000 + index * 7 + rng.randrange(7)
        query = ""
        if rng.random() < 0.35:
            keys = rng.sample(_QUERY_KEYS, rng.randint(1, 3))
            query = "?" + "&amp;".join(
                f"{k}={rng.randrange(10 ** rng.randint(1, 8))}" for k in keys
            )
        want = rng.randint(80, 120)
        host = "https://www.example-shop.com"
        words: list[str] = []
        while True:
            slug = "-".join(words)
            loc = f"{host}/{locale}/{section}/{category}/{slug}-{ident}.html{query}"
            if len(loc) >= want or len(words) > 14:
                break
            words.append(rng.choice(_SLUG_WORDS).lower())
        page = f"{section}/{category}/{slug}-{ident}.html"
        cdn = f"https://cdn.example-shop.com/files/{self.shop}"
        parts = [
            "\t<url>\n",
            f"\t\t<loc>{loc}</loc>\n",
            f"\t\t<lastmod>{self._lastmod()}</lastmod>\n",
            f"\t\t<changefreq>{rng.choice(self.freqs)}</changefreq>\n",
            f"\t\t<priority>{rng.choice(_PRIORITIES)}</priority>\n",
        ]
        parts.extend(
            f'\t\t<xhtml:link rel="alternate" hreflang="{lang}" href="{host}/{path}/{page}"/>\n'
            for path, lang in others[1:]
        )
        pad_at = -1
        for number in range(rng.choice((1, 1, 1, 2, 2, 3))):
            version = rng.randrange(1_600_000_000, 1_750_000_000)
            parts.append("\t\t<image:image>\n")
            parts.append(
                f"\t\t\t<image:loc>{cdn}/{slug}-{number + 1}.jpg?v={version}</image:loc>\n"
            )
            if number == 0:  # the first image always has a caption: it carries the padding
                parts.append("")
                pad_at = len(parts) - 1
            elif rng.random() < 0.4:
                parts.append(
                    f"\t\t\t<image:caption>{self._text(rng.randint(20, 70))}</image:caption>\n"
                )
            if rng.random() < 0.35:
                parts.append(
                    f"\t\t\t<image:title>{self._text(rng.randint(15, 60))}</image:title>\n"
                )
            parts.append("\t\t</image:image>\n")
        parts.append("\t</url>\n")
        base = sum(len(p.encode()) for p in parts) + len("\t\t\t<image:caption></image:caption>\n")
        self.bases += base
        # Varied caption lengths around what the remaining entries need on average;
        # the last entry lands the file on its target size.
        average = budget - self.bases / (index + 1)
        pad = budget - base if last else average * rng.uniform(0.4, 1.6)
        parts[pad_at] = f"\t\t\t<image:caption>{self._text(max(12, round(pad)))}</image:caption>\n"
        return "".join(parts)

    def write(self, xml_path: Path, gz_path: Path) -> int:
        """Write the plain and the gzip (level 6) file; return the uncompressed size."""
        head = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<urlset xmlns="{NS_SM}"\n        xmlns:image="{NS_IMAGE}"\n'
            f'        xmlns:xhtml="{NS_XHTML}">\n'
        )
        tail = "</urlset>\n"
        written = 0
        with (
            xml_path.open("wb") as plain,
            gzip.GzipFile(gz_path, "wb", compresslevel=6, mtime=0) as packed,
        ):
            batch: list[bytes] = []

            def emit(text: str) -> None:
                nonlocal written
                data = text.encode()
                written += len(data)
                batch.append(data)
                if len(batch) >= 256:
                    flush()

            def flush() -> None:
                data = b"".join(batch)
                batch.clear()
                plain.write(data)
                packed.write(data)

            emit(head)
            for index in range(self.urls):
                left = self.urls - index
                budget = (self.target_bytes - len(tail) - written) / left
                emit(self._entry(index, budget, left == 1))
            emit(tail)
            flush()
        return written


def corpus_paths(spec: CorpusSpec, seed: int, corpus_dir: Path) -> tuple[Path, Path, Path]:
    """(plain, gzip, params) paths of the corpus that ``spec`` measures."""
    stem = f"sitemap-{spec.urls}-s{seed}"
    return (
        corpus_dir / f"{stem}.xml",
        corpus_dir / f"{stem}.xml.gz",
        corpus_dir / f"{stem}.json",
    )


def ensure_corpus(spec: CorpusSpec, seed: int, corpus_dir: Path, *, force: bool = False) -> Path:
    """Generate the files of ``spec`` unless identical ones exist; return the measured file."""
    xml_path, gz_path, meta_path = corpus_paths(spec, seed, corpus_dir)
    params: dict[str, Any] = {
        "version": GEN_VERSION,
        "seed": seed,
        "urls": spec.urls,
        "target_bytes": spec.target_bytes,
    }
    target = gz_path if spec.gz else xml_path
    if not force and meta_path.exists() and xml_path.exists() and gz_path.exists():
        meta = json.loads(meta_path.read_text())
        if (
            meta.get("params") == params
            and meta.get("xml_bytes") == xml_path.stat().st_size
            and meta.get("gz_bytes") == gz_path.stat().st_size
        ):
            return target
    corpus_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    size = _Generator(seed, spec.urls, spec.target_bytes).write(xml_path, gz_path)
    if size >= PROTOCOL_MAX_BYTES:
        raise SystemExit(f"generated {size} bytes: not under the {PROTOCOL_MAX_BYTES}-byte cap")
    meta = {"params": params, "xml_bytes": size, "gz_bytes": gz_path.stat().st_size}
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    print(
        f"# generated {xml_path.name} ({size / 1e6:.1f} MB) and {gz_path.name}"
        f" ({meta['gz_bytes'] / 1e6:.1f} MB) in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    return target


# --------------------------------------------------------------------------- measurements
# Each runs in a fresh interpreter (``--one MODE FILE``): imports, baseline RSS, one read.


def _rss_kib() -> tuple[int, int]:
    """(current, peak) resident set size of this process in KiB.

    Linux: ``VmRSS`` / ``VmHWM`` of /proc/self/status, which belong to this
    process's own address space. ``ru_maxrss`` is not used for the peak because
    it is inherited: exec records the old address space's high-water mark, and
    subprocess's vfork shares the parent's, so a child starts at the parent's
    peak (52 MB after the parent merely read the plain file). Elsewhere falls
    back to ``ru_maxrss`` (KiB on Linux, bytes on macOS) for both values.
    """
    found: dict[str, int] = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    name, value = line.split(":", 1)
                    found[name] = int(value.split()[0])
    except (OSError, ValueError):
        pass
    if "VmRSS" in found and "VmHWM" in found:
        return found["VmRSS"], found["VmHWM"]
    peak = _maxrss_kib()
    return peak, peak


def _maxrss_kib() -> int:
    """``ru_maxrss`` of this process in KiB (reported for reference only, see ``_rss_kib``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak


def run_raw(path: Path) -> tuple[int, int]:
    """The limit: zlib + lxml pull parsing, loc and lastmod text per url. Returns (urls, bytes_out).

    Kept as lean as lxml allows: one ``decompress`` per file chunk (no output
    bound; bounded 64-256 KiB steps measured the same), the tag filter in
    libxml2, ``remove_blank_text`` (no whitespace-only text nodes to build and
    free: about 0.8 µs/URL here), loc/lastmod fetched by a C-level
    ``iterchildren(tag...)`` (``findtext``/``find`` go through ElementPath and
    cost about 1 µs/URL more), and the urlset root looked up once.
    """
    from lxml import etree

    parser = etree.XMLPullParser(events=("end",), tag=URL_TAG, remove_blank_text=True)
    events = parser.read_events()
    feed = parser.feed
    loc_tag, lastmod_tag = LOC_TAG, LASTMOD_TAG
    urls = 0
    bytes_out = 0
    root: Any = None

    def drain() -> None:
        nonlocal urls, root
        for _, el in events:
            loc = lastmod = None
            for child in el.iterchildren(loc_tag, lastmod_tag):
                if child.tag == loc_tag:
                    loc = child.text
                else:
                    lastmod = child.text
            if loc is not None:
                urls += 1
            del lastmod
            el.clear(keep_tail=False)
            if root is None:
                root = el.getparent()
            while el.getprevious() is not None:
                del root[0]

    with open(path, "rb", buffering=0) as fh:
        read = fh.read
        chunk = read(CHUNK)
        zd = zlib.decompressobj(wbits=47) if chunk[:2] == b"\x1f\x8b" else None
        while chunk:
            data = zd.decompress(chunk) if zd is not None else chunk
            bytes_out += len(data)
            feed(data)
            drain()
            chunk = read(CHUNK)
    if zd is not None:
        data = zd.flush()
        bytes_out += len(data)
        feed(data)
    parser.close()
    drain()
    return urls, bytes_out


def run_ours(path: Path, *, extensions: bool = True) -> tuple[int, int]:
    """Our reader on the same chunks, counting entries. Returns (urls, bytes_out).

    ``extensions=False`` is ``reader.extensions = false``: loc, lastmod, changefreq and
    priority only, closer to what the raw loop extracts (loc and lastmod).
    """
    from harvester.config import ReaderConfig
    from harvester.reader.sitemap import SitemapReader

    reader = SitemapReader(BENCH_URL, ReaderConfig(extensions=extensions))
    feed = reader.feed
    urls = 0
    with open(path, "rb", buffering=0) as fh:
        read = fh.read
        while chunk := read(CHUNK):
            urls += len(feed(chunk))
    urls += len(reader.finish())
    result = reader.result()
    if result.status != "ok":
        raise SystemExit(f"ours: status {result.status}: {result.error!r}")
    return urls, result.stats.bytes_out


def run_ours_core(path: Path) -> tuple[int, int]:
    """Our reader with extension parsing off (``reader.extensions = false``)."""
    return run_ours(path, extensions=False)


_MODES: Final = {"raw": run_raw, "ours": run_ours, "ours-core": run_ours_core}


def one(mode: str, path: Path, expect: int | None) -> dict[str, Any]:
    """Run one measurement in this (fresh) process; return its JSON record."""
    if mode == "raw":
        import lxml.etree  # noqa: F401
    else:
        import harvester.reader.sitemap  # noqa: F401
    base_now, base = _rss_kib()
    ru_base = _maxrss_kib()
    started = time.perf_counter()
    urls, bytes_out = _MODES[mode](path)
    seconds = time.perf_counter() - started
    end_now, peak = _rss_kib()
    if expect is not None and urls != expect:
        raise SystemExit(f"{mode}: counted {urls} URLs in {path.name}, expected {expect}")
    return {
        "mode": mode,
        "file": path.name,
        "seconds": seconds,
        "urls": urls,
        "bytes_in": path.stat().st_size,
        "bytes_out": bytes_out,
        "rss_base_kib": base,  # peak RSS after imports, before reading (VmHWM)
        "rss_base_now_kib": base_now,  # current RSS at that moment (VmRSS)
        "rss_peak_kib": peak,
        "rss_growth_kib": peak - base,
        "rss_end_kib": end_now,
        "ru_maxrss_base_kib": ru_base,  # inherited from the parent: reference only
        "ru_maxrss_peak_kib": _maxrss_kib(),
    }


def spawn(mode: str, path: Path, expect: int) -> dict[str, Any]:
    """Run ``one`` in a fresh interpreter and return its record."""
    cmd = [sys.executable, "-m", "benchmarks.bench_parse", "--one", mode, str(path)]
    cmd += ["--expect", str(expect)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"measurement failed: {' '.join(cmd)}\n{proc.stderr}")
    record: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return record


# --------------------------------------------------------------------------- report


@dataclass(slots=True)
class Row:
    """Best-of-N summary of one (file, mode)."""

    spec: CorpusSpec
    mode: str
    seconds: float
    urls: int
    bytes_out: int
    rss_base_mb: float
    growth_mb: float

    @property
    def mb_s(self) -> float:
        return self.bytes_out / 1e6 / self.seconds

    @property
    def urls_s(self) -> float:
        return self.urls / self.seconds

    @property
    def us_per_url(self) -> float:
        return self.seconds / self.urls * 1e6


def summarise(spec: CorpusSpec, mode: str, records: list[dict[str, Any]]) -> Row:
    best = min(records, key=lambda r: float(r["seconds"]))
    return Row(
        spec,
        mode,
        float(best["seconds"]),
        int(best["urls"]),
        int(best["bytes_out"]),
        max(int(r["rss_base_kib"]) for r in records) * 1024 / 1e6,
        max(int(r["rss_growth_kib"]) for r in records) * 1024 / 1e6,
    )


def table(rows: list[Row]) -> tuple[str, list[str]]:
    """The markdown table and the target verdicts."""
    lines = [
        "| file | mode | seconds | MB/s | URLs/s | µs/URL | RSS base MB | peak growth MB"
        " | ours/raw |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    raw = {row.spec.key: row for row in rows if row.mode == "raw"}
    verdicts: list[str] = []
    for row in rows:
        ratio = ""
        ref = raw.get(row.spec.key)
        if row.mode.startswith("ours") and ref is not None:
            value = row.urls_s / ref.urls_s
            ratio = f"**{value:.2f}**"
            extra = row.us_per_url - ref.us_per_url
            verdicts.append(
                f"{'PASS' if value >= 0.7 else 'FAIL'} ratio {row.mode}/raw >= 0.70 on"
                f" {row.spec.label}: {value:.2f} ({row.mode} spends {extra:.1f} µs/URL more)"
            )
        lines.append(
            f"| {row.spec.label} | {row.mode} | {row.seconds:.3f} | {row.mb_s:.1f}"
            f" | {row.urls_s:,.0f} | {row.us_per_url:.2f} | {row.rss_base_mb:.1f}"
            f" | {row.growth_mb:.1f} | {ratio} |"
        )
    ours = {row.spec.key: row for row in rows if row.mode == "ours"}
    big = ours.get("50gz") or ours.get("50xml")
    if big is not None:
        ok = big.growth_mb < 30
        verdicts.append(
            f"{'PASS' if ok else 'FAIL'} peak RSS growth < 30 MB on {big.spec.label}:"
            f" {big.growth_mb:.1f} MB"
        )
        small = ours.get("5gz")
        if small is not None:
            diff = big.growth_mb - small.growth_mb
            verdicts.append(
                f"{'PASS' if abs(diff) <= 10 else 'FAIL'} flat memory, growth within 10 MB of"
                f" the 5 MiB file's: {big.growth_mb:.1f} vs {small.growth_mb:.1f} MB ({diff:+.1f})"
            )
    return "\n".join(lines), verdicts


def profile(path: Path, top: int) -> None:
    """Run our reader under cProfile on ``path`` and print the top functions by tottime.

    Printed from ``Profile.getstats()`` rather than ``pstats``: pstats keys
    functions by (file, line, name), and every dataclass-generated ``__init__``
    is ``<string>:2(__init__)``, so it keeps one of them (the last) and drops
    the rest, hiding the cost of building ``UrlEntry`` and ``Image``. Here
    those are named after their class. Cython code (all of lxml) is invisible
    to cProfile: its time counts in the calling Python function's tottime
    (``XmlSitemapParser.feed`` holds libxml2's parsing; ``_url`` and
    ``_fields`` hold element proxies, ``.tag``/``.text``/``.get``).
    """
    run_ours(path)  # warm-up: imports, caches, page cache
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    urls, _ = run_ours(path)
    profiler.disable()
    seconds = time.perf_counter() - started
    generated = _generated_inits()
    totals: dict[str, list[float]] = {}
    for entry in profiler.getstats():
        code = entry.code
        if isinstance(code, str):
            label = code
        else:
            label = generated.get(code) or (
                f"{_short(code.co_filename)}:{code.co_firstlineno}({code.co_qualname})"
            )
        row = totals.setdefault(label, [0, 0.0, 0.0])
        row[0] += entry.callcount
        row[1] += entry.inlinetime
        row[2] += entry.totaltime
    profiled = sum(row[1] for row in totals.values())
    print(
        f"# cProfile of ours on {path.name}: {urls} URLs in {seconds:.2f} s under the profiler"
        f" ({seconds / urls * 1e6:.2f} µs/URL; the profiler inflates Python-level calls,"
        f" lxml's Cython calls count in their Python caller)"
    )
    print(f"{'ncalls':>9} {'tottime':>8} {'%':>5} {'µs/URL':>7} {'cumtime':>8}  function")
    ranked = sorted(totals.items(), key=lambda item: item[1][1], reverse=True)
    for label, (calls, tottime, cumtime) in ranked[:top]:
        print(
            f"{int(calls):>9} {tottime:>8.3f} {tottime / profiled * 100:>5.1f}"
            f" {tottime / urls * 1e6:>7.2f} {cumtime:>8.3f}  {label}"
        )


def _generated_inits() -> dict[object, str]:
    """Code objects of dataclass-generated ``__init__``s in harvester, named after the class."""
    names: dict[object, str] = {}
    for name, module in list(sys.modules.items()):
        if name != "harvester" and not name.startswith("harvester."):
            continue
        for obj in vars(module).values():
            init = getattr(obj, "__init__", None) if isinstance(obj, type) else None
            code = getattr(init, "__code__", None)
            if code is not None and "__dataclass_fields__" in vars(obj):
                names[code] = f"{obj.__module__}.{obj.__qualname__}.__init__ (dataclass)"
    return names


def _short(filename: str) -> str:
    """A path relative to the checkout when it is inside it."""
    try:
        return str(Path(filename).resolve().relative_to(ROOT))
    except ValueError:
        return filename


def main(argv: list[str] | None = None) -> int:
    keys = [spec.key for spec in SPECS]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--repeat", type=int, default=3, help="runs per (file, mode); best time wins")
    ap.add_argument(
        "--files", default=",".join(keys), help=f"comma-separated subset of {','.join(keys)}"
    )
    ap.add_argument("--seed", type=int, default=20240501)
    ap.add_argument("--corpus-dir", type=Path, default=CORPUS_DIR)
    ap.add_argument("--force", action="store_true", help="regenerate the corpus")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument(
        "--profile",
        nargs="?",
        const="50gz",
        choices=keys,
        help="only profile ours under cProfile (default file: 50gz)",
    )
    ap.add_argument("--top", type=int, default=25, help="functions shown by --profile")
    ap.add_argument("--one", nargs=2, metavar=("MODE", "FILE"), help=argparse.SUPPRESS)
    ap.add_argument("--expect", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.one is not None:
        mode, file = args.one
        if mode not in _MODES:
            ap.error(f"--one: unknown mode {mode!r}")
        print(json.dumps(one(mode, Path(file), args.expect)))
        return 0

    by_key = {spec.key: spec for spec in SPECS}
    if args.profile is not None:
        spec = by_key[args.profile]
        profile(ensure_corpus(spec, args.seed, args.corpus_dir, force=args.force), args.top)
        return 0

    chosen = [by_key[k] for k in args.files.split(",") if k]
    unknown = [k for k in args.files.split(",") if k and k not in by_key]
    if unknown or not chosen:
        ap.error(f"--files: choose from {','.join(keys)}")
    paths = {
        spec.key: ensure_corpus(spec, args.seed, args.corpus_dir, force=args.force)
        for spec in chosen
    }
    rows: list[Row] = []
    for spec in chosen:
        path = paths[spec.key]
        _warm(path)
        records: dict[str, list[dict[str, Any]]] = {"raw": [], "ours": [], "ours-core": []}
        # Interleaved, so that load from elsewhere hits both modes alike.
        for attempt in range(args.repeat):
            for mode, runs in records.items():
                record = spawn(mode, path, spec.urls)
                record.update(bench="parse", file_key=spec.key, run=attempt + 1, loadavg_1m=_load())
                print(json.dumps(record), flush=True)
                runs.append(record)
        rows.extend(summarise(spec, mode, runs) for mode, runs in records.items())
    markdown, verdicts = table(rows)
    print()
    print(
        f"Best of {args.repeat}; Python {sys.version.split()[0]}, {_lxml_version()}, {_cpu()}"
        f" ({os.cpu_count()} CPUs, load average {_load():.2f} at the end)."
    )
    if _load() > 1.5:  # this benchmark alone keeps about 1 runnable
        print(
            "Note: the machine was busy during the run; timings are pessimistic and noisy.",
            file=sys.stderr,
        )
    print()
    print(markdown)
    print()
    for line in verdicts:
        print(f"- {line}")
    failed = any(line.startswith("FAIL") for line in verdicts)
    return 1 if args.check and failed else 0


def _warm(path: Path) -> None:
    """Read ``path`` once (in chunks: keeps this process small) into the page cache."""
    with open(path, "rb", buffering=0) as fh:
        while fh.read(1 << 20):
            pass


def _load() -> float:
    """The 1-minute load average (0.0 where unavailable)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def _lxml_version() -> str:
    try:
        from lxml import etree
    except ImportError:  # pragma: no cover
        return "lxml ?"
    libxml = ".".join(map(str, etree.LIBXML_VERSION))
    return f"lxml {'.'.join(map(str, etree.LXML_VERSION[:3]))} (libxml2 {libxml})"


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    sys.exit(main())
