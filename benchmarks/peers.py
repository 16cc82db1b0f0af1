"""Peer sitemap tools, each run in its own process by ``benchmarks.run`` (issue 8).

``python -m benchmarks.peers NAME --seeds SEEDS --out FILE`` harvests every origin of SEEDS
with the peer NAME and writes every URL it reports to FILE, one a line, flushed after each
host (so a peer killed at its time limit still shows what it had). The last line on stdout is
a JSON summary (hosts done, errors, the settings used). Peers are imported inside their
functions only (with ``importlib``: neither mypy nor the tests need them); none is a
dependency of harvester (they come with the ``bench`` extra).

Every peer is only ever given ``http://127.x.y.z:port`` origins (the runner refuses other
seeds) and runs with the proxy variables removed from its environment; the code paths below
were checked not to fetch anything else:

* ``usp``: ``usp.tree.sitemap_tree_for_homepage(origin)`` per host, one host at a time, then
  ``tree.all_pages()``. It fetches robots.txt and then probes its list of well-known sitemap
  paths on the same host (``use_known_paths`` default, kept: that is its documented
  behaviour); requests-based, one request at a time.
* ``advertools``: ``advertools.sitemap_to_df(origin + "/robots.txt")`` per host, one host at a
  time; it reads robots.txt, then the index, then the children with its own thread pool
  (``max_workers``, default 8, documented). The ``loc`` column is the result.
* ``scrapy``: a ``scrapy.spiders.SitemapSpider`` with ``sitemap_urls`` = every host's
  robots.txt, in one ``CrawlerProcess``. The documented ``sitemap_filter`` hook records
  every urlset entry's loc and yields no page requests (so no page is downloaded, only
  sitemaps). Settings (documented): ``CONCURRENT_REQUESTS`` 128,
  ``CONCURRENT_REQUESTS_PER_DOMAIN`` 4, ``ROBOTSTXT_OBEY`` False (the robots.txt is fetched
  as a sitemap source anyway), ``DOWNLOAD_DELAY`` 0, ``AUTOTHROTTLE_ENABLED`` False,
  ``TELNETCONSOLE_ENABLED`` False, ``LOG_LEVEL`` ERROR, ``DOWNLOAD_WARNSIZE`` 0.
* ``trafilatura``: ``trafilatura.sitemaps.sitemap_search(origin)`` per host, one host at a
  time (its documented entry point); it reads robots.txt, then the sitemaps it lists. Two
  documented options adapt it: ``SSRF_PROTECTION = off`` in its config (else it refuses
  non-public addresses: loopback) and ``sleep_time=0`` (default 2 s between the sitemaps of
  a site); and ``MAX_FILE_SIZE`` raised from 20 MB to the protocol's 50 MiB (else the rich
  child of ``big`` is dropped as oversized). It reads ``http_proxy`` at import; the
  variable is removed before the import.
  It finds nothing on IP-address hosts (see ``run_trafilatura_ip``): ``trafilatura-ip`` is
  the same run with two courlan look-ups patched, reported as such.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar, Final
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from collections.abc import Callable

MAX_FILE_SIZE: Final = 52_428_800  # trafilatura's MAX_FILE_SIZE: the protocol's 50 MiB
PEERS: Final = ("usp", "advertools", "scrapy", "trafilatura", "trafilatura-ip")
PROXY_VARS: Final = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


def read_seeds(path: Path) -> list[str]:
    """The origins of ``path``; raises ``ValueError`` on anything but ``http://127.x``."""
    origins = [ln.strip() for ln in path.read_text().splitlines() if ln.strip()]
    for origin in origins:
        parts = urlsplit(origin)
        if parts.scheme != "http" or not (parts.hostname or "").startswith("127."):
            raise ValueError(f"refusing a non-loopback seed for a peer: {origin!r}")
    return origins


class Sink:
    """Writes URLs one a line; flushed after each host."""

    def __init__(self, fh: IO[str]) -> None:
        self.fh = fh
        self.urls = 0
        self.hosts_done = 0
        self.errors: dict[str, int] = {}

    def add(self, urls: Any) -> None:
        n = 0
        for url in urls:
            if isinstance(url, str) and url:
                self.fh.write(url + "\n")
                n += 1
        self.urls += n

    def host_done(self) -> None:
        self.hosts_done += 1
        self.fh.flush()

    def error(self, exc: BaseException) -> None:
        name = type(exc).__name__
        self.errors[name] = self.errors.get(name, 0) + 1


def _per_host(sink: Sink, origins: list[str], one: Callable[[str], Any]) -> None:
    for origin in origins:
        try:
            sink.add(one(origin))
        except Exception as exc:  # a peer failing on one host goes on with the next
            sink.error(exc)
        sink.host_done()


def run_usp(sink: Sink, origins: list[str], concurrency: int) -> dict[str, Any]:
    usp_tree = importlib.import_module("usp.tree")

    def one(origin: str) -> Any:
        tree = usp_tree.sitemap_tree_for_homepage(origin + "/")
        return (page.url for page in tree.all_pages())

    _per_host(sink, origins, one)
    return {"mode": "sitemap_tree_for_homepage per host, sequential"}


def run_advertools(sink: Sink, origins: list[str], concurrency: int) -> dict[str, Any]:
    advertools = importlib.import_module("advertools")

    def one(origin: str) -> Any:
        df = advertools.sitemap_to_df(origin + "/robots.txt", max_workers=concurrency)
        if "loc" not in df.columns:
            return []
        return df["loc"].dropna().tolist()

    _per_host(sink, origins, one)
    return {"mode": f"sitemap_to_df(robots.txt, max_workers={concurrency}) per host"}


