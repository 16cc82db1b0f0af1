"""Output formats end to end: the same loopback web harvested as JSON Lines, CSV and Parquet.

Every record read back from CSV and Parquet must equal the JSON Lines run's
(``tests/roundtrip.py`` maps them back); a run killed with ``kill -9`` and
resumed with its state file writes every URL exactly once in each format.
The web serves the extension sitemaps of the conformance corpus (images,
videos, news, hreflang, real sites' files) and one of odd locs, on loopback.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import signal
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harvester.run.shards import run_job
from tests.integration.conftest import Reply, fast_config
from tests.roundtrip import read_csv, read_jsonl, read_parquet

if TYPE_CHECKING:
    from tests.integration.conftest import Site, Sites

CASES = Path(__file__).parent.parent / "data" / "conformance" / "cases"
SERVED = [
    "ext_images.xml",
    "ext_video.xml",
    "ext_news.xml",
    "ext_xhtml_links.xml",
    "ext_combined_real_hebdenbridge.xml",
    "ext_news_nyt_real.xml",
    "ext_video_wapo_real.xml",
]
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
READERS = {"jsonl": read_jsonl, "csv": read_csv, "parquet": read_parquet}


def odd_urlset(site: Site) -> bytes:
    """Locs with a comma, quotes, an apostrophe and non-ASCII; lastmods, priorities."""
    entries = []
    for i, path in enumerate(["/a,b", "/say-&quot;hi&quot;", "/it&apos;s", "/caf\u00e9", "/plain"]):
        entries.append(
            f"<url><loc>{site.url(path)}?n={i}</loc>"
            f"<lastmod>2024-0{i + 1}-02T03:04:05+02:00</lastmod>"
            f"<changefreq>daily</changefreq><priority>0.{i + 1}</priority></url>"
        )
    return f'<?xml version="1.0"?><urlset {NS}>{"".join(entries)}</urlset>'.encode()


async def extension_site(sites: Sites, host: str) -> Site:
    """robots.txt → the corpus's extension sitemaps (one gzipped) and ``odd_urlset``."""
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)
    for name in SERVED:
        routes[f"/{name}"] = (CASES / name).read_bytes()
    routes["/odd.xml.gz"] = Reply(gzip.compress(odd_urlset(site)))
    names = [*SERVED, "odd.xml.gz"]
    routes["/robots.txt"] = "".join(f"Sitemap: {site.url('/' + n)}\n" for n in names).encode()
    return site


def key(records: list[dict[str, Any]]) -> Counter[str]:
    """The records as a multiset (hosts run concurrently, so the order may differ)."""
    return Counter(json.dumps(r, sort_keys=True) for r in records)


async def harvest_as(fmt: str, origins: list[str], tmp_path: Path, **cfg: Any) -> Path:
    """One in-process run (state beside the output); the output's path."""
    out = tmp_path / f"urls.{fmt}"
    config = fast_config(**cfg)
    run = await asyncio.to_thread(run_job, config, origins, str(out), progress=False)
    assert run.complete
    assert not Path(f"{out}.part").exists()  # noqa: ASYNC240
    return out


async def test_every_format_holds_the_records_of_the_jsonl_run(
    sites: Sites, tmp_path: Path
) -> None:
    a = await extension_site(sites, "127.0.0.41")
    b = await extension_site(sites, "127.0.0.42")
    origins = [a.origin, b.origin]
    outputs = {fmt: await harvest_as(fmt, origins, tmp_path) for fmt in READERS}
    expected = read_jsonl(str(outputs["jsonl"]))
    # The web has what the formats must carry: every extension, events, nulls, odd locs.
    assert len(expected) > 100
    for field in ("images", "videos", "news", "alternates", "event"):
        assert any(field in r for r in expected), field
    assert any(r["lastmod"] is None for r in expected)
    assert any('"' in r["loc"] and "," not in r["loc"] for r in expected)
    assert any("," in r["loc"] for r in expected)
    for fmt in ("csv", "parquet"):
        assert key(READERS[fmt](str(outputs[fmt]))) == key(expected), fmt
    table = pq.read_table(outputs["parquet"])
    assert table.schema.field("lastmod").type == pa.timestamp("us", tz="UTC")
    assert pa.types.is_dictionary(table.schema.field("event").type)


