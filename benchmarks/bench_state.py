"""State benchmark (issue 6): the URL ledger at 10 million URLs, and a delta run over 1 million.

Three measurements, each printed as a JSON line, then a markdown table:

* ``ledger_upsert``: ``StateStore.add_urls`` as the writer calls it (batches of 10,000
  ``LedgerRow``s, packed into chunks here in the same process, where a run packs them in
  the workers; a commit every 100,000 URLs, as ``state.commit_interval`` does about every
  2 s at pipeline speed) into a fresh state file until it holds ``--urls`` URLs (10
  million) over hosts of 10,000 URLs; URLs/s per million and overall, process RSS sampled
  after each million, and the file's size. Side by side: ``raw_chunk_insert``, the same
  chunks packed beforehand through a bare ``INSERT`` (SQLite's limit for them), and
  ``raw_sqlite_insert``, the same URLs a row each with a bare ``INSERT`` (schema 2's
  table: what the chunks replaced).
* ``ledger_lookup``: ``LedgerReader.events`` (what each worker does per batch of 256
  records) over 1 million ledger URLs: lookups/s.
* ``delta_unchanged``: ``harvester run --emit delta`` twice against one loopback host that
  lists 1 million URLs (an index of 20 gzip children of 50,000 URLs, served by aiohttp's
  static handler, which answers If-None-Match / If-Modified-Since with 304): first run
  (everything new) and second run (nothing changed): wall seconds, records written, sitemap
  bodies the server sent (counted server-side), and the state file's size.

Usage::

    python -m benchmarks.bench_state                  # 10 M ledger, 1 M-URL delta run
    python -m benchmarks.bench_state --urls 2000000 --site-urls 200000   # quick
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from pathlib import Path
from typing import Any

from aiohttp import web

from harvester.state.ledger import LedgerReader
from harvester.state.rows import LedgerRow, LedgerRows, signed
from harvester.state.store import StateStore

PER_HOST = 10_000
BATCH = 10_000
COMMIT_EVERY = 100_000


def rss_mb() -> float:
    """Current resident set of this process, MB (10**6 bytes)."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _rows(host: int, rnd: random.Random) -> list[LedgerRow]:
    sitemap = f"https://h{host}.example/sitemap-{host % 7}.xml"
    return [
        (
            signed(rnd.getrandbits(64)),
            f"https://h{host}.example/articles/{i}/a-typical-slug-of-some-length",
            sitemap,
            1_700_000_000 + i,
        )
        for i in range(PER_HOST)
    ]


def ledger_upsert(path: Path, urls: int) -> dict[str, Any]:
    rnd = random.Random(1)
    store = StateStore(str(path))
    store.start_run(emit="delta", output=None)
    per_million: list[dict[str, float]] = []
    started = last = time.perf_counter()
    done = since_commit = 0
    host = 0
    while done < urls:
        rows = _rows(host, rnd)
        host += 1
        for start in range(0, len(rows), BATCH):
            store.add_urls(f"h{host}.example", LedgerRows.of(rows[start : start + BATCH]))
        done += len(rows)
        since_commit += len(rows)
        if since_commit >= COMMIT_EVERY:
            store.commit(None)
            since_commit = 0
        if done % 1_000_000 == 0:
            now = time.perf_counter()
            per_million.append(
                {"urls": done, "rows_per_s": round(1_000_000 / (now - last)), "rss_mb": rss_mb()}
            )
            last = now
            print(json.dumps({"progress": per_million[-1]}), file=sys.stderr, flush=True)
    store.commit(None)
    seconds = time.perf_counter() - started
    store.finish_run("complete")
    store.close()
    return {
        "step": "ledger_upsert",
        "urls": done,
        "seconds": round(seconds, 2),
        "rows_per_s": round(done / seconds),
        "per_million": per_million,
        "rss_mb_last": per_million[-1]["rss_mb"] if per_million else rss_mb(),
        "state_mb": round(path.stat().st_size / 1e6, 1),
    }


def raw_chunk_insert(path: Path, urls: int) -> dict[str, Any]:
    """The same URLs' chunks, packed beforehand, through a bare INSERT: SQLite's limit.

    (``ledger_upsert`` packs in the same process; in a run the workers pack.)
    """
    rnd = random.Random(1)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute(
        "CREATE TABLE url_chunks (id INTEGER PRIMARY KEY, host_id INTEGER NOT NULL, "
        "sitemap_id INTEGER NOT NULL, run INTEGER NOT NULL, n INTEGER NOT NULL, "
        "fps BLOB NOT NULL, lastmods BLOB NOT NULL, urls BLOB NOT NULL)"
    )
    packed: list[LedgerRows] = []
    done = 0
    while done < urls:
        rows = _rows(len(packed), rnd)
        packed.append(LedgerRows.of(rows))
        done += len(rows)
    started = time.perf_counter()
    db.execute("BEGIN")
    for host, chunks in enumerate(packed):
        db.executemany(
            "INSERT INTO url_chunks (host_id, sitemap_id, run, n, fps, lastmods, urls) "
            "VALUES (?, 1, 1, ?, ?, ?, ?)",
            [
                (host, n, *blobs)
                for (_, n), blobs in zip(chunks.sitemaps, chunks.chunks, strict=True)
            ],
        )
        if (host + 1) * PER_HOST % COMMIT_EVERY == 0:
            db.execute("COMMIT")
            db.execute("BEGIN")
    return _finish(db, "raw_chunk_insert", done, started)


