"""`harvester run` as a user runs it: a subprocess, real servers on loopback, files on disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.integration.conftest import free_port
from tests.integration.harvesting import CONFIG, run_cli
from tests.integration.webs import site_with_tree, urlset

if TYPE_CHECKING:
    from tests.integration.conftest import Sites


async def test_run_with_two_workers_writes_output_and_reports(sites: Sites, tmp_path: Path) -> None:
    hosts = [await site_with_tree(sites, f"127.0.0.{40 + i}") for i in range(4)]
    dead = f"http://127.0.0.50:{free_port('127.0.0.50')}"
    domains = tmp_path / "domains.txt"
    lines = ["# my hosts", "", *(h.origin for h in hosts), dead, "ftp://nope", hosts[0].origin]
    domains.write_text("\n".join(lines) + "\n")
    config = tmp_path / "harvester.toml"
    config.write_text(CONFIG)
    out = tmp_path / "urls.jsonl"

    code, _, err = await run_cli(
        "-i", str(domains), "-o", str(out), "--config", str(config), "--workers", "2"
    )
    assert code == 0, err
    assert not Path(f"{out}.part").exists()  # noqa: ASYNC240 - the run is over
    records = [json.loads(line) for line in out.read_text().splitlines()]
    by_host: dict[str, list[str]] = {}
    for rec in records:
        by_host.setdefault(rec["host"], []).append(rec["loc"])
    assert len(records) == 12
    for h in hosts:
        assert sorted(by_host[f"127.0.0.{h.host.rsplit('.', 1)[1]}:{h.port}"]) == sorted(
            [h.url("/p/1"), h.url("/p/2"), h.url("/p/3")]
        )
    report = json.loads(Path(f"{out}.report.json").read_text())  # noqa: ASYNC240
    assert report["complete"] is True
    assert report["finished"] is not None
    assert report["hosts_done"] == 5
    assert report["hosts_total"] == 5  # the whole input was read: its distinct hosts
    assert report["urls"] == 12
    assert report["cross_host_duplicates"] == 0  # every site lists only its own URLs
    assert report["input_invalid"] == 1
    assert report["input_duplicates"] == 1
    assert report["failures_by_class"]["connect"] == 1
    assert report["failures_by_class"]["http_status"] == 4
    host_lines = Path(f"{out}.hosts.jsonl").read_text().splitlines()  # noqa: ASYNC240
    assert len(host_lines) == 5
    assert "line 8" in err  # the invalid line is reported with its number


async def test_run_from_stdin_to_stdout(sites: Sites) -> None:
    site = await site_with_tree(sites, "127.0.0.51")
    code, out, err = await run_cli(
        "-i",
        "-",
        "--workers",
        "1",
        "--allow",
        "127.0.0.51/32",
        "--rate",
        "1000",
        stdin=site.origin.encode(),
    )
    assert code == 0, err
    locs = sorted(json.loads(line)["loc"] for line in out.splitlines())
    assert locs == sorted([site.url("/p/1"), site.url("/p/2"), site.url("/p/3")])


async def test_usage_and_config_errors_exit_2(tmp_path: Path) -> None:
    code, _, err = await run_cli()
    assert code == 2
    assert "DOMAIN" in err
    bad = tmp_path / "bad.toml"
    bad.write_text("[fetch]\nretries = 'x'\n")
    code, _, err = await run_cli("example.com", "--config", str(bad))
    assert code == 2
    assert "fetch.retries" in err


async def test_cross_host_duplicates_across_worker_processes(sites: Sites, tmp_path: Path) -> None:
    shared = "http://shared.example/page"
    origins = []
    for n in range(4):
        routes: dict[str, Any] = {}
        site = await sites.start(f"127.0.0.{52 + n}", routes)
        routes["/sitemap.xml"] = urlset(shared, site.url("/own"))
        origins.append(site.url("/sitemap.xml"))
    config = tmp_path / "harvester.toml"
    config.write_text(CONFIG)
    out = tmp_path / "urls.jsonl"
    code, _, err = await run_cli(
        *origins, "-o", str(out), "--config", str(config), "--workers", "2"
    )
    assert code == 0, err
    report = json.loads(Path(f"{out}.report.json").read_text())  # noqa: ASYNC240
    # Four hosts in (likely) both shards list the same URL: the first counts as new,
    # the three others as cross-host duplicates; every record is still emitted.
    assert report["urls"] == 8
    assert report["cross_host_duplicates"] == 3


async def test_the_ssrf_guard_is_on_by_default(sites: Sites) -> None:
    site = await site_with_tree(sites, "127.0.0.57")
    code, out, err = await run_cli(site.origin, "--workers", "1")
    assert code == 0, err
    assert out == ""
    assert "forbidden_address 1" in err  # the summary table names the refusal
    assert site.log == []  # not a single request reached the loopback server


async def test_workers_start_only_for_shards_that_get_a_host(sites: Sites, tmp_path: Path) -> None:
    # One big site and --workers 3: one worker process, not three idle interpreters.
    host = await site_with_tree(sites, "127.0.0.58")
    config = tmp_path / "harvester.toml"
    config.write_text(CONFIG)
    out = tmp_path / "one.jsonl"
    code, _, err = await run_cli(
        host.origin, "-o", str(out), "--config", str(config), "--workers", "3", "--no-state"
    )
    assert code == 0, err
    report = json.loads(Path(f"{out}.report.json").read_text())  # noqa: ASYNC240
    assert (report["workers"], report["workers_started"]) == (3, 1)
    assert report["urls"] == len(out.read_text().splitlines())
    assert report["urls"] > 0


async def test_a_bad_host_name_in_a_document_stops_nothing(sites: Sites, tmp_path: Path) -> None:
    """Issue 50: an index child or a robots.txt line naming ``xn--zz`` (an A-label that does
    not decode) once made every host's run, and every resume of it, exit 1. Now the child is
    a dropped loc, the line an ``invalid_url`` failure of that one sitemap; the other host,
    the output's rename and a second (incremental) run are untouched."""
    ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    first = await site_with_tree(sites, "127.0.0.61")
    routes: dict[str, Any] = {}
    second = await sites.start("127.0.0.62", routes)
    bad = f"http://xn--zz.test:{second.port}"
    routes.update(
        {
            "/robots.txt": f"Sitemap: {bad}/x.xml\nSitemap: {second.url('/idx.xml')}\n".encode(),
            "/idx.xml": (
                f"<sitemapindex {ns}><sitemap><loc>{bad}/child.xml</loc></sitemap>"
                f"<sitemap><loc>{second.url('/a.xml')}</loc></sitemap></sitemapindex>"
            ).encode(),
            "/a.xml": urlset(second.url("/q/1"), f"{bad}/page", second.url("/q/2")),
        }
    )
    config = tmp_path / "harvester.toml"
    # No name is looked up but through a server on loopback that never answers.
    config.write_text(CONFIG.replace("[fetch]\n", '[fetch]\nnameservers = ["127.0.0.1:9"]\n'))
    out, state = tmp_path / "urls.jsonl", tmp_path / "state.sqlite"
    args = ["-o", str(out), "--state", str(state), "--config", str(config)]
    for run in (1, 2):
        code, _, err = await run_cli(*args, first.origin, second.origin)
        assert code == 0, err
        records = [json.loads(line) for line in out.read_text().splitlines()]
        if run == 1:
            locs = {rec["loc"] for rec in records}
            assert {second.url("/q/1"), second.url("/q/2"), first.url("/p/1")} <= locs
            assert not any("xn--zz" in loc for loc in locs)
        hosts = {
            h["host"]: h
            for h in map(json.loads, Path(f"{out}.hosts.jsonl").read_text().splitlines())  # noqa: ASYNC240
        }
        failures = hosts[f"127.0.0.62:{second.port}"]["failures"]
        assert [(f["class"], f["url"]) for f in failures] == [("invalid_url", f"{bad}/x.xml")]
    assert first.hits("/robots.txt") >= 1
