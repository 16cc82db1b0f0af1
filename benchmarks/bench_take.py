"""CPU time of ``UrlBatch.take`` and ``flush``, in one process, for comparing two builds.

In: ``--hosts`` hosts of ``--urls`` URL entries each, handed to a fresh ``UrlBatch`` per
host in lists of ``--chunk`` entries (as the reader hands them over), flushed whenever
full, as JSON lines (``encoded``, what a JSON Lines run writes) or as dicts. Out: one
JSON line per round with the CPU seconds (``time.process_time``) and µs per URL.
``--extension``: every entry carries one (two images, two alternates, a video or a
news item), to compare how each one is written.

Only the batch's public API is used, so the same file measures another checkout's
build: ``PYTHONPATH=<checkout> python benchmarks/bench_take.py`` (run by path, so the
harvester package comes from ``PYTHONPATH``). No network, no disk.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime, timedelta

from harvester import compiled
from harvester.config import Config
from harvester.crawl.batch import UrlBatch
from harvester.crawl.report import HostReport
from harvester.crawl.settings import BatchSettings
from harvester.models import Entry, Image, News, UrlEntry, Video
from harvester.urls.normalize import Normalizer


def entries(host: str, n: int, extension: str = "none") -> list[Entry]:
    """``n`` distinct URL entries of ``host`` with a lastmod, changefreq and priority,
    each with ``extension`` (none, images, alternates, video, news)."""
    t0 = datetime(2024, 5, 1, tzinfo=UTC)
    out: list[Entry] = []
    for i in range(n):
        loc = f"https://{host}/p/{i}.html"
        images: tuple[Image, ...] = ()
        alternates: tuple[tuple[str, str], ...] = ()
        videos: tuple[Video, ...] = ()
        news = None
        if extension == "images":
            images = (Image(f"{loc}.jpg", None, "T"), Image(f"{loc}.png"))
        elif extension == "alternates":
            alternates = (("de", f"{loc}?de"), ("fr", f"{loc}?fr"))
        elif extension == "video":
            videos = (
                Video(
                    thumbnail_loc=f"{loc}.jpg",
                    title="V",
                    content_loc=f"{loc}.mp4",
                    publication_date="2024-05-01T10:00:00+00:00",
                    tags=("a", "b"),
                ),
            )
        elif extension == "news":
            news = News("The Daily", "en", t0, "2024-05-01", f"T{i}", ("a", "b"))
        when = t0 + timedelta(minutes=i)
        out.append(UrlEntry(loc, when, None, "daily", 0.5, images, alternates, videos, news))
    return out


def one_round(hosts: int, urls: int, chunk: int, encoded: bool, extension: str = "none") -> float:
    """CPU seconds to take and flush every host's entries."""
    cfg = Config()
    settings = BatchSettings.of(cfg)
    normalizer = Normalizer(cfg.normalize)
    work = [(f"h{k}.example", entries(f"h{k}.example", urls, extension)) for k in range(hosts)]
    started = time.process_time()
    for host, listed in work:
        batch = UrlBatch(
            host, settings, normalizer.rules_for(host), HostReport(host), encoded=encoded
        )
        batch.at_home((host,))
        sitemap = f"https://{host}/sitemap.xml"
        for at in range(0, len(listed), chunk):
            batch.take(listed[at : at + chunk], sitemap)
            if batch.full:
                batch.flush()
        batch.flush()
        batch.close()
    return time.process_time() - started


def main() -> None:
    ap = argparse.ArgumentParser(prog="python benchmarks/bench_take.py", description=__doc__)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--urls", type=int, default=2000, help="URL entries per host")
    ap.add_argument("--chunk", type=int, default=64, help="entries per take")
    ap.add_argument("--dicts", action="store_true", help="records as dicts, not JSON lines")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--extension", default="none", choices=("none", "images", "alternates", "video", "news")
    )
    args = ap.parse_args()
    total = args.hosts * args.urls
    for k in range(args.rounds):
        cpu = one_round(args.hosts, args.urls, args.chunk, not args.dicts, args.extension)
        print(
            json.dumps(
                {
                    "round": k + 1,
                    "compiled_host_loop": compiled.load("_chost") is not None,
                    "urls": total,
                    "cpu_s": round(cpu, 3),
                    "us_per_url": round(cpu / total * 1e6, 3),
                }
            )
        )


if __name__ == "__main__":
    main()
