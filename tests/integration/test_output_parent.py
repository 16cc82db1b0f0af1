"""``-o newdir/urls.jsonl``: the missing directory is created (as Scrapy's feed exports do),
and one that cannot be created is named in a one-line error, exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from tests.integration.harvesting import CONFIG, run_cli
from tests.integration.webs import site_with_tree

if TYPE_CHECKING:
    from tests.integration.conftest import Sites


async def test_output_in_a_new_directory_creates_it(sites: Sites, tmp_path: Path) -> None:
    site = await site_with_tree(sites, "127.0.0.61")
    config = tmp_path / "harvester.toml"
    config.write_text(CONFIG)
    out = tmp_path / "new" / "deeper" / "urls.jsonl"
    code, _, err = await run_cli(site.origin, "-o", str(out), "--config", str(config))
    assert code == 0, err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["loc"] for r in records) == sorted(
        site.url(p) for p in ("/p/1", "/p/2", "/p/3")
    )
    # The run's companions (report, hosts, state) sit beside it.
    assert Path(f"{out}.report.json").exists()  # noqa: ASYNC240 - the run is over


async def test_an_uncreatable_directory_is_named(tmp_path: Path) -> None:
    # A file where a directory should be: no one (root neither) can create it.
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, out, err = await run_cli("127.0.0.62", "-o", str(blocker / "sub" / "urls.jsonl"))
    assert code == 2
    assert out == ""
    assert f"cannot create the directory {blocker / 'sub'}" in err
    assert ".part" not in err
    assert "lock" not in err.lower()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # noqa: ASYNC240
