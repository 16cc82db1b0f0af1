"""What the site allows, per URL (issue 48), through a whole run on a loopback site:
each record's ``robots`` and ``tdm_reserved`` in JSON Lines, CSV and Parquet (the
lines the worker's loop writes), the same as the in-process records."""

from __future__ import annotations

import csv
import json
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from harvester.run.shards import run_job
from tests.integration.conftest import fast_config
from tests.integration.harvesting import collect, in_thread
from tests.integration.webs import urlset

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.conftest import Site, Sites

ROBOTS = "User-agent: *\nDisallow: /private/\nAllow: /private/open$\nDisallow: /*.pdf$\n"
TDMREP = [
    {"location": "/news/free/", "tdm-reservation": 0},
    {"location": "/news/", "tdm-reservation": 1, "tdm-policy": "https://e.org/p.json"},
    {"location": "/*.pdf$", "tdm-reservation": 1},
]
WANT = {
    "/a": ("allowed", None),
    "/private/x": ("disallowed", None),
    "/private/open": ("allowed", None),
    "/doc.pdf": ("disallowed", True),
    "/news/1": ("allowed", True),
    "/news/free/1": ("allowed", False),  # the first rule in file order that matches
    "/news/%e2%82%ac": ("allowed", True),  # an escape: the matcher's slow path
}
POLICY = {"policy.verdicts": True, "policy.tdmrep": True}


async def site(sites: Sites) -> Site:
    routes: dict[str, Any] = {}
    s = await sites.start("127.0.0.2", routes)
    routes.update(
        {
            "/robots.txt": (ROBOTS + f"Sitemap: {s.url('/sitemap.xml')}\n").encode(),
            "/sitemap.xml": urlset(*(s.url(p) for p in WANT)),
            "/.well-known/tdmrep.json": json.dumps(TDMREP).encode(),
        }
    )
    return s


def fields(rows: list[dict[str, Any]], origin: str) -> dict[str, tuple[Any, Any]]:
    return {r["loc"].removeprefix(origin): (r["robots"], r["tdm_reserved"]) for r in rows}


async def test_each_record_says_what_the_site_allows_in_every_format(
    sites: Sites, tmp_path: Path
) -> None:
    s = await site(sites)
    records, _ = await collect([s.origin], **POLICY)
    assert fields(records, s.origin) == WANT
    for ext in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"urls.{ext}"
        await in_thread(run_job, fast_config(**POLICY), [s.origin], str(out), progress=False)
        if ext == "jsonl":
            rows = [json.loads(line) for line in out.read_text().splitlines()]
        elif ext == "csv":
            with out.open(newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
            for row in rows:
                row["tdm_reserved"] = json.loads(row["tdm_reserved"] or "null")
        else:
            rows = pq.read_table(out).to_pylist()
        assert fields(rows, s.origin) == WANT, ext
    assert s.hits("/.well-known/tdmrep.json") == 4  # one per run, none per URL


async def test_with_a_state_file_each_line_has_its_event_and_what_the_site_allows(
    sites: Sites, tmp_path: Path
) -> None:
    # With a state file, --emit/--since label each line with its event: the fields
    # follow it (a new host: the loop writes both; a known one: the event goes in at
    # the flush), in both runs the same values.
    s = await site(sites)
    state = {"state.path": str(tmp_path / "state.sqlite")}
    for run, emit in enumerate(("all", "all", "new")):
        out = tmp_path / f"run{run}.jsonl"
        cfg = fast_config(**POLICY, **state, **{"output.emit": emit})
        await in_thread(run_job, cfg, [s.origin], str(out), progress=False)
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        if emit == "new":
            assert rows == []  # nothing new on the third run
            continue
        assert fields(rows, s.origin) == WANT, run
        events = {r["event"] for r in rows}
        assert events == {"new"} if run == 0 else events == {"unverified"}, run  # (no lastmod)


async def test_respect_robots_keeps_the_allowed_with_their_reservations(
    sites: Sites, tmp_path: Path
) -> None:
    s = await site(sites)
    out = tmp_path / "urls.jsonl"
    cfg = fast_config(**POLICY, **{"policy.respect_robots": True})
    await in_thread(run_job, cfg, [s.origin], str(out), progress=False)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert fields(rows, s.origin) == {p: v for p, v in WANT.items() if v[0] == "allowed"}


def _seed_routes(s: Site, routes: dict[str, Any], extra: int) -> None:
    # A seed sitemap: the host's first contact, so tdmrep.json is asked only after it
    # answered; ``extra`` more URLs make the sitemap span several batches (512 records).
    paths = [*WANT, *(f"/news/n{i}" for i in range(extra))]
    routes["/first.xml"] = urlset(*(s.url(p) for p in paths))
    routes["/.well-known/tdmrep.json"] = json.dumps(TDMREP).encode()


async def test_a_seed_sitemaps_records_carry_the_tdmrep_read_after_it(
    sites: Sites, tmp_path: Path
) -> None:
    routes: dict[str, Any] = {}
    s = await sites.start("127.0.0.2", routes)
    _seed_routes(s, routes, 1500)
    want = {p: v[1] for p, v in WANT.items()} | {f"/news/n{i}": True for i in range(1500)}
    records, _ = await collect([s.url("/first.xml")], **POLICY)
    assert {r["loc"].removeprefix(s.origin): r["tdm_reserved"] for r in records} == want
    # JSON lines of the compiled loop; with a state file and --emit new (each line's
    # event label, the fields after the loop); CSV (records as dicts).
    state = {"state.path": str(tmp_path / "state.sqlite"), "output.emit": "new"}
    for name, cfg in (("urls.jsonl", {}), ("new.jsonl", state), ("urls.csv", {})):
        out = tmp_path / name
        run = fast_config(**POLICY, **cfg)
        await in_thread(run_job, run, [s.url("/first.xml")], str(out), progress=False)
        if name.endswith(".csv"):
            with out.open(newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
            for row in rows:
                row["tdm_reserved"] = json.loads(row["tdm_reserved"] or "null")
        else:
            rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert {r["loc"].removeprefix(s.origin): r["tdm_reserved"] for r in rows} == want, name
        # robots.txt was not read (a seed sitemap): every verdict unknown, none dropped.
        assert {r["robots"] for r in rows} == {"unknown"}, name
        assert all(r.get("event", "new") == "new" for r in rows), name
    assert [h.path for h in s.log][:2] == ["/first.xml", "/.well-known/tdmrep.json"]
