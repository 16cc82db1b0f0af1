"""Issue 49: the coverage figures as columns of the hosts table (``to_arrow``, Parquet,
CSV) and as a sortable table in the HTML run report, opened in headless Chromium."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

import harvester
from harvester.frames.hosts import COVERAGE_SHARES
from tests.integration.chromium import open_page
from tests.integration.coversites import known_site, wp_only_site
from tests.integration.harvesting import CONFIG, run_cli

if TYPE_CHECKING:
    from tests.integration.conftest import Sites

COLUMNS = [
    "coverage_completeness",
    "coverage_completeness_low",
    "coverage_completeness_high",
    "coverage_pages",
    "coverage_sampled",
    *(f"coverage_{name}" for name in COVERAGE_SHARES),
    "coverage_skipped",
]


async def test_hosts_table_has_the_coverage_block(sites: Sites, tmp_path: Path) -> None:
    known = await known_site(sites, "127.0.49.50")
    bare = await sites.start("127.0.49.51", {"/robots.txt": b"User-agent: *\n"})
    options: dict[str, Any] = {"allow_private": True, "retries": 0, "rate": 1000}
    # In a thread, with a loop of its own (as to_arrow does under Jupyter): this loop
    # keeps serving the sites meanwhile.
    _, hosts = await asyncio.to_thread(
        harvester.to_arrow,
        [known.origin, bare.origin],
        coverage=200,
        overrides={"discovery.probe_budget": 0},
        **options,
    )
    _, off = await asyncio.to_thread(harvester.to_arrow, [known.origin], **options)
    names = hosts.schema.names
    at = names.index(COLUMNS[0])
    assert names[at : at + len(COLUMNS)] == COLUMNS  # one contiguous block
    rows = {r["host"]: r for r in hosts.to_pylist()}
    row = rows[known.origin.removeprefix("http://")]
    assert row["coverage_completeness"] == 0.7
    assert row["coverage_completeness_low"] < 0.7 < row["coverage_completeness_high"]
    assert (row["coverage_pages"], row["coverage_sampled"]) == (200, 200)
    assert row["coverage_dead"] == 0.1
    assert row["coverage_redirect"] == 0.05
    assert row["coverage_skipped"] is None
    skipped = rows[bare.origin.removeprefix("http://")]
    assert skipped["coverage_skipped"] == "no sitemap read"
    assert skipped["coverage_completeness"] is None
    # Without the check: the same columns, all null (one schema for every run).
    assert off.schema == hosts.schema
    assert off.column("coverage_completeness").null_count == 1
    # Parquet keeps them; CSV (the flat columns) too.
    pq.write_table(hosts, tmp_path / "hosts.parquet")
    back = pq.read_table(tmp_path / "hosts.parquet")
    assert back.select(COLUMNS).equals(hosts.select(COLUMNS))
    buf = io.BytesIO()
    pcsv.write_csv(hosts.select(["host", *COLUMNS]), buf)
    text = buf.getvalue().decode()
    assert text.splitlines()[0].split(",")[1:] == [f'"{c}"' for c in COLUMNS]
    by = pcsv.read_csv(pa.BufferReader(buf.getvalue())).to_pylist()
    assert {r["host"]: r["coverage_dead"] for r in by}[row["host"]] == 0.1


# Click a header of the table shown, then report which copy shows and its hosts in order.
SORTS = """(async () => {
  const shown = () => [...document.querySelectorAll('.covsort')]
    .filter(d => d.getClientRects().length > 0);
  const rows = d => [...d.querySelectorAll('tr td:first-child')].map(td => td.textContent);
  const out = {};
  for (const key of ['first', 'dead', 'host', 'completeness']) {
    if (key !== 'first') {
      shown()[0].querySelector(`th a[href="#cov-by-${key}"]`).click();
      await new Promise(r => setTimeout(r, 50));
    }
    out[key] = shown().map(d => [d.id, rows(d)]);
  }
  return out;
})()"""
PROBES = {
    "scripts": "document.scripts.length",
    "sorts": SORTS,
    "spread": "document.getElementById('coverage-spread').textContent",
    "heading": "document.getElementById('coverage').textContent",
}


async def test_html_report_shows_a_sortable_coverage_table(sites: Sites, tmp_path: Path) -> None:
    known = await known_site(sites, "127.0.49.52")  # completeness 70 %, some dead
    wp = await wp_only_site(sites, "127.0.49.53")  # 80 %, none dead
    bare = await sites.start("127.0.49.54", {"/robots.txt": b"User-agent: *\n"})
    config = tmp_path / "c.toml"
    config.write_text(CONFIG)
    out = tmp_path / "out.jsonl"
    code, _, err = await run_cli(
        *(s.origin for s in (known, wp, bare)),
        "--config",
        str(config),
        "-o",
        str(out),
        "--coverage",
        "20",
        "--html-report",
    )
    assert code == 0, err
    page = await open_page(Path(f"{out}.report.html"), tmp_path / "profile", PROBES)
    assert page.errors == []
    assert page.probes["scripts"] == 0  # sorted by CSS (:target), the page stays script-free
    k, w = (s.origin.removeprefix("http://") for s in (known, wp))
    sorts = page.probes["sorts"]
    assert sorts["first"] == [["cov-by-completeness", [k, w]]]  # lowest completeness first
    assert sorts["dead"] == [["cov-by-dead", [k, w]]]  # most dead first (a tie: by host)
    assert sorts["host"] == [["cov-by-host", sorted([k, w])]]
    assert sorts["completeness"] == sorts["first"]
    assert "2 hosts checked, 1 skipped" in page.probes["heading"]
    assert "median 75%" in page.probes["spread"]
    assert "70%" in page.text
    assert "80%" in page.text
