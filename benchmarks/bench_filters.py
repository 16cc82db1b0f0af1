"""Filter benchmark (issue 32): the worker's per-URL CPU path with and without ``[filters]``.

What a host worker does per sitemap once the bytes are in, on one core and without
the network (which only dilutes the difference): ``SitemapReader.feed`` (gunzip,
parse) → ``UrlBatch.take`` (filter, canonical URL, dedupe, record or JSON line) →
``flush`` every ``BATCH`` records, with the JSON Lines batches the pipeline uses.

Variants, timed side by side in one process, interleaved round by round (so a
change of machine load hits them alike), on the same gzipped sitemaps:

* ``none``: no filter (the default);
* ``exclude-nothing``: one ``exclude`` pattern no URL matches: every record is
  written, so this is the filter's pure cost per URL (the worst case);
* ``include+exclude``: ``include = ["/blog/", "/news/"]`` and ``exclude = ["\\?"]``,
  which keeps about a third of the URLs (less to encode afterwards).

Times are this process's CPU time (``time.process_time``): the machine is shared,
and wall time moved by more than the difference measured. The filter step's own CPU
time is also measured (around ``UrlBatch._filter``) as a share of the pass: the
direct cost, least moved by the noise. Prints one JSON line per variant (URLs/s of
its fastest round, the usual estimate under noise, as ``timeit`` takes; the median
over the rounds of its time relative to ``none`` in the same round; the filter
step's share) and a markdown table.

Usage::

    python -m benchmarks.bench_filters                       # 6 files x 50,000 URLs, 7 rounds
    python -m benchmarks.bench_filters --files 2 --rounds 3  # quicker
    HARVESTER_PURE_PYTHON=1 python -m benchmarks.bench_filters   # without the compiled modules
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import time
from typing import Any

from harvester import compiled
from harvester.config import load_config
from harvester.crawl.batch import UrlBatch
from harvester.crawl.report import HostReport
from harvester.crawl.settings import BatchSettings
from harvester.reader.sitemap import SitemapReader
from harvester.urls.normalize import Normalizer

HOST = "www.shop-example.com"
SECTIONS = ("blog", "news", "product", "category", "help", "store")
VARIANTS: dict[str, dict[str, Any]] = {
    "none": {},
    "exclude-nothing": {"filters.exclude": (r"/never-matches-\d{9}/",)},
    "include+exclude": {"filters.include": ("/blog/", "/news/"), "filters.exclude": (r"\?",)},
}


def sitemap(n: int, seed: int) -> bytes:
    """A gzipped urlset of ``n`` URLs of one host, 60-120 characters, some with a query."""
    rng = random.Random(seed)
    parts = ['<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    for i in range(n):
        section = rng.choice(SECTIONS)
        slug = "-".join(rng.choice(("alpha", "beta", "gamma", "delta", "omega")) for _ in range(4))
        query = f"?page={rng.randrange(9)}" if rng.random() < 0.1 else ""
        parts.append(
            f"<url><loc>https://{HOST}/{section}/{slug}-{seed}-{i}{query}</loc>"
            f"<lastmod>2024-0{1 + i % 9}-1{i % 10}</lastmod></url>"
        )
    parts.append("</urlset>")
    return gzip.compress("".join(parts).encode(), 6)


# CPU seconds spent inside ``UrlBatch._filter`` (the filter step itself), per pass: the
# direct measure of its cost, which the machine's noise moves far less than a whole pass.
FILTER_SECONDS = [0.0]
_real_filter = UrlBatch._filter


def _timed_filter(self: UrlBatch, entries: list[Any]) -> list[Any]:
    started = time.process_time()
    try:
        return _real_filter(self, entries)
    finally:
        FILTER_SECONDS[0] += time.process_time() - started


UrlBatch._filter = _timed_filter  # type: ignore[method-assign]


def one_pass(files: list[bytes], overrides: dict[str, Any]) -> tuple[float, int, int]:
    """Read every file into one host's batch; (seconds, URLs read, records written)."""
    cfg = load_config(None, {"audit.distribution": False, **overrides})
    report = HostReport(HOST)
    rules = Normalizer(cfg.normalize).rules_for(HOST)
    batch = UrlBatch(HOST, BatchSettings.of(cfg), rules, report, encoded=True)
    written = 0
    read = 0
    started = time.process_time()
    for i, body in enumerate(files):
        url = f"https://{HOST}/sitemap-{i}.xml.gz"
        reader = SitemapReader(url, cfg.reader, dedupe=False)
        batch.new_file()
        batch.new_read()
        for at in range(0, len(body), 65536):
            entries = list(reader.feed(body[at : at + 65536]))
            read += len(entries)
            batch.take(entries, url)
            if batch.full:
                out = batch.flush()
                if out is not None:
                    written += out.lines if out.lines is not None else len(out.fingerprints)
        tail = reader.finish()
        read += len(tail)
        batch.take(list(tail), url)
    out = batch.flush()
    if out is not None:
        written += out.lines if out.lines is not None else len(out.fingerprints)
    seconds = time.process_time() - started
    batch.close()
    assert written == report.urls, (written, report.urls)
    assert report.filtered + report.urls == read
    return seconds, read, written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=6, help="sitemaps (each --urls URLs)")
    ap.add_argument("--urls", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    files = [sitemap(args.urls, seed) for seed in range(args.files)]
    one_pass(files[:1], {})  # warm-up: imports, the first compiled-module calls
    seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
    shares: dict[str, list[float]] = {name: [] for name in VARIANTS}
    relative: dict[str, list[float]] = {name: [] for name in VARIANTS}
    counts: dict[str, tuple[int, int]] = {}
    for round_no in range(args.rounds):
        # Rotate the order each round: no variant is always first after a pause.
        names = list(VARIANTS)
        names = names[round_no % len(names) :] + names[: round_no % len(names)]
        times: dict[str, float] = {}
        for name in names:
            FILTER_SECONDS[0] = 0.0
            took, read, written = one_pass(files, VARIANTS[name])
            shares[name].append(FILTER_SECONDS[0] / took)
            times[name] = took
            seconds[name].append(took)
            counts[name] = (read, written)
        for name in VARIANTS:
            relative[name].append(times[name] / times["none"] - 1.0)
    rows = []
    for name, overrides in VARIANTS.items():
        read, written = counts[name]
        median = statistics.median(seconds[name])
        best = min(seconds[name])
        row = {
            "variant": name,
            "filters": {k.removeprefix("filters."): list(v) for k, v in overrides.items()},
            "compiled": compiled.status(),
            "urls_read": read,
            "records_written": written,
            "urls_per_s": round(read / best),
            "best_cpu_s": round(best, 4),
            "median_cpu_s": round(median, 4),
            "best_vs_none_pct": round(100 * (best / min(seconds["none"]) - 1), 1),
            "cost_vs_none_pct": round(100 * statistics.median(relative[name]), 1),
            "filter_step_share_pct": round(100 * statistics.median(shares[name]), 2),
            "rounds": args.rounds,
        }
        rows.append(row)
        print(json.dumps(row))
    print()
    print(
        "| variant | URLs read | records written | URLs/s (best round) | best vs none"
        " | median of per-round ratios | filter step's share of the pass |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(
            f"| {row['variant']} | {row['urls_read']:,} | {row['records_written']:,} |"
            f" {row['urls_per_s']:,} | {row['best_vs_none_pct']:+.1f} % |"
            f" {row['cost_vs_none_pct']:+.1f} % | {row['filter_step_share_pct']:.2f} % |"
        )


if __name__ == "__main__":
    main()
