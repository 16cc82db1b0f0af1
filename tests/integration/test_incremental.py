"""Incremental runs against loopback sites that change between runs (issue 6).

Every test uses a real SQLite state file and real HTTP: a ``ChangingSite``
serves robots.txt → an index → two urlsets built from a model the test edits
between runs, with ETag, Last-Modified or no validators, and counts on the
server side every sitemap body it sends (a 304 sends none).
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp import web

from harvester.cli import main
from harvester.run.shards import run_job
from tests.integration.conftest import Reply, fast_config
from tests.integration.harvesting import harvest_state, in_thread
from tests.integration.webs import BASE_TIME, ChangingSite, w3c

if TYPE_CHECKING:
    from harvester.output.report import RunReport
    from tests.integration.conftest import Site, Sites


def events(records: list[dict[str, Any]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for rec in records:
        out.setdefault(rec["event"], set()).add(rec["url"])
    return out


@pytest.mark.parametrize(
    ("validators", "host"),
    [("etag", "127.0.0.90"), ("last-modified", "127.0.0.91"), ("none", "127.0.0.92")],
)
async def test_second_run_of_an_unchanged_site_emits_nothing(
    sites: Sites, tmp_path: Path, validators: str, host: str
) -> None:
    site = ChangingSite(validators)
    await site.start(sites, host)
    first, records = await in_thread(
        harvest_state, site, tmp_path, "one", **{"output.emit": "delta"}
    )
    assert len(records) == 30
    assert {r["event"] for r in records} == {"new"}
    assert first.events is not None
    assert first.events["new"] == 30
    bodies_before = sum(site.bodies.values())

    second, records = await in_thread(
        harvest_state, site, tmp_path, "two", **{"output.emit": "delta"}
    )
    assert records == []
    assert second.events is not None
    assert (second.events["new"], second.events["changed"], second.events["removed"]) == (0, 0, 0)
    assert site.site is not None
    assert site.site.hits("/robots.txt") == 1
    if validators == "none":
        # No validators: everything is downloaded again, but the same content hash means
        # nothing is new; the report says the files were unchanged.
        assert sum(site.bodies.values()) == 2 * bodies_before
        (report,) = map(json.loads, (tmp_path / "two.jsonl.hosts.jsonl").read_text().splitlines())
        assert report["sitemaps_unchanged"] == 3  # the index and both children
    else:
        # Conditional GETs: not one sitemap body the second time (counted server-side).
        assert sum(site.bodies.values()) == bodies_before
        assert sum(site.not_modified.values()) == 3  # the index and both children
    # After a run that carried everything over, a change is still seen exactly.
    del site.edit("/a.xml")["/a/5"]
    site.edit("/b.xml")["/b/new"] = None
    _run, records = await in_thread(
        harvest_state, site, tmp_path, "three", **{"output.emit": "delta"}
    )
    assert events(records) == {"removed": {site.url("/a/5")}, "new": {site.url("/b/new")}}


async def test_added_removed_and_bumped_urls_are_delta_events(sites: Sites, tmp_path: Path) -> None:
    site = ChangingSite("etag")
    await site.start(sites, "127.0.0.93")
    await in_thread(harvest_state, site, tmp_path, "one", **{"output.emit": "delta"})

    a = site.edit("/a.xml")
    a["/a/new"] = BASE_TIME + 500  # added
    a["/a/3"] = BASE_TIME + 1000  # lastmod advanced
    a["/a/4"] = BASE_TIME  # lastmod went back: not news
    del site.edit("/b.xml")["/b/7"]  # removed
    run, records = await in_thread(harvest_state, site, tmp_path, "two", **{"output.emit": "delta"})

    assert events(records) == {
        "new": {site.url("/a/new")},
        "changed": {site.url("/a/3")},
        "removed": {site.url("/b/7")},
    }
    removed = next(r for r in records if r["event"] == "removed")
    assert removed["sitemap"] == site.url("/b.xml")
    assert run.events is not None
    assert run.events["unchanged"] == 28
    # `harvester ledger` prints what the ledger now lists: /b/7 retired, /a/3 bumped.
    listed = tmp_path / "ledger.jsonl"
    assert main(["ledger", "--state", str(tmp_path / "state.sqlite"), "-o", str(listed)]) == 0
    ledger = {r["url"]: r for r in map(json.loads, listed.read_text().splitlines())}
    assert len(ledger) == 30
    assert site.url("/b/7") not in ledger
    assert ledger[site.url("/a/3")]["lastmod"] == w3c(BASE_TIME + 1000)
    assert ledger[site.url("/a/new")]["sitemap"] == site.url("/a.xml")
    assert {r["run"] for r in ledger.values()} == {2}  # both children read again in run two
    host = ledger[site.url("/a/3")]["host"]
    one = tmp_path / "one-host.jsonl"
    assert main(["ledger", "--state", str(tmp_path / "state.sqlite"), host, "-o", str(one)]) == 0
    assert len(one.read_text().splitlines()) == 30
    assert main(["ledger", "--state", str(tmp_path / "nothing.sqlite")]) == 2
    unwritable = str(tmp_path / "no-such-dir" / "x.jsonl")
    assert main(["ledger", "--state", str(tmp_path / "state.sqlite"), "-o", unwritable]) == 2

    # A third run with --emit all writes every listed URL, each with its event.
    site.edit("/b.xml")["/b/7"] = None  # it came back
    _run, records = await in_thread(
        harvest_state, site, tmp_path, "three", **{"output.emit": "all"}
    )
    assert len(records) == 31
    assert events(records)["new"] == {site.url("/b/7")}
    assert len(events(records)["unchanged"]) == 30


async def test_emit_new_and_changed_filter_the_events(sites: Sites, tmp_path: Path) -> None:
    site = ChangingSite("last-modified")
    await site.start(sites, "127.0.0.94")
    await in_thread(harvest_state, site, tmp_path, "one", **{"output.emit": "new"})
    a = site.edit("/a.xml")
    a["/a/new"] = BASE_TIME
    a["/a/0"] = BASE_TIME + 100
    _run, new = await in_thread(harvest_state, site, tmp_path, "two", **{"output.emit": "new"})
    assert events(new) == {"new": {site.url("/a/new")}}
    a = site.edit("/a.xml")
    a["/a/1"] = BASE_TIME + 100
    _run, changed = await in_thread(
        harvest_state, site, tmp_path, "three", **{"output.emit": "changed"}
    )
    assert events(changed) == {"changed": {site.url("/a/1")}}


async def test_a_failed_sitemap_never_marks_its_urls_removed(sites: Sites, tmp_path: Path) -> None:
    site = ChangingSite("etag")
    await site.start(sites, "127.0.0.95")
    await in_thread(harvest_state, site, tmp_path, "one", **{"output.emit": "delta"})

    site.failing.add("/b.xml")
    del site.edit("/a.xml")["/a/0"]
    _run, records = await in_thread(
        harvest_state, site, tmp_path, "two", **{"output.emit": "delta"}
    )
    # a.xml was read in full: /a/0 is gone. b.xml failed: none of its URLs is removed.
    assert events(records) == {"removed": {site.url("/a/0")}}
    # The removed record carries its last lastmod, written like every record's.
    assert records[0]["lastmod"] == w3c(BASE_TIME)

    site.failing.clear()
    del site.edit("/b.xml")["/b/0"]
    _run, records = await in_thread(
        harvest_state, site, tmp_path, "three", **{"output.emit": "delta"}
    )
    assert events(records) == {"removed": {site.url("/b/0")}}


async def test_a_child_the_index_no_longer_lists_takes_its_urls_with_it(
    sites: Sites, tmp_path: Path
) -> None:
    site = ChangingSite("etag")
    await site.start(sites, "127.0.0.96")
    await in_thread(harvest_state, site, tmp_path, "one", **{"output.emit": "delta"})
    site.children = ["/a.xml", "/c.xml"]
    site.urls["/c.xml"] = {"/b/0": None, "/c/1": None}  # /b/0 moved to c.xml
    _run, records = await in_thread(
        harvest_state, site, tmp_path, "two", **{"output.emit": "delta"}
    )
    got = events(records)
    assert got["new"] == {site.url("/c/1")}
    assert got["removed"] == {site.url(f"/b/{i}") for i in range(1, 10)}


async def test_remembered_discovery_skips_robots_until_rediscovery_is_due(
    sites: Sites, tmp_path: Path
) -> None:
    site = ChangingSite("etag")
    s = await site.start(sites, "127.0.0.97")
    await in_thread(harvest_state, site, tmp_path, "one", **{"output.emit": "delta"})
    await in_thread(harvest_state, site, tmp_path, "two", **{"output.emit": "delta"})
    assert s.hits("/robots.txt") == 1
    await in_thread(
        harvest_state,
        site,
        tmp_path,
        "three",
        **{"output.emit": "delta", "state.rediscover_after": 0.0},
    )
    assert s.hits("/robots.txt") == 2


async def test_a_fallback_hit_is_remembered_and_misses_are_not_probed_again(
    sites: Sites, tmp_path: Path
) -> None:
    urlset = (
        b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>http://127.0.0.98/x</loc></url></urlset>"
    )
    s = await sites.start("127.0.0.98", {"/sitemap_index.xml": urlset})
    state = str(tmp_path / "state.sqlite")
    cfg = fast_config(**{"state.path": state, "output.emit": "delta"})
    for name in ("one", "two"):
        await in_thread(run_job, cfg, [s.origin], str(tmp_path / name), progress=False)
    assert s.hits("/sitemap.xml") == 1  # the miss is not probed again
    with sqlite3.connect(state) as db:
        memory = json.loads(db.execute("SELECT discovery FROM hosts").fetchone()[0])
    assert memory["missing"] == [s.url("/sitemap.xml")]
    assert memory["refs"] == [s.url("/sitemap_index.xml")]
    assert s.hits("/sitemap_index.xml") == 2  # the hit is fetched directly
    assert s.hits("/robots.txt") == 1


def _host_run(cfg: Any, site: Site, tmp_path: Path, name: str) -> dict[str, Any]:
    """One run of ``site`` alone; its host report."""
    out = tmp_path / f"{name}.jsonl"
    hosts = tmp_path / f"{name}.hosts.jsonl"
    run_job(cfg, [site.origin], str(out), progress=False, hosts_path=str(hosts))
    [report] = [json.loads(line) for line in hosts.read_text().splitlines()]
    return report  # type: ignore[no-any-return]


async def test_a_site_whose_probes_all_404_is_remembered_as_having_none(
    sites: Sites, tmp_path: Path
) -> None:
    # As an HTML soft 404 is: no failure, so the state remembers "nothing found" and the
    # next run asks nothing until rediscovery is due.
    s = await sites.start("127.0.0.108", {"/robots.txt": b"User-agent: *\nDisallow:\n"})
    cfg = fast_config(**{"state.path": str(tmp_path / "state.sqlite"), "output.emit": "delta"})
    one = await in_thread(_host_run, cfg, s, tmp_path, "one")
    two = await in_thread(_host_run, cfg, s, tmp_path, "two")
    assert (one["discovery"], one["failures"]) == ("none", [])
    assert (two["discovery"], two["failures"]) == ("memory:none", [])
    assert [h.path for h in s.log] == [
        "/robots.txt",
        "/",  # issue 49: the home page, one of the budget's 6 requests
        "/.well-known/tdmrep.json",  # policy.tdmrep (on by default), once: run two asks nothing
        "/sitemap.xml",
        "/sitemap_index.xml",
        "/sitemap.txt",
        "/wp-sitemap.xml",  # issue 49: the probes past fallback_paths
        "/sitemap.xml.gz",
    ]


async def test_a_remembered_fallback_hit_that_404s_is_rediscovered_not_failed(
    sites: Sites, tmp_path: Path
) -> None:
    urlset = (
        b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>http://127.0.0.109/x</loc></url></urlset>"
    )
    routes: dict[str, Any] = {"/sitemap_index.xml": urlset}
    s = await sites.start("127.0.0.109", routes)
    cfg = fast_config(**{"state.path": str(tmp_path / "state.sqlite"), "output.emit": "delta"})
    one = await in_thread(_host_run, cfg, s, tmp_path, "one")
    assert one["discovery"] == f"fallback:{s.url('/sitemap_index.xml')}"
    del routes["/sitemap_index.xml"]  # the site drops its sitemap: a 404
    two = await in_thread(_host_run, cfg, s, tmp_path, "two")
    assert (two["discovery"], two["failures"], two["urls"]) == ("memory:fallback", [], 0)
    assert s.hits("/robots.txt") == 1  # the second run recalled discovery
    three = await in_thread(_host_run, cfg, s, tmp_path, "three")
    assert s.hits("/robots.txt") == 2  # the gone hit made this run rediscover
    assert (three["discovery"], three["failures"]) == ("none", [])


async def test_since_keeps_later_lastmods_and_labels_undated_ones(
    sites: Sites, tmp_path: Path
) -> None:
    site = ChangingSite("none")
    await site.start(sites, "127.0.0.99")
    _run, records = await in_thread(
        harvest_state,
        site,
        tmp_path,
        "one",
        **{"output.since": w3c(BASE_TIME + 14), "state.enabled": False},
    )
    after = {r["url"] for r in records if r["since"] == "after"}
    undated = {r["url"] for r in records if r["since"] == "undated"}
    assert after == {site.url(f"/a/{i}") for i in range(15, 20)}
    assert undated == {site.url(f"/b/{i}") for i in range(10)}
    assert "event" not in records[0]  # no state: no events


def test_the_state_file_is_real_sqlite_with_the_ledger(tmp_path: Path) -> None:
    """(Checked after a run by the tests above; here: the schema a user can query.)"""
    from harvester.state.store import StateStore

    with StateStore(str(tmp_path / "s.sqlite")) as store:
        store.start_run(emit="delta", output="x")
    db = sqlite3.connect(tmp_path / "s.sqlite")
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    assert {"runs", "hosts", "sitemaps", "url_chunks", "samples"} <= tables
    assert "urls" not in tables  # schema 3: the ledger is chunks
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# -- crash, resume and the lock: `harvester run` as cron runs it (a subprocess) -------------

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


async def _slow_sites(sites: Sites, count: int, per_file: int) -> tuple[list[Site], set[str]]:
    """``count`` hosts (ports on 127.0.0.89), each robots.txt → three urlsets."""
    expected: set[str] = set()
    out: list[Site] = []
    for _ in range(count):
        routes: dict[str, Any] = {}
        site = await sites.start("127.0.0.89", routes)
        lines = []
        for name in ("x", "y", "z"):
            locs = [site.url(f"/{name}/{i}") for i in range(per_file)]
            expected.update(locs)
            routes[f"/{name}.xml"] = (
                '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                + "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
                + "</urlset>"
            ).encode()
            lines.append(f"Sitemap: {site.url(f'/{name}.xml')}")
        routes["/robots.txt"] = ("\n".join(lines) + "\n").encode()
        out.append(site)
    return out, expected


async def _cli(*args: str, session: bool = False) -> Any:
    import asyncio
    import sys

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


async def test_kill_9_midway_then_resume_emits_every_url_exactly_once(
    sites: Sites, tmp_path: Path
) -> None:
    import asyncio
    import os
    import signal

    hosts, expected = await _slow_sites(sites, 12, 400)
    domains = tmp_path / "domains.txt"
    domains.write_text("".join(f"{h.origin}\n" for h in hosts))
    config = tmp_path / "harvester.toml"
    config.write_text(KILL_CONFIG)
    out = tmp_path / "urls.jsonl"
    state = tmp_path / "urls.jsonl.state.sqlite"  # the default: beside the output
    args = ("-i", str(domains), "-o", str(out), "--config", str(config), "--emit", "delta")

    proc = await _cli(*args, session=True)
    committed = 0
    try:
        for _ in range(1000):  # until the run committed some records, at most ~20 s
            await asyncio.sleep(0.02)
            if state.exists():
                try:
                    with sqlite3.connect(f"file:{state}?mode=ro", uri=True) as db:
                        committed = db.execute("SELECT max(output_bytes) FROM runs").fetchone()[0]
                except sqlite3.Error:
                    continue
            if committed:
                break
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the group we started: the CLI and its workers
        await proc.wait()
    assert committed, "the run never committed anything before it was killed"
    assert not out.exists()
    part = Path(f"{out}.part")
    assert part.stat().st_size >= committed  # noqa: ASYNC240

    proc = await _cli(*args)
    _stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, stderr.decode()
    assert "resuming unfinished run" in stderr.decode()
    urls = [json.loads(line)["url"] for line in out.read_text().splitlines()]
    assert len(urls) == len(set(urls))  # nothing twice ...
    assert set(urls) == expected  # ... and nothing lost
    report = json.loads(Path(f"{out}.report.json").read_text())  # noqa: ASYNC240
    assert report["resumed"] is True
    with sqlite3.connect(state) as db:
        runs = db.execute("SELECT status, invocations FROM runs").fetchall()
    assert runs == [("complete", 2)]


async def test_an_overlapping_run_is_refused_and_a_dead_runs_lock_is_taken_over(
    sites: Sites, tmp_path: Path
) -> None:
    import asyncio

    from harvester.state.store import StateStore

    hosts, expected = await _slow_sites(sites, 1, 5)
    config = tmp_path / "harvester.toml"
    config.write_text(KILL_CONFIG)
    state = tmp_path / "cron.sqlite"
    args = (hosts[0].origin, "-o", str(tmp_path / "o.jsonl"), "--config", str(config))
    with StateStore(str(state)):  # a run still going holds the lock
        proc = await _cli(*args, "--state", str(state))
        _out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 75
    assert "in use by a run still going (pid" in err.decode()

    # The lock file a killed run left behind (its flock died with it) does not block.
    Path(f"{state}.lock").write_text("pid 999999\n")  # noqa: ASYNC240
    proc = await _cli(*args, "--state", str(state))
    _out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    lines = (tmp_path / "o.jsonl").read_text().splitlines()
    assert {json.loads(line)["url"] for line in lines} == expected


async def test_a_redirected_sitemap_is_fetched_where_it_ended_up_next_time(
    sites: Sites, tmp_path: Path
) -> None:
    from tests.integration.conftest import Reply

    urlset = (
        b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>http://127.0.0.88/x</loc><lastmod>2024-01-02</lastmod></url></urlset>"
    )  # (dated: a host without any lastmod gets its URLs written as "unverified")
    routes: dict[str, Any] = {"/new.xml": urlset}
    s = await sites.start("127.0.0.88", routes)
    routes["/robots.txt"] = f"Sitemap: {s.url('/old.xml')}\n".encode()
    routes["/old.xml"] = Reply(status=301, headers={"Location": s.url("/new.xml")})
    cfg = fast_config(**{"state.path": str(tmp_path / "state.sqlite"), "output.emit": "delta"})

    async def run(name: str) -> list[dict[str, Any]]:
        out = tmp_path / name
        await in_thread(run_job, cfg, [s.origin], str(out), progress=False)
        return [json.loads(line) for line in out.read_text().splitlines()]

    assert [r["event"] for r in await run("one")] == ["new"]
    assert (s.hits("/old.xml"), s.hits("/new.xml")) == (1, 1)
    assert await run("two") == []
    assert (s.hits("/old.xml"), s.hits("/new.xml")) == (1, 2)  # straight to where it went

    # The site moves it back: the remembered target 404s, the listed URL is asked again.
    del routes["/new.xml"]
    routes["/old.xml"] = urlset.replace(b"/x<", b"/y<")
    got = await run("three")
    assert {(r["event"], r["url"]) for r in got} == {
        ("new", "http://127.0.0.88/y"),
        ("removed", "http://127.0.0.88/x"),
    }
    assert s.hits("/old.xml") == 2


# -- a Retry-After that says "not today" (issue 30 item 6) -----------------------------------


class BusySite:
    """robots.txt → /a.xml and /b.xml; both answer 503 + Retry-After while ``busy``."""

    def __init__(self, retry_after: str = "86400") -> None:
        self.busy = True
        self.retry_after = retry_after
        self.site: Site | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        assert self.site is not None
        if self.busy:
            return web.Response(status=503, headers={"Retry-After": self.retry_after})
        page = self.site.url(request.path.removesuffix(".xml") + "/page")
        return web.Response(
            body=(
                '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"<url><loc>{page}</loc></url></urlset>"
            ).encode(),
            content_type="application/xml",
        )

    async def start(self, sites: Sites, host: str) -> Site:
        routes: dict[str, Any] = {"/a.xml": self.handle, "/b.xml": self.handle}
        self.site = await sites.start(host, routes)
        u = self.site.url
        routes["/robots.txt"] = f"Sitemap: {u('/a.xml')}\nSitemap: {u('/b.xml')}\n".encode()
        return self.site


def busy_harvest(site: Site, tmp_path: Path, name: str) -> tuple[RunReport, dict[str, Any]]:
    """One run with the shared state file: the run report and the host's report."""
    out = tmp_path / f"{name}.jsonl"
    hosts = f"{out}.hosts.jsonl"
    cfg = fast_config(**{"state.path": str(tmp_path / "state.sqlite"), "fetch.retries": 3})
    run = run_job(cfg, [site.origin], str(out), progress=False, hosts_path=hosts)
    (report,) = map(json.loads, Path(hosts).read_text().splitlines())
    return run, report