async def test_workers_write_parquet_and_csv_through_the_cli(sites: Sites, tmp_path: Path) -> None:
    a = await extension_site(sites, "127.0.0.43")
    b = await extension_site(sites, "127.0.0.44")
    config = tmp_path / "harvester.toml"
    config.write_text(
        '[fetch]\nallow = ["127.0.0.0/8"]\n[politeness.default]\nrate = 100.0\n'
        "[run]\nuvloop = false\n"
    )
    outputs = {
        "jsonl": tmp_path / "urls.jsonl",
        "parquet": tmp_path / "urls.parquet",
        "csv": tmp_path / "urls.out",  # an extension that says nothing: --format does
    }
    for fmt, out in outputs.items():
        args = ["-o", str(out), "--workers", "2", "--config", str(config), "--no-progress"]
        if fmt == "csv":
            args += ["--format", "csv"]
        proc = await _cli(a.origin, b.origin, *args)
        _out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
        assert proc.returncode == 0, err.decode()
    expected = read_jsonl(str(outputs["jsonl"]))
    assert key(read_parquet(str(outputs["parquet"]))) == key(expected)
    assert key(read_csv(str(outputs["csv"]))) == key(expected)
    query = f"select host, count(*) from '{outputs['parquet']}' group by 1 order by 1"
    counts = duckdb.connect().execute(query).fetchall()
    assert counts == sorted(Counter(r["host"] for r in expected).items())


async def test_parquet_to_stdout_is_a_usage_error(tmp_path: Path) -> None:
    proc = await _cli("example.com", "--format", "parquet", "--no-state")
    _out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 2
    assert "Parquet cannot go to standard output" in err.decode()


# -- kill -9 and resume, per format (as test_incremental does for JSON Lines) -------------

KILL_CONFIG = """
[fetch]
allow = ["127.0.0.0/8"]
retries = 0
connect_timeout = 2.0
[politeness.default]
rate = 6.0
[run]
uvloop = false
workers = 2
hosts_in_flight = 2
[state]
commit_interval = 0.05
"""


async def slow_sites(sites: Sites, count: int, per_file: int) -> tuple[list[Site], set[str]]:
    """``count`` hosts on 127.0.0.45, each robots.txt → three urlsets (6 files/s per host)."""
    expected: set[str] = set()
    out: list[Site] = []
    for _ in range(count):
        routes: dict[str, Any] = {}
        site = await sites.start("127.0.0.45", routes)
        lines = []
        for name in ("x", "y", "z"):
            locs = [site.url(f"/{name},{i}") for i in range(per_file)]  # (commas for CSV)
            expected.update(locs)
            body = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
            routes[f"/{name}.xml"] = f'<?xml version="1.0"?><urlset {NS}>{body}</urlset>'.encode()
            lines.append(f"Sitemap: {site.url(f'/{name}.xml')}")
        routes["/robots.txt"] = ("\n".join(lines) + "\n").encode()
        out.append(site)
    return out, expected


async def _cli(*args: str, session: bool = False) -> Any:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harvester",
        "run",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=session,  # its own process group: kill -9 reaches its workers too
    )


async def kill_after_a_commit(args: tuple[str, ...], state: Path) -> int:
    """Start ``harvester run``, kill -9 its process group once it committed; the mark."""
    proc = await _cli(*args, session=True)
    committed = 0
    try:
        for _ in range(1000):  # until the run committed some records, at most ~20 s
            await asyncio.sleep(0.02)
            if state.exists():  # noqa: ASYNC240
                try:
                    with sqlite3.connect(f"file:{state}?mode=ro", uri=True) as db:
                        committed = db.execute("SELECT max(output_bytes) FROM runs").fetchone()[0]
                except sqlite3.Error:
                    continue
            if committed:
                break
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
    assert committed, "the run never committed anything before it was killed"
    return int(committed)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