def raw_sqlite_insert(path: Path, urls: int) -> dict[str, Any]:
    """The same URLs as schema 2 stored them (a row each, bare INSERT): what chunks replace."""
    rnd = random.Random(1)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA cache_size = -16384")
    db.execute(
        "CREATE TABLE urls (host_id INTEGER NOT NULL, fp INTEGER NOT NULL, url TEXT NOT NULL,"
        " sitemap_id INTEGER NOT NULL, first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL,"
        " lastmod INTEGER, removed INTEGER, PRIMARY KEY (host_id, fp)) WITHOUT ROWID"
    )
    started = time.perf_counter()
    done = 0
    host = 0
    db.execute("BEGIN")
    while done < urls:
        rows = _rows(host, rnd)
        host += 1
        db.executemany(
            "INSERT INTO urls VALUES (?, ?, ?, ?, 1, 1, ?, NULL)",
            [(host, fp, url, host % 7, lastmod) for fp, url, _s, lastmod in rows],
        )
        done += len(rows)
        if done % COMMIT_EVERY == 0:
            db.execute("COMMIT")
            db.execute("BEGIN")
    return _finish(db, "raw_sqlite_insert", done, started)


def _finish(db: sqlite3.Connection, step: str, done: int, started: float) -> dict[str, Any]:
    """Commit and close a raw insert; its figures."""
    db.execute("COMMIT")
    seconds = time.perf_counter() - started
    db.close()
    return {
        "step": step,
        "urls": done,
        "seconds": round(seconds, 2),
        "rows_per_s": round(done / seconds),
        "rss_mb_last": rss_mb(),
    }


def ledger_lookup(path: Path, urls: int) -> dict[str, Any]:
    """Worker-side event lookups in batches of 256, for the first ``urls`` ledger URLs."""
    rnd = random.Random(1)
    reader = LedgerReader(str(path), run_id=2)
    started = time.perf_counter()
    done = 0
    host = 0
    found = 0
    while done < urls:
        rows = _rows(host, rnd)
        host += 1
        memory = reader.host(f"h{host}.example")
        for start in range(0, len(rows), 256):
            part = rows[start : start + 256]
            lastmods = array("q", [r[3] or 0 for r in part])
            events = reader.events(memory, array("q", [r[0] for r in part]), lastmods)
            found += sum(1 for e in events if e == "unchanged")
        done += len(rows)
    seconds = time.perf_counter() - started
    reader.close()
    return {
        "step": "ledger_lookup",
        "urls": done,
        "seconds": round(seconds, 2),
        "lookups_per_s": round(done / seconds),
        "found_unchanged": found,
    }


# -- a delta run over an unchanged 1-million-URL site -----------------------------------


def write_site(root: Path, urls: int, port: int) -> None:
    per_file = 50_000
    children = (urls + per_file - 1) // per_file
    origin = f"http://127.0.0.1:{port}"
    root.mkdir(parents=True, exist_ok=True)
    items = []
    for c in range(children):
        body = "".join(
            f"<url><loc>{origin}/p/{c}/{i}/an-article-about-something</loc>"
            f"<lastmod>2024-05-{1 + i % 28:02d}</lastmod></url>"
            for i in range(min(per_file, urls - c * per_file))
        )
        doc = (
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{body}</urlset>"
        ).encode()
        (root / f"s{c}.xml.gz").write_bytes(gzip.compress(doc, 6))
        items.append(f"<sitemap><loc>{origin}/s{c}.xml.gz</loc></sitemap>")
    (root / "index.xml").write_text(
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(items)
        + "</sitemapindex>"
    )
    (root / "robots.txt").write_text(f"Sitemap: {origin}/index.xml\n")


