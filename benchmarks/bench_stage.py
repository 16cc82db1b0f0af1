"""CPU per URL of a worker's reading and batching stage, on bench_mix's corpora (issue 52).

In: ``--hosts`` (bench_mix's corpora, generated or reused), ``--repeat``, ``--limit``
(the first N hosts only: small enough to run under ``valgrind --tool=callgrind``).
For each corpus (``many``: plain ``<url>`` entries; ``mixed``: the same URLs with
images, alternates and news), every urlset file of every host is read from disk by
harvester's ``SitemapReader`` in 64 KiB pieces as served (a gzip file gunzipped by
the reader; the pipeline's reader: default settings, ``dedupe=False``), and each
piece's entries go to the host's ``UrlBatch`` (JSON lines, flushed whenever full),
as a worker does with a response's body, without the network, the event loop, the
audit's count or the state file. Out: one line per corpus: URLs, CPU seconds
(``time.process_time``, best of ``--repeat``) and CPU µs per URL, then the mixed /
plain ratio. The stage is about half of a whole run's CPU (the rest: ``bench_mix``);
its instructions are what callgrind compares between builds.

Usage::

    python -m benchmarks.bench_stage --hosts 300
    valgrind --tool=callgrind python -m benchmarks.bench_stage --hosts 300 --limit 40 --repeat 1
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from benchmarks.webgen import DEFAULT_PORT, default_out_dir, generate, load_manifest
from harvester.config import Config
from harvester.crawl.batch import UrlBatch
from harvester.crawl.report import HostReport
from harvester.crawl.settings import BatchSettings
from harvester.crawl.urlloop import authority
from harvester.reader.sitemap import SitemapReader
from harvester.urls.normalize import Normalizer

if TYPE_CHECKING:
    from pathlib import Path

CHUNK = 65_536  # bytes a piece (fetch.chunk_size's default)


def urlsets(corpus: Path, limit: int = 0) -> list[tuple[str, list[tuple[str, bytes]]]]:
    """Each host's name and its urlset files (sitemap URL, bytes as served), in
    manifest order; the first ``limit`` hosts (0: all)."""
    manifest = load_manifest(corpus)
    port = manifest["port"]
    hosts = manifest["hosts"][:limit] if limit else manifest["hosts"]
    out = []
    for host in hosts:
        files = [
            (
                f"http://{host['address']}:{port}{f['path']}",
                (corpus / f["file"]).read_bytes(),
            )
            for f in host["files"]
            if f["kind"] == "urlset"
        ]
        out.append((host["address"], files))
    return out


def one_pass(work: list[tuple[str, list[tuple[str, bytes]]]], cfg: Config) -> tuple[int, float]:
    """Read and batch every host of ``work``: (URLs the batches kept, CPU seconds)."""
    settings, normalizer = BatchSettings.of(cfg), Normalizer(cfg.normalize)
    urls = 0
    started = time.process_time()
    for host, files in work:
        batch = UrlBatch(host, settings, normalizer.rules_for(host), HostReport(host), encoded=True)
        for url, body in files:
            batch.at_home((authority(url),))
            reader = SitemapReader(url, cfg.reader, dedupe=False)  # (gunzips a .gz itself)
            for at in range(0, len(body), CHUNK):
                batch.take(reader.feed(body[at : at + CHUNK]), url)
                if batch.full:
                    urls += _flushed(batch)
            batch.take(reader.finish(), url)
        urls += _flushed(batch)
        batch.close()
    return urls, time.process_time() - started


def _flushed(batch: UrlBatch) -> int:
    """Flush ``batch``: the URLs it held."""
    out = batch.flush()
    return 0 if out is None else len(out.fingerprints)


def measure(profile: str, hosts: int, repeat: int, limit: int, port: int) -> dict[str, Any]:
    """The best of ``repeat`` passes over one corpus."""
    corpus = default_out_dir(profile, hosts, 1, port)
    generate(profile, corpus, hosts=hosts, port=port)
    work = urlsets(corpus, limit)
    cfg = Config()
    runs = [one_pass(work, cfg) for _ in range(repeat)]
    urls, cpu = min(runs, key=lambda r: r[1])
    return {"profile": profile, "urls": urls, "cpu_s": cpu, "us_per_url": cpu / urls * 1e6}


def main(argv: list[str] | None = None) -> int:
    """Measure both corpora, print the lines; 0 done."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_stage", description=__doc__)
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=int, default=0, help="the first N hosts only")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT, help="the corpora's port")
    args = ap.parse_args(argv)
    found = {}
    for profile in ("many", "mixed"):
        found[profile] = one = measure(profile, args.hosts, args.repeat, args.limit, args.port)
        print(
            f"{profile}: {one['urls']:,} URLs, {one['cpu_s']:.2f} CPU s, "
            f"{one['us_per_url']:.2f} µs/URL (reading and batching)"
        )
    ratio = found["mixed"]["us_per_url"] / found["many"]["us_per_url"]
    print(f"mixed / plain: {ratio:.2f} x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