async def test_kill_9_then_resume_writes_every_url_once(
    sites: Sites, tmp_path: Path, fmt: str
) -> None:
    hosts, expected = await slow_sites(sites, 12, 300)
    domains = tmp_path / "domains.txt"
    domains.write_text("".join(f"{h.origin}\n" for h in hosts))
    config = tmp_path / "harvester.toml"
    config.write_text(KILL_CONFIG)
    out = tmp_path / f"urls.{fmt}"
    state = tmp_path / f"urls.{fmt}.state.sqlite"  # the default: beside the output
    args = ("-i", str(domains), "-o", str(out), "--config", str(config), "--emit", "delta")

    committed = await kill_after_a_commit(args, state)
    assert not out.exists()
    part = Path(f"{out}.part")
    if fmt == "parquet":  # the mark counts complete parts
        assert len(list(part.glob("part-*.parquet"))) >= committed  # noqa: ASYNC240
    else:  # the mark is a length
        assert part.stat().st_size >= committed  # noqa: ASYNC240

    proc = await _cli(*args)
    _stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, stderr.decode()
    assert "resuming unfinished run" in stderr.decode()
    assert not part.exists()  # noqa: ASYNC240
    records = READERS[fmt](str(out))
    urls = [r["loc"] for r in records]
    assert len(urls) == len(set(urls))  # nothing twice ...
    assert set(urls) == expected  # ... and nothing lost
    assert {r["event"] for r in records} == {"new"}


async def test_a_parquet_run_resumed_into_another_file_splits_the_urls(
    sites: Sites, tmp_path: Path
) -> None:
    hosts, expected = await slow_sites(sites, 12, 300)
    domains = tmp_path / "domains.txt"
    domains.write_text("".join(f"{h.origin}\n" for h in hosts))
    config = tmp_path / "harvester.toml"
    config.write_text(KILL_CONFIG)
    state = tmp_path / "state.sqlite"
    common = ("-i", str(domains), "--config", str(config), "--state", str(state))
    first = tmp_path / "first.parquet"
    await kill_after_a_commit(("-o", str(first), *common), state)

    second = tmp_path / "second.parquet"
    proc = await _cli("-o", str(second), *common)
    _stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, stderr.decode()
    # The first run's parts, cut back to what it committed, and the second file: each URL once.
    urls = [r["loc"] for r in read_parquet(f"{first}.part")] + [
        r["loc"] for r in read_parquet(str(second))
    ]
    assert len(urls) == len(set(urls))
    assert set(urls) == expected


async def test_resuming_in_another_format_is_a_usage_error_naming_both(
    sites: Sites, tmp_path: Path
) -> None:
    """Issue 50 item 3: a killed ``-o urls.jsonl`` run resumed with ``--format csv`` wrote
    CSV rows after its JSON lines. The format is part of the run (in the state)."""
    hosts, expected = await slow_sites(sites, 12, 300)
    domains = tmp_path / "domains.txt"
    domains.write_text("".join(f"{h.origin}\n" for h in hosts))
    config = tmp_path / "harvester.toml"
    config.write_text(KILL_CONFIG)
    out = tmp_path / "urls.jsonl"
    state = tmp_path / "urls.jsonl.state.sqlite"
    args = ("-i", str(domains), "-o", str(out), "--config", str(config))
    await kill_after_a_commit(args, state)
    part = Path(f"{out}.part")
    before = part.read_bytes()  # noqa: ASYNC240

    proc = await _cli(*args, "--format", "csv")
    _stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 2, stderr.decode()
    message = stderr.decode()
    assert "jsonl" in message
    assert "csv" in message
    assert "--format jsonl" in message  # what to give instead
    assert part.read_bytes() == before  # noqa: ASYNC240 (not cut, not appended to)

    proc = await _cli(*args)  # its own format again: resumed, every URL once
    _stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, stderr.decode()
    urls = [r["loc"] for r in read_jsonl(str(out))]
    assert len(urls) == len(set(urls))
    assert set(urls) == expected
