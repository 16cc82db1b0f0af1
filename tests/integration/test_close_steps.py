"""kill -9 at every step of a run's close, then the cron job's next runs (issue 50 item 2).

``harvester run`` runs as cron runs it: a subprocess with a fixed ``--state`` and
``--emit new``, a new ``-o`` per invocation (the README's recipe). The first
invocation kills itself with SIGKILL at one step of its close
(``HARVESTER_TEST_FAULT``, ``harvester.output.faults.STEPS``); the next one must
finish what it left, and a third one, after the sites listed more URLs, must
write those only. Over every output that exists (published files, and the
``.part`` a resumed run leaves behind when it goes on in another output) each
URL appears exactly once, and none is missing. Also here: an output whose
committed records are lost is written again (with the events it had), and
``-o DIR`` is refused before anything is harvested.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp import web

from harvester.output.faults import FAULT_ENV, STEPS
from tests.roundtrip import read_csv, read_jsonl, read_parquet

if TYPE_CHECKING:
    from tests.integration.conftest import Site, Sites

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
READERS = {"jsonl": read_jsonl, "csv": read_csv, "parquet": read_parquet}
CONFIG = """
[fetch]
allow = ["127.0.0.0/8"]
retries = 0
connect_timeout = 2.0
[politeness.default]
rate = 1000.0
[run]
uvloop = false
workers = 1
[state]
commit_interval = 0.0
[output]
row_group_rows = 40
"""


class Web:
    """Hosts on 127.0.0.46, each robots.txt → two urlsets with ETags, edited between runs."""

    def __init__(self) -> None:
        self.sites: list[Site] = []
        self.urls: dict[tuple[int, str], dict[str, str]] = {}  # (site, file) → loc: lastmod

    async def start(self, sites: Sites, hosts: int, per_file: int) -> None:
        for i in range(hosts):
            routes: dict[str, Any] = {}
            site = await sites.start("127.0.0.46", routes)
            self.sites.append(site)
            for name in ("a", "b"):
                # Dates spread over a year: a lastmod the audit trusts (else "unverified").
                self.urls[i, name] = {
                    site.url(f"/{name},{n}"): f"2023-{n % 12 + 1:02d}-{n % 28 + 1:02d}"
                    for n in range(per_file)
                }
                routes[f"/{name}.xml"] = self._handler(i, name)
            routes["/robots.txt"] = (
                f"Sitemap: {site.url('/a.xml')}\nSitemap: {site.url('/b.xml')}\n".encode()
            )

    def _handler(self, i: int, name: str) -> Any:
        async def handle(request: web.Request) -> web.Response:
            entries = "".join(
                f"<url><loc>{loc}</loc><lastmod>{lastmod}</lastmod></url>"
                for loc, lastmod in self.urls[i, name].items()
            )
            body = f'<?xml version="1.0"?><urlset {NS}>{entries}</urlset>'.encode()
            tag = '"' + hashlib.blake2b(body, digest_size=8).hexdigest() + '"'
            if request.headers.get("If-None-Match") == tag:
                return web.Response(status=304, headers={"ETag": tag})
            return web.Response(body=body, headers={"ETag": tag}, content_type="application/xml")

        return handle

    def all_urls(self) -> set[str]:
        return {loc for urls in self.urls.values() for loc in urls}

    def add(self, count: int) -> set[str]:
        """``count`` new URLs in each host's a.xml; returns them."""
        added = set()
        for i, site in enumerate(self.sites):
            for n in range(count):
                loc = site.url(f"/a,new{n}")
                self.urls[i, "a"][loc] = f"2024-06-{n + 1:02d}"
                added.add(loc)
        return added


async def cli(*args: str, fault: str | None = None) -> tuple[int, str]:
    """Run ``harvester run ARGS``; its exit status (-9: killed) and stderr."""
    env = dict(os.environ)
    env.pop(FAULT_ENV, None)
    if fault is not None:
        env[FAULT_ENV] = fault
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harvester",
        "run",
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    _out, err = await asyncio.wait_for(proc.communicate(), timeout=50)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


def outputs(tmp_path: Path, fmt: str) -> list[Path]:
    """Every output of the runs that exists: published files and leftover ``.part``s."""
    name = re.compile(rf"out-\d+\.{fmt}(\.part)?")
    return sorted(p for p in tmp_path.iterdir() if name.fullmatch(p.name))


def leftovers(tmp_path: Path) -> list[Path]:
    """The ``.part`` files and directories left in ``tmp_path``."""
    return list(tmp_path.glob("*.part"))


def records(path: Path, fmt: str) -> list[dict[str, Any]]:
    """The records of an output (a Parquet ``.part`` directory: of its numbered parts)."""
    if path.is_dir():
        return [r for part in sorted(path.glob("part-*.parquet")) for r in read_parquet(str(part))]
    return list(READERS[fmt](str(path)))


async def _setup(sites: Sites, tmp_path: Path) -> tuple[Web, tuple[str, ...]]:
    web_ = Web()
    await web_.start(sites, hosts=3, per_file=60)
    domains = tmp_path / "domains.txt"
    domains.write_text("".join(f"{s.origin}\n" for s in web_.sites))
    config = tmp_path / "harvester.toml"
    config.write_text(CONFIG)
    state = tmp_path / "state.sqlite"
    common = ("-i", str(domains), "--config", str(config), "--state", str(state), "--no-progress")
    return web_, common


CASES = [("jsonl", step) for step in STEPS] + [("parquet", step) for step in STEPS]
CASES += [("csv", "prepared"), ("csv", "renamed")]


