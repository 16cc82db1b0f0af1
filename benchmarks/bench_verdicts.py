"""Verdict benchmark (issue 48): the worker's per-URL CPU path with robots.txt verdicts off and on.

What a host worker does per sitemap once the bytes are in, on one core, without the
network (which only dilutes the difference): ``SitemapReader.feed`` (gunzip, parse)
→ ``UrlBatch.take`` → ``flush`` every ``BATCH`` records → the batch's JSON lines
(``RecordBatch.encoded``, what the writer writes). The host's robots.txt holds 20
rules for ``*`` (18 Disallow, 2 Allow; about a sixth of the URLs disallowed).

Variants, side by side in one process, interleaved round by round:

* ``off``: no verdicts (the default): the compiled loop writes JSON lines;
* ``verdicts``: ``policy.verdicts``: every record gets ``robots`` (added to the JSON
  lines the compiled loop wrote);
* ``respect``: ``policy.respect_robots``: disallowed URLs dropped before the loop;
* ``verdicts-fast``: ``policy.verdicts`` on a host whose 20 rules are for another
  agent only (the fast path: one constant per host);
* ``tdm``: ``policy.tdmrep`` with a tdmrep.json of 5 location rules (each record's
  ``tdm_reserved``);
* ``verdicts+tdm``: both fields on every record.

With the compiled modules, the fields are written as the compiled loop writes each
line (``_crobots.LineLabels``); ``HARVESTER_PURE_PYTHON=1`` measures the Python path.

Times are this process's CPU time (``time.process_time``); each variant's cost is
the median over rounds of its time relative to ``off`` in the same round.

Usage::

    python -m benchmarks.bench_verdicts                       # 4 files x 50,000 URLs, 5 rounds
    python -m benchmarks.bench_verdicts --files 2 --rounds 3  # quicker
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from benchmarks.bench_filters import HOST, sitemap
from harvester import compiled
from harvester.config import load_config
from harvester.crawl.batch import UrlBatch
from harvester.crawl.report import HostReport
from harvester.crawl.settings import BatchSettings
from harvester.crawl.verdicts import HostVerdicts
from harvester.reader.sitemap import SitemapReader
from harvester.urls.normalize import Normalizer

_RULES = [
    "Disallow: /cart",
    "Disallow: /checkout",
    "Disallow: /account/",
    "Disallow: /*?page=",
    "Disallow: /search",
    "Disallow: /*.pdf$",
    "Disallow: /help/*-omega-omega",
    "Disallow: /tmp/",
    "Disallow: /private/",
    "Disallow: /admin/",
    "Disallow: /store/*-delta-alpha-",
    "Disallow: /api/",
    "Disallow: /login",
    "Disallow: /register",
    "Disallow: /wishlist",
    "Disallow: /compare",
    "Disallow: /category/*beta-beta",
    "Disallow: /print/",
    "Allow: /help/*-omega-omega-omega",
    "Allow: /api/public/",
]
ROBOTS = "User-agent: *\n" + "\n".join(_RULES) + "\n"
OTHER = "User-agent: otherbot\n" + "\n".join(_RULES) + "\n"
TDMREP = {
    "url": f"https://{HOST}/.well-known/tdmrep.json",
    "rules": [
        {"location": "/help/*-omega-", "tdm-reservation": 0},
        {"location": "/store/", "tdm-reservation": 1},
        {"location": "/*.pdf$", "tdm-reservation": 1},
        {"location": "/category/*beta", "tdm-reservation": 0},
        {"location": "/news/", "tdm-reservation": 1},
    ],
}
VARIANTS: dict[str, tuple[dict[str, Any], str]] = {
    "off": ({}, ROBOTS),
    "verdicts": ({"policy.verdicts": True}, ROBOTS),
    "respect": ({"policy.respect_robots": True}, ROBOTS),
    "verdicts-fast": ({"policy.verdicts": True}, OTHER),
    "tdm": ({"policy.tdmrep": True}, ROBOTS),
    "verdicts+tdm": ({"policy.verdicts": True, "policy.tdmrep": True}, ROBOTS),
}


def one_pass(files: list[bytes], overrides: dict[str, Any], robots: str) -> tuple[float, int, int]:
    """Read every file into one host's batch; (CPU seconds, URLs read, lines written)."""
    cfg = load_config(None, {"audit.distribution": False, **overrides})
    report = HostReport(HOST)
    rules = Normalizer(cfg.normalize).rules_for(HOST)
    batch = UrlBatch(HOST, BatchSettings.of(cfg), rules, report, encoded=True)
    written = read = 0
    report.allows = {"tdmrep": TDMREP}  # (what the host worker fetched before its sitemaps)
    started = time.process_time()
    batch.verdicts = HostVerdicts.of(cfg.policy, "harvester", robots, 200, report)
    for i, body in enumerate(files):
        url = f"https://{HOST}/sitemap-{i}.xml.gz"
        reader = SitemapReader(url, cfg.reader, dedupe=False)
        batch.new_file()
        batch.new_read()
        for at in range(0, len(body), 65536):
            entries = list(reader.feed(body[at : at + 65536]))
            read += len(entries)
            batch.take(entries, url)
            if batch.full and (out := batch.flush()) is not None:
                written += out.encoded().count(b"\n")
        tail = reader.finish()
        read += len(tail)
        batch.take(list(tail), url)
    if (out := batch.flush()) is not None:
        written += out.encoded().count(b"\n")
    seconds = time.process_time() - started
    batch.close()
    assert written == report.urls, (written, report.urls)
    assert report.urls + report.robots_disallowed_urls == read
    return seconds, read, written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=4, help="sitemaps (each --urls URLs)")
    ap.add_argument("--urls", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated variants (off always runs)")
    args = ap.parse_args()
    if args.only:
        wanted = {"off", *args.only.split(",")}
        for name in [n for n in VARIANTS if n not in wanted]:
            del VARIANTS[name]
    files = [sitemap(args.urls, seed) for seed in range(args.files)]
    one_pass(files[:1], {}, ROBOTS)  # warm-up
    seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
    relative: dict[str, list[float]] = {name: [] for name in VARIANTS}
    counts: dict[str, tuple[int, int]] = {}
    for round_no in range(args.rounds):
        names = list(VARIANTS)
        names = names[round_no % len(names) :] + names[: round_no % len(names)]
        times: dict[str, float] = {}
        for name in names:
            overrides, robots = VARIANTS[name]
            took, read, written = one_pass(files, overrides, robots)
            times[name] = took
            seconds[name].append(took)
            counts[name] = (read, written)
        for name in VARIANTS:
            relative[name].append(times[name] / times["off"] - 1.0)
    print("| variant | URLs read | lines written | best CPU s | median cost vs off |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in VARIANTS:
        read, written = counts[name]
        row = {
            "variant": name,
            "compiled": compiled.status(),
            "urls_read": read,
            "lines_written": written,
            "best_cpu_s": round(min(seconds[name]), 4),
            "cost_vs_off_pct": round(100 * statistics.median(relative[name]), 1),
        }
        print(
            f"| {name} | {read:,} | {written:,} | {row['best_cpu_s']} |"
            f" {row['cost_vs_off_pct']:+.1f} % |  <!-- {json.dumps(row)} -->"
        )


if __name__ == "__main__":
    main()
