"""Scrapy's SitemapSpider with its default settings: the realweb's peer row.

In: ``--seeds`` (one ``http://<domain>/robots.txt`` a line: what a SitemapSpider is
given; ``http://`` because every site of the web answers on :80, with a 301 to https
where it has https), ``--out`` (URLs found, one a line). Out: the URLs, and on stdout
one JSON line: URLs reported, Scrapy's version, the settings changed and the crawler's
stats (requests, responses by status, download exceptions by type, retries, ...).

The spider is ``scrapy.spiders.SitemapSpider`` with ``sitemap_urls`` = the seeds; the
documented ``sitemap_filter`` hook records each urlset's locs and yields only index
entries, so no page is requested (the same hook as ``benchmarks/peers.py``). Settings are
Scrapy's defaults (``CONCURRENT_REQUESTS`` 16, ``CONCURRENT_REQUESTS_PER_DOMAIN`` 8,
``DOWNLOAD_TIMEOUT`` 180, ``RETRY_TIMES`` 2, ``DNS_TIMEOUT`` 60, ``ROBOTSTXT_OBEY``
False, TLS certificates not verified) except ``LOG_LEVEL`` ERROR and the telnet console
off: neither changes what is fetched. ``--tuned`` (the ``scrapy-tuned`` row) sets
``TUNED`` over them: harvester's concurrency, per-host rate and read timeout. Imported
only in its own process (the ``bench`` extra installs Scrapy).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

SETTINGS: dict[str, Any] = {"LOG_LEVEL": "ERROR", "TELNETCONSOLE_ENABLED": False}
# ``--tuned``: harvester's shape instead of Scrapy's defaults: as many requests at once as
# harvester's 2 workers x 64 hosts x 2 per host, harvester's per-host rate (2/s) as a
# delay, and its 30 s read timeout for the whole download (Scrapy's is 180 s).
TUNED: dict[str, Any] = {
    "CONCURRENT_REQUESTS": 256,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
    "DOWNLOAD_DELAY": 0.5,
    "DOWNLOAD_TIMEOUT": 30,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.realweb.peer", description=__doc__)
    ap.add_argument("--seeds", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--tuned", action="store_true", help="TUNED settings over the defaults")
    args = ap.parse_args(argv)
    settings = {**SETTINGS, **(TUNED if args.tuned else {})}
    seeds = [ln.strip() for ln in args.seeds.read_text().splitlines() if ln.strip()]
    scrapy = importlib.import_module("scrapy")
    crawler_mod = importlib.import_module("scrapy.crawler")
    spiders = importlib.import_module("scrapy.spiders")
    started = time.perf_counter()
    found = 0
    with args.out.open("w", encoding="utf-8") as fh:
        base: Any = spiders.SitemapSpider

        class Spider(base):  # type: ignore[misc]
            name = "realweb"
            sitemap_urls: ClassVar[list[str]] = seeds

            def sitemap_filter(self, entries: Any) -> Any:
                nonlocal found
                if getattr(entries, "type", None) != "urlset":
                    yield from entries
                    return
                for entry in entries:
                    loc = entry.get("loc")
                    if loc:
                        fh.write(loc + "\n")
                        found += 1
                fh.flush()

        process = crawler_mod.CrawlerProcess(settings=settings)
        crawler = process.create_crawler(Spider)
        process.crawl(crawler)
        process.start()
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    print(
        json.dumps(
            {
                "peer": "scrapy",
                "version": scrapy.__version__,
                "seconds": time.perf_counter() - started,
                "seeds": len(seeds),
                "urls_reported": found,
                "settings": settings,
                "stats": stats,
            },
            default=str,
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