@pytest.mark.parametrize(("fmt", "step"), CASES)
async def test_a_kill_at_any_close_step_loses_and_repeats_nothing(
    sites: Sites, tmp_path: Path, fmt: str, step: str
) -> None:
    """The killed invocation is retried with the same ``-o`` (a new one after "complete":
    that run was over, and a new run to the same path would replace its output)."""
    web_, common = await _setup(sites, tmp_path)
    first = web_.all_urls()

    def out(n: int) -> str:
        return str(tmp_path / f"out-{n}.{fmt}")

    status, err = await cli("-o", out(1), *common, "--emit", "new", fault=step)
    assert status == -9, f"not killed at {step}: {err}"  # (SIGKILL: it died at that step)
    retry = out(2) if step == "complete" else out(1)
    status, err = await cli("-o", retry, *common, "--emit", "new")
    assert status == 0, err
    if step != "complete":
        assert "resuming unfinished run" in err
    added = web_.add(4)
    status, err = await cli("-o", out(3), *common, "--emit", "new")
    assert status == 0, err

    assert leftovers(tmp_path) == []  # every output published
    seen: Counter[str] = Counter()
    for path in outputs(tmp_path, fmt):
        seen.update(r["url"] for r in records(path, fmt))
    assert [u for u, n in seen.items() if n > 1] == []  # nothing twice ...
    assert set(seen) == first | added  # ... nothing lost
    assert {r["url"] for r in records(Path(out(3)), fmt)} == added  # the third run: new only
    with sqlite3.connect(tmp_path / "state.sqlite") as db:
        statuses = [s for (s,) in db.execute("SELECT status FROM runs ORDER BY id")]
    assert set(statuses) == {"complete"}


@pytest.mark.parametrize("step", ["publishing", "renamed"])
async def test_a_run_killed_while_publishing_is_published_under_its_own_name(
    sites: Sites, tmp_path: Path, step: str
) -> None:
    """The next invocation writes another ``-o`` (the README's cron recipe): the killed
    run is published where it was going, and nothing is harvested again."""
    web_, common = await _setup(sites, tmp_path)
    out1, out2 = str(tmp_path / "out-1.jsonl"), str(tmp_path / "out-2.jsonl")
    status, err = await cli("-o", out1, *common, "--emit", "new", fault=step)
    assert status == -9, err
    requests = sum(len(s.log) for s in web_.sites)
    status, err = await cli("-o", out2, *common, "--emit", "new")
    assert status == 0, err
    assert "stopped while publishing" in err
    assert sum(len(s.log) for s in web_.sites) == requests  # not one request more
    urls = [r["url"] for r in read_jsonl(out1)]
    assert len(urls) == len(set(urls))
    assert set(urls) == web_.all_urls()
    assert not Path(out2).exists()  # noqa: ASYNC240 (this invocation had nothing to write)
    assert leftovers(tmp_path) == []  # the host report published too
    assert json.loads(Path(out1 + ".report.json").read_text())["complete"] is True  # noqa: ASYNC240


async def test_a_lost_output_is_written_again_with_its_events(sites: Sites, tmp_path: Path) -> None:
    """The committed ``.part`` of a killed ``--emit delta`` run is deleted: the next run
    says so and writes its records again, with the events they had (new, changed and
    removed, against the run before it), though the sites were read in full already."""
    web_, common = await _setup(sites, tmp_path)
    status, err = await cli("-o", str(tmp_path / "out-1.jsonl"), *common, "--emit", "delta")
    assert status == 0, err
    added = web_.add(3)
    changed, removed = set(), set()
    for i in range(len(web_.sites)):
        urls = web_.urls[i, "b"]
        loc = next(iter(urls))
        urls[loc] = "2025-01-01"
        changed.add(loc)
        gone = list(urls)[-1]
        del urls[gone]
        removed.add(gone)
    out2 = tmp_path / "out-2.jsonl"
    status, err = await cli("-o", str(out2), *common, "--emit", "delta", fault="committed")
    assert status == -9, err
    part = Path(f"{out2}.part")
    assert sorted(r["event"] for r in read_jsonl(str(part))) == sorted(
        ["new"] * len(added) + ["changed"] * len(changed) + ["removed"] * len(removed)
    )
    part.unlink()  # noqa: ASYNC240 (lost: deleted, a disk that failed, ...)

    out3 = tmp_path / "out-3.jsonl"
    status, err = await cli("-o", str(out3), *common, "--emit", "delta")
    assert status == 0, err
    assert "that output is lost" in err
    got: dict[str, set[str]] = {}
    for r in read_jsonl(str(out3)):
        got.setdefault(r["event"], set()).add(r["url"])
    assert got == {"new": added, "changed": changed, "removed": removed}

    status, err = await cli("-o", str(tmp_path / "out-4.jsonl"), *common, "--emit", "delta")
    assert status == 0, err
    assert read_jsonl(str(tmp_path / "out-4.jsonl")) == []  # all of it was recorded once


async def test_an_output_that_is_a_directory_is_refused_before_harvesting(
    sites: Sites, tmp_path: Path
) -> None:
    web_, common = await _setup(sites, tmp_path)
    folder = tmp_path / "folder"
    folder.mkdir()
    status, err = await cli("-o", str(folder), *common, "--emit", "new")
    assert status == 2, err
    assert "is a directory" in err
    assert all(s.log == [] for s in web_.sites)  # nothing was asked of any host
    if (tmp_path / "state.sqlite").exists():
        with sqlite3.connect(tmp_path / "state.sqlite") as db:
            assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    # The same run with a file path writes every URL (nothing was recorded as written).
    status, err = await cli("-o", str(folder / "urls.jsonl"), *common, "--emit", "new")
    assert status == 0, err
    assert {r["url"] for r in read_jsonl(str(folder / "urls.jsonl"))} == web_.all_urls()
