"""A distributed run in every output format: one dataset in ``out/``, and ``merge``.

A ``LocalCluster`` of worker processes (as ``--scheduler local`` starts them) and the
single-process ``run_job`` harvest the same loopback web, in JSON Lines, CSV and
Parquet. Each shard's committed records file has the format's extension and bytes;
``out/**/*.FMT`` is exactly those files, read by DuckDB and pyarrow as one dataset
with the single run's records; ``merge`` writes the format its output names (one
CSV header), and the CLI does the same as a user types it.
"""

from __future__ import annotations

import asyncio
import csv
import glob
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")

import pyarrow.dataset as ds  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from harvester.distributed.client import run_distributed  # noqa: E402
from harvester.distributed.layout import read_layout  # noqa: E402
from harvester.distributed.manifest import committed  # noqa: E402
from harvester.distributed.merge import merge  # noqa: E402
from harvester.errors import ConfigError  # noqa: E402
from harvester.output.csvsink import COLUMNS  # noqa: E402
from harvester.run.shards import run_job  # noqa: E402
from tests.integration.clusters import SERVER, cli, local_cluster, make_web  # noqa: E402
from tests.integration.conftest import fast_config  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.integration.conftest import Sites

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SHARDS = 4


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two worker processes of one thread each, as ``--scheduler local:2`` starts them."""
    yield from local_cluster(processes=True)


def rows(path: Path | str, fmt: str) -> list[dict[str, Any]]:
    """The records of one file of format ``fmt``, as the format gives them back."""
    if fmt == "parquet":
        out: list[dict[str, Any]] = pq.read_table(path).to_pylist()
        return out
    with open(path, encoding="utf-8", newline="") as fh:
        if fmt == "csv":
            return list(csv.DictReader(fh))
        return [json.loads(line) for line in fh]


def head(path: str) -> bytes:
    """The first line of a file (a Parquet file's first bytes: its magic)."""
    with open(path, "rb") as fh:
        return fh.readline()


def ordered(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: (r["host"], r["url"]))


def single(web: Any, out: Path, fmt: str) -> list[dict[str, Any]]:
    cfg = fast_config(**{"state.enabled": False, "output.format": fmt})
    run_job(cfg, list(web.lines), str(out), progress=False)
    return ordered(rows(out, fmt))


def dist(client: Any, web: Any, out: Path, fmt: str) -> Any:
    cfg = fast_config(
        **{"state.enabled": False, "output.format": fmt, "distributed.shards": SHARDS}
    )
    result = run_distributed(client, list(web.lines), str(out), cfg)
    layout = read_layout(str(out))
    assert layout is not None
    return layout, result


def read_dataset(out: Path, fmt: str) -> tuple[int, list[dict[str, Any]]]:
    """DuckDB's count over ``out/**/*.FMT``, and pyarrow's (Parquet) or our reading of it."""
    pattern = f"{out}/**/*.{fmt}"
    reader = {"parquet": "read_parquet", "csv": "read_csv", "jsonl": "read_json_auto"}[fmt]
    con = duckdb.connect()
    try:
        (count,) = con.execute(f"select count(*) from {reader}('{pattern}')").fetchone()
    finally:
        con.close()
    if fmt == "parquet":
        table = ds.dataset(str(out), format="parquet", exclude_invalid_files=True)
        return count, table.to_table().to_pylist()
    return count, [r for p in sorted(glob.glob(pattern, recursive=True)) for r in rows(p, fmt)]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
async def test_out_is_one_dataset_of_the_format_and_merge_writes_it(
    sites: Sites, tmp_path: Path, client: Any, fmt: str
) -> None:
    first = {"jsonl": 140, "csv": 150, "parquet": 160}[fmt]
    web = await make_web(sites, first=first)
    expected = await asyncio.to_thread(single, web, tmp_path / f"one.{fmt}", fmt)
    out = tmp_path / "out"
    layout, result = await asyncio.to_thread(dist, client, web, out, fmt)
    assert result.failed == []
    assert len(expected) == 7 * 21 + 2

    # Each committed shard's records file is of the format, named for it; the glob of
    # the format finds those files and nothing else (host reports are .ndjson).
    named = {
        str(Path(layout.shard_dir(s)) / m["records"]): m["format"] for s, m in committed(layout)
    }
    assert len(named) == SHARDS
    assert set(named.values()) == {fmt}
    found = set(glob.glob(f"{out}/**/*.{fmt}", recursive=True))
    assert found == set(named)
    heads = [head(p) for p in found]
    if fmt == "parquet":
        assert all(head.startswith(b"PAR1") for head in heads)
    if fmt == "csv":
        assert {head.rstrip(b"\r\n") for head in heads} == {",".join(COLUMNS).encode()}

    count, records = read_dataset(out, fmt)
    assert count == len(expected)
    assert ordered(records) == expected

    merged = tmp_path / f"merged.{fmt}"
    size = await asyncio.to_thread(merge, layout, str(merged))
    assert size == merged.stat().st_size
    assert ordered(rows(merged, fmt)) == expected
    if fmt == "csv":
        header = ",".join(COLUMNS)
        assert merged.read_text().splitlines().count(header) == 1
    if fmt != "jsonl":  # CSV or Parquet cannot be turned into another format by merge
        with pytest.raises(ConfigError, match=f"the shards wrote {fmt}"):
            merge(layout, str(tmp_path / "other.jsonl"))
        assert not (tmp_path / "other.jsonl").exists()


async def test_json_lines_shards_merge_into_csv_and_parquet_as_the_single_run_writes(
    sites: Sites, tmp_path: Path, client: Any
) -> None:
    web = await make_web(sites, first=170)
    layout, _ = await asyncio.to_thread(dist, client, web, tmp_path / "out", "jsonl")
    for fmt in ("csv", "parquet"):
        expected = await asyncio.to_thread(single, web, tmp_path / f"one.{fmt}", fmt)
        merged = tmp_path / f"merged.{fmt}"
        await asyncio.to_thread(merge, layout, str(merged))
        assert ordered(rows(merged, fmt)) == expected
    # --format wins over the name: CSV into a file named .txt
    await asyncio.to_thread(merge, layout, str(tmp_path / "m.txt"), "csv")
    assert (tmp_path / "m.txt").read_text().splitlines()[0] == ",".join(COLUMNS)


def test_the_cli_writes_parquet_shards_and_merges_them(tmp_path: Path) -> None:
    """``harvester run --scheduler local:1 --format parquet`` then ``harvester merge``, as
    typed (CSV and JSON Lines go the same way: the test above, through the API)."""
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, "127.0.0.121"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        origin = server.stdout.readline().strip()
        config = tmp_path / "c.toml"
        config.write_text('[fetch]\nallow = ["127.0.0.0/8"]\n[run]\nuvloop = false\n')
        locs = sorted(f"{origin}/p/{j}" for j in range(5))
        out = tmp_path / "out"
        args = ["run", origin, "-o", str(out), "--config", str(config), "--no-progress"]
        done = cli(*args, "--scheduler", "local:1", "--shards", "3", "--format", "parquet")
        assert done.returncode == 0, done.stderr
        con = duckdb.connect()
        try:
            got = con.execute(f"select loc from '{out}/**/*.parquet' order by loc")
            assert [r[0] for r in got.fetchall()] == locs
            merged = tmp_path / "urls.parquet"
            done = cli("merge", str(out), "-o", str(merged))
            assert done.returncode == 0, done.stderr
            assert merged.read_bytes()[:4] == b"PAR1"
            got = con.execute(f"select loc from '{merged}' order by loc")
            assert [r[0] for r in got.fetchall()] == locs
        finally:
            con.close()
        refused = cli("merge", str(out), "-o", str(tmp_path / "u.jsonl"))
        assert refused.returncode == 2
        assert "the shards wrote parquet" in refused.stderr
    finally:
        server.terminate()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()
