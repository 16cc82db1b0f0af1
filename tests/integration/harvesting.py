"""Harvesting a loopback web in an integration test, and reading what came out.

In this process: ``collect`` (``harvest()``: its records and its hosts' reports) and
``harvest_state`` (one ``run_job`` with a shared state file, in a thread through
``in_thread`` so the test's loop keeps serving its sites). As cron runs it: ``run_cli``
(``python -m harvester run``) with ``CONFIG`` (the settings a loopback web needs).
``locs`` and ``only_failure`` read records and a host's report.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from typing import TYPE_CHECKING, Any

from harvester.run.pipeline import harvest
from harvester.run.shards import run_job
from tests.integration.conftest import fast_config

if TYPE_CHECKING:
    from pathlib import Path

    from harvester.output.report import RunReport
    from tests.integration.webs import ChangingSite


async def collect(domains: list[str], **cfg: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    resolver = cfg.pop("resolver", None)
    records: list[dict[str, Any]] = []
    hosts: dict[str, Any] = {}
    async for rec in harvest(
        domains,
        fast_config(**cfg),
        resolver=resolver,
        on_host=lambda r: hosts.update({r["host"]: r}),
    ):
        records.append(rec)
    return records, hosts


CONFIG = """
[fetch]
allow_private = true
retries = 0
connect_timeout = 2.0
[politeness.default]
rate = 1000.0
[run]
uvloop = false
"""


async def run_cli(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harvester",
        "run",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), timeout=60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def locs(records: list[dict[str, Any]]) -> list[str]:
    return [r["loc"] for r in records]


def only_failure(report: dict[str, Any]) -> dict[str, Any]:
    failures: list[dict[str, Any]] = report["failures"]
    assert len(failures) == 1, failures
    return failures[0]


def harvest_state(
    site: ChangingSite, tmp_path: Path, name: str, **overrides: Any
) -> tuple[RunReport, list[dict[str, Any]]]:
    """One `harvester run` (in-process, one worker) with the shared state file."""
    out = tmp_path / f"{name}.jsonl"
    opts: dict[str, Any] = {"state.path": str(tmp_path / "state.sqlite"), **overrides}
    assert site.site is not None
    hosts = f"{out}.hosts.jsonl"
    run = run_job(
        fast_config(**opts), [site.site.origin], str(out), progress=False, hosts_path=hosts
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    return run, records


async def in_thread(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a blocking harvest in a thread so this loop keeps serving the sites."""
    return await asyncio.to_thread(fn, *args, **kwargs)


def assert_paced(starts: list[float], interval: float) -> None:
    """Fail unless request starts (seen at a loopback server) are paced ``interval`` apart.

    In: the start times, sorted, and the interval the client must keep. Each start is
    the client's send time plus a delivery delay that a loaded machine varies per request,
    so a single gap measured at the server can come out shorter than the client's; only
    the span is robust. Checked: every gap is at least half the interval (an unpaced burst
    has gaps near 0), and the span is at least 90 % of the paced span less 50 ms.
    """
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert gaps, starts
    assert min(gaps) >= interval / 2, gaps
    assert starts[-1] - starts[0] >= 0.9 * interval * len(gaps) - 0.05, gaps