def run_trafilatura(sink: Sink, origins: list[str], concurrency: int) -> dict[str, Any]:
    settings = importlib.import_module("trafilatura.settings")
    sitemaps = importlib.import_module("trafilatura.sitemaps")

    config = settings.use_config()
    config.set("DEFAULT", "SSRF_PROTECTION", "off")  # documented: "off" for intranet use
    # Documented option (settings.cfg, default 20,000,000 bytes): raised to the sitemap
    # protocol's 50 MiB cap, else the 49.75 MiB child of ``big`` is dropped as oversized.
    # Its gzip path (utils.handle_compressed_file) reads DEFAULT_CONFIG, so set both.
    for cfg in (config, settings.DEFAULT_CONFIG):
        cfg.set("DEFAULT", "MAX_FILE_SIZE", str(MAX_FILE_SIZE))

    def one(origin: str) -> Any:
        return sitemaps.sitemap_search(origin + "/", sleep_time=0.0, config=config)

    _per_host(sink, origins, one)
    return {
        "mode": "sitemaps.sitemap_search(sleep_time=0, SSRF_PROTECTION off) per host, sequential"
    }


def run_scrapy(sink: Sink, origins: list[str], concurrency: int) -> dict[str, Any]:
    crawler = importlib.import_module("scrapy.crawler")
    spiders = importlib.import_module("scrapy.spiders")

    base: Any = spiders.SitemapSpider

    class Spider(base):  # type: ignore[misc]
        name = "bench"
        sitemap_urls: ClassVar[list[str]] = [origin + "/robots.txt" for origin in origins]

        def sitemap_filter(self, entries: Any) -> Any:
            # Documented hook: record the urlset entries, yield only the index entries
            # (children to follow), so no page is requested.
            if getattr(entries, "type", None) != "urlset":
                yield from entries
                return
            sink.add(entry["loc"] for entry in entries if entry.get("loc"))
            sink.fh.flush()

    settings = {
        "CONCURRENT_REQUESTS": 32 * concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
        "ROBOTSTXT_OBEY": False,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "ERROR",
        "DOWNLOAD_WARNSIZE": 0,
        "COOKIES_ENABLED": False,
        "RETRY_ENABLED": False,
    }
    process = crawler.CrawlerProcess(settings=settings)
    process.crawl(Spider)
    process.start()
    sink.hosts_done = len(origins)
    sink.fh.flush()
    return {
        "mode": "SitemapSpider over every robots.txt, sitemap_filter records urlset locs",
        "settings": settings,
    }


def run_trafilatura_ip(sink: Sink, origins: list[str], concurrency: int) -> dict[str, Any]:
    """trafilatura with its two domain look-ups patched to accept IP-address hosts.

    courlan's ``get_hostinfo``/``extract_domain`` find no registrable domain in
    ``127.1.0.1`` (``sitemap_search`` logs "invalid URL" and returns ``[]``), so this
    variant replaces the two names in ``trafilatura.sitemaps`` by the URL's host; and
    ``is_live_page`` (a HEAD of the homepage, which the corpus does not have: 404, "base URL
    unreachable") by ``True``. The rest
    (fetching, robots.txt, sitemap parsing, link filters) is trafilatura's own code.
    """
    sitemaps: Any = importlib.import_module("trafilatura.sitemaps")

    def get_hostinfo(url: str) -> tuple[str | None, str]:
        parts = urlsplit(url)
        return parts.hostname, f"{parts.scheme}://{parts.netloc}"

    def extract_domain(url: str, *_: Any, **__: Any) -> str | None:
        return urlsplit(url).hostname

    sitemaps.get_hostinfo = get_hostinfo
    sitemaps.extract_domain = extract_domain
    sitemaps.is_live_page = lambda *_: True  # HEAD / must answer 200: the corpus has no "/"
    info = run_trafilatura(sink, origins, concurrency)
    info["mode"] += "; get_hostinfo/extract_domain/is_live_page patched (IP hosts, no '/')"
    return info


RUNNERS: Final = {
    "usp": run_usp,
    "advertools": run_advertools,
    "scrapy": run_scrapy,
    "trafilatura": run_trafilatura,
    "trafilatura-ip": run_trafilatura_ip,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.peers",
        description="Harvest a loopback corpus with one peer tool (for benchmarks.run).",
    )
    ap.add_argument("peer", choices=PEERS)
    ap.add_argument("--seeds", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True, help="URLs found, one a line")
    ap.add_argument("--concurrency", type=int, default=4, help="per-host, where the peer has one")
    args = ap.parse_args(argv)
    for var in PROXY_VARS:
        os.environ.pop(var, None)
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.0/8,localhost"
    try:
        origins = read_seeds(args.seeds)
    except ValueError as exc:
        print(f"peers: {exc}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    with args.out.open("w", encoding="utf-8") as fh:
        sink = Sink(fh)
        info = RUNNERS[args.peer](sink, origins, args.concurrency)
    print(
        json.dumps(
            {
                "peer": args.peer,
                "seconds": time.perf_counter() - started,
                "hosts": len(origins),
                "hosts_done": sink.hosts_done,
                "urls_reported": sink.urls,
                "errors": sink.errors,
                **info,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
