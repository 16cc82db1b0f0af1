"""Issue 49: a distributed run's report carries the same coverage summary as one machine.

Hosts of known completeness (1/10 to 10/10) and dead listed URLs, one host without a
sitemap (skipped), spread over 4 shards on a real ``LocalCluster`` of two worker
processes; the single-process ``run_job`` over the same web is the reference. Each host's
walk sees all its pages and its sample is every URL it lists, so the figures do not
depend on which fingerprints the ports make.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest

distributed = pytest.importorskip("distributed")

from harvester.distributed.client import run_distributed  # noqa: E402
from harvester.run.shards import run_job  # noqa: E402
from tests.integration.clusters import local_cluster  # noqa: E402
from tests.integration.conftest import fast_config  # noqa: E402
from tests.integration.coversites import page  # noqa: E402
from tests.integration.webs import urlset  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from tests.integration.conftest import Sites

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

K = 20
# (pages linked from the home page that the sitemap lists, dead URLs it lists) per host:
# completeness (listed + 1) / 10 with the home page listed too.
GRADES = ((0, 0), (2, 1), (4, 0), (4, 2), (6, 1), (8, 0), (9, 3))
# What the run reports sum: the same in both runs (seconds, dates and workers differ).
SUMMED = ("hosts_done", "hosts_failed", "urls", "sitemaps_fetched", "sitemaps_failed")


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two worker processes of one thread each, as ``--scheduler local:2`` starts them."""
    yield from local_cluster(processes=True)


async def graded_site(sites: Sites, host: str, listed: int, dead: int) -> str:
    """A home page linking 9 pages; the sitemap lists the home page, ``listed`` of the
    9 and ``dead`` URLs that answer 404. Returns its origin."""
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)
    linked = [f"/p/{i}" for i in range(9)]
    routes["/"] = page(*linked)
    for path in linked:
        routes[path] = page("/")
    urls = ["/", *linked[:listed], *(f"/d/{i}" for i in range(dead))]
    routes["/robots.txt"] = f"Sitemap: {site.url('/sitemap.xml')}\nUser-agent: *\n".encode()
    routes["/sitemap.xml"] = urlset(*(site.url(p) for p in urls))
    return site.origin


def config(**more: Any) -> Any:
    return fast_config(
        **{
            "state.enabled": False,
            "discovery.coverage": K,
            "discovery.probe_budget": 0,
            "policy.tdmrep": False,
            **more,
        }
    )


async def test_the_merged_report_has_the_single_run_s_coverage_summary(
    sites: Sites, tmp_path: Path, client: Any
) -> None:
    lines = [
        await graded_site(sites, f"127.0.49.{60 + i}", listed, dead)
        for i, (listed, dead) in enumerate(GRADES)
    ]
    bare = await sites.start("127.0.49.69", {"/robots.txt": b"User-agent: *\n"})
    lines.append(bare.origin)

    one = tmp_path / "one.jsonl"
    report = await asyncio.to_thread(run_job, config(), lines, str(one), progress=False)
    single = report.as_dict()
    out = tmp_path / "out"
    result = await asyncio.to_thread(
        run_distributed, client, lines, str(out), config(**{"distributed.shards": 4})
    )
    assert result.failed == []
    merged = json.loads((out / "report.json").read_text())

    expected = {
        "hosts_checked": 7,
        "hosts_skipped": 1,
        # (0.1, 0.3, 0.5, 0.5, 0.7, 0.9, 1.0): inclusive quartiles
        "completeness": {
            "min": 0.1,
            "q1": 0.4,
            "median": 0.5,
            "q3": 0.8,
            "max": 1.0,
            "mean": 0.5714,
        },
    }
    for run in (single, merged):
        summary = run["coverage"]
        assert {k: summary[k] for k in expected} == expected
        dead = summary["listed_not_live"]["dead"]
        assert (dead["count"], dead["of"]) == (7, 7 + sum(n for n, _ in GRADES) + 7)
    assert merged["coverage"] == single["coverage"]
    assert {k: merged[k] for k in SUMMED} == {k: single[k] for k in SUMMED}
    assert "coverage_spread" not in merged
