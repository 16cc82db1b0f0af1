"""A run in which every host failed, over an output an earlier run wrote (issue 50 item 8).

The earlier output was silently replaced by an empty file. Now (README, *Output*):
with ``--emit all`` the output is a listing, and an empty one would replace a good
one: the earlier file is kept; with ``--emit new`` (or changed, delta) the output is
the run's events, none, and keeping the earlier file would have its records read
twice: the empty file replaces it. Either way stderr says so, and the run report
(``output_kept``).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvester.run.shards import run_job
from tests.integration.conftest import Reply, fast_config
from tests.integration.webs import urlset

if TYPE_CHECKING:
    import pytest

    from tests.integration.conftest import Site, Sites


async def two_hosts(sites: Sites) -> tuple[list[Site], dict[str, Any]]:
    """Two hosts whose /sitemap.xml a test can make fail (``routes[...]``)."""
    routes: dict[str, Any] = {}
    out = []
    for _ in range(2):
        site = await sites.start("127.0.0.48", routes)
        out.append(site)
    good = urlset(*(s.url(f"/p/{i}") for s in out for i in range(5)))
    routes["/sitemap.xml"] = good
    return out, routes


def harvest(origins: list[str], out: Path, **cfg: Any) -> Any:
    return run_job(
        fast_config(**{"fetch.retries": 0, **cfg}),
        origins,
        str(out),
        progress=False,
        report_path=f"{out}.report.json",
    )


async def test_with_emit_all_the_earlier_output_is_kept_and_said_so(
    sites: Sites, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts, routes = await two_hosts(sites)
    seeds = [h.url("/sitemap.xml") for h in hosts]
    out = tmp_path / "urls.jsonl"
    await asyncio.to_thread(harvest, seeds, out, **{"state.enabled": False})
    before = out.read_bytes()
    assert before.count(b"\n") == 20  # (each host's sitemap lists both hosts' URLs)

    routes["/sitemap.xml"] = Reply(b"down for maintenance", status=503)
    capsys.readouterr()
    run = await asyncio.to_thread(harvest, seeds, out, **{"state.enabled": False})
    assert (run.hosts_done, run.hosts_failed) == (2, 2)
    assert out.read_bytes() == before
    assert not Path(f"{out}.part").exists()  # noqa: ASYNC240
    err = capsys.readouterr().err
    assert "every host failed (2 of 2)" in err
    assert "was kept" in err
    report = json.loads(Path(f"{out}.report.json").read_text())  # noqa: ASYNC240
    assert report["output_kept"] is True
    assert report["complete"] is True


async def test_with_emit_new_the_empty_output_replaces_it_and_says_so(
    sites: Sites, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts, routes = await two_hosts(sites)
    seeds = [h.url("/sitemap.xml") for h in hosts]
    out = tmp_path / "urls.jsonl"
    state = str(tmp_path / "state.sqlite")
    await asyncio.to_thread(harvest, seeds, out, **{"state.path": state, "output.emit": "new"})
    assert out.read_bytes().count(b"\n") == 20

    routes["/sitemap.xml"] = Reply(b"down for maintenance", status=503)
    capsys.readouterr()
    run = await asyncio.to_thread(
        harvest, seeds, out, **{"state.path": state, "output.emit": "new"}
    )
    assert (run.hosts_done, run.hosts_failed) == (2, 2)
    assert out.read_bytes() == b""
    err = capsys.readouterr().err
    assert "every host failed (2 of 2)" in err
    assert "now holds no record" in err
    report = json.loads(Path(f"{out}.report.json").read_text())  # noqa: ASYNC240
    assert report["output_kept"] is False