class StaticServer(threading.Thread):
    """aiohttp's static handler on 127.0.0.1 in a thread; counts 200 bodies and 304s."""

    def __init__(self, root: Path) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.port = 0
        self.bodies = 0
        self.not_modified = 0
        self.ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None

    def run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()

        async def count(request: web.Request, response: web.StreamResponse) -> None:
            # On prepare: the static handler decides 200 or 304 only then.
            if request.path.endswith((".xml", ".gz")):
                if response.status == 304:
                    self.not_modified += 1
                elif response.status == 200:
                    self.bodies += 1

        app = web.Application()
        app.on_response_prepare.append(count)
        app.router.add_static("/", self.root)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self.port)
        await site.start()
        self.ready.set()
        await self._stopping.wait()
        await runner.cleanup()

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        self.join(timeout=10)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def delta_unchanged(work: Path, urls: int, workers: int) -> list[dict[str, Any]]:
    port = _free_port()
    site = work / "site"
    write_site(site, urls, port)
    server = StaticServer(site)
    server.port = port
    server.start()
    server.ready.wait(10)
    state = work / "state.sqlite"
    results: list[dict[str, Any]] = []
    try:
        for run in ("first", "second"):
            before = (server.bodies, server.not_modified)
            out = work / f"{run}.jsonl"
            cmd = [sys.executable, "-m", "harvester", "run", f"http://127.0.0.1:{port}"]
            cmd += ["-o", str(out), "--state", str(state), "--emit", "delta", "--no-progress"]
            cmd += ["--allow", "127.0.0.0/8", "--rate", "100", "--workers", str(workers)]
            started = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            seconds = time.perf_counter() - started
            if proc.returncode != 0:
                raise RuntimeError(f"harvester run failed: {proc.stderr[-2000:]}")
            with out.open("rb") as fh:
                records = sum(1 for _ in fh)
            results.append(
                {
                    "step": f"delta_unchanged_{run}",
                    "site_urls": urls,
                    "seconds": round(seconds, 2),
                    "records": records,
                    "sitemap_bodies": server.bodies - before[0],
                    "not_modified": server.not_modified - before[1],
                    "state_mb": round(state.stat().st_size / 1e6, 1),
                }
            )
            print(json.dumps(results[-1]), flush=True)
    finally:
        server.stop()
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--urls", type=int, default=10_000_000, help="ledger size (default 10 M)")
    ap.add_argument("--site-urls", type=int, default=1_000_000, help="URLs of the delta site")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--dir", help="work directory (default: a temporary one, removed)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-state-") as tmp:
        work = Path(args.dir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        results: list[dict[str, Any]] = []
        results.append(ledger_upsert(work / "ledger.sqlite", args.urls))
        print(json.dumps(results[-1]), flush=True)
        results.append(raw_chunk_insert(work / "chunks.sqlite", min(args.urls, 2_000_000)))
        print(json.dumps(results[-1]), flush=True)
        results.append(raw_sqlite_insert(work / "raw.sqlite", min(args.urls, 2_000_000)))
        print(json.dumps(results[-1]), flush=True)
        results.append(ledger_lookup(work / "ledger.sqlite", min(args.urls, 1_000_000)))
        print(json.dumps(results[-1]), flush=True)
        results.extend(delta_unchanged(work, args.site_urls, args.workers))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1000
    print()
    print("| step | URLs | seconds | rate | memory | notes |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for r in results:
        step = r["step"]
        if step == "ledger_upsert":
            # (Under a million URLs there is no per-million sample: the last RSS only.)
            rss = [m["rss_mb"] for m in r["per_million"]] or [r["rss_mb_last"]]
            slowest = min((m["rows_per_s"] for m in r["per_million"]), default=r["rows_per_s"])
            print(
                f"| {step} | {r['urls']:,} | {r['seconds']} | {r['rows_per_s']:,} rows/s "
                f"| RSS {min(rss):.0f}-{max(rss):.0f} MB | slowest million "
                f"{slowest:,} rows/s; state file {r['state_mb']} MB |"
            )
        elif step == "raw_chunk_insert":
            print(
                f"| {step} | {r['urls']:,} | {r['seconds']} | {r['rows_per_s']:,} URLs/s | "
                "| the same chunks packed beforehand, plain INSERT (the SQLite limit) |"
            )
        elif step == "raw_sqlite_insert":
            print(
                f"| {step} | {r['urls']:,} | {r['seconds']} | {r['rows_per_s']:,} rows/s | "
                "| a row per URL, plain INSERT (schema 2's table, before chunks) |"
            )
        elif step == "ledger_lookup":
            print(
                f"| {step} | {r['urls']:,} | {r['seconds']} | {r['lookups_per_s']:,} URLs/s "
                f"| | worker-side events, batches of 256 |"
            )
        else:
            print(
                f"| {step} | {r['site_urls']:,} | {r['seconds']} | | state {r['state_mb']} MB "
                f"| {r['records']:,} records, {r['sitemap_bodies']} bodies, "
                f"{r['not_modified']} x 304 |"
            )
    print(f"\nbench process peak RSS {peak:.0f} MB (ledger upserts included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