async def test_a_retry_after_beyond_the_cap_defers_the_host_to_a_later_run(
    sites: Sites, tmp_path: Path
) -> None:
    busy = BusySite()
    site = await busy.start(sites, "127.0.0.133")

    # Run 1: the first sitemap answers "come back in a day": given up at once (no retry
    # after fetch.retry_after_max), and the host's other sitemap is not asked either.
    before = time.time()
    run, report = await in_thread(busy_harvest, site, tmp_path, "one")
    sitemap_hits = site.hits("/a.xml") + site.hits("/b.xml")
    assert sitemap_hits == 1  # counted server-side
    (failure,) = report["failures"]
    assert (failure["class"], failure["status"], failure["attempts"]) == ("http_status", 503, 1)
    assert failure["retry_after"] == 86400  # the wait asked for
    until = parsedate_to_datetime_iso(report["deferred"])
    assert before + 86400 - 5 <= until <= time.time() + 86400 + 5
    assert run.hosts_deferred == 1

    # Run 2, the same state file: no request at all to the host, reported deferred.
    requests = len(site.log)
    run, report = await in_thread(busy_harvest, site, tmp_path, "two")
    assert len(site.log) == requests
    assert report["deferred"] is not None
    assert abs(parsedate_to_datetime_iso(report["deferred"]) - until) <= 1
    assert (report["failures"], report["urls"]) == ([], 0)
    assert run.hosts_deferred == 1
    assert run.hosts_failed == 0

    # Run 3, once the time has come (the stored time moved into the past): fetched again.
    busy.busy = False
    with sqlite3.connect(tmp_path / "state.sqlite") as db:
        (stored,) = db.execute("SELECT not_before FROM hosts").fetchone()
        assert abs(stored - until) <= 1
        db.execute("UPDATE hosts SET not_before = ?", (time.time() - 1,))
    run, report = await in_thread(busy_harvest, site, tmp_path, "three")
    assert report["deferred"] is None
    assert report["urls"] == 2
    assert run.hosts_deferred == 0
    records = [json.loads(line) for line in (tmp_path / "three.jsonl").read_text().splitlines()]
    assert {r["loc"] for r in records} == {site.url("/a/page"), site.url("/b/page")}
    with sqlite3.connect(tmp_path / "state.sqlite") as db:
        assert db.execute("SELECT not_before FROM hosts").fetchone() == (None,)


async def test_a_robots_txt_that_says_not_today_defers_the_host(
    sites: Sites, tmp_path: Path
) -> None:
    site = await sites.start(
        "127.0.0.134", {"/robots.txt": Reply(b"", status=503, headers={"Retry-After": "7200"})}
    )
    _run, report = await in_thread(busy_harvest, site, tmp_path, "one")
    assert site.hits("/robots.txt") == 1
    assert report["failures"][0]["retry_after"] == 7200
    assert report["deferred"] is not None
    _run, report = await in_thread(busy_harvest, site, tmp_path, "two")
    assert site.hits("/robots.txt") == 1
    assert report["deferred"] is not None


def parsedate_to_datetime_iso(text: str) -> float:
    """Epoch seconds of a report's ISO-8601 UTC time."""
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
