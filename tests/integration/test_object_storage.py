"""``-o s3://bucket/prefix/``: a run published to a real S3-compatible server on loopback.

moto's S3 server (``ThreadedMotoServer``, its server mode: HTTP on 127.0.0.1, a free
port) stands in for the store; the CLI runs as a user types it, with dummy
credentials and ``AWS_ENDPOINT_URL`` in its environment, and the objects are read
back over HTTP with s3fs and pyarrow. No client is mocked. Each format goes to a
prefix (parts, then ``_SUCCESS`` naming them) and matches a local run's records; a
URL naming an object gets that one object; ``--scheduler local`` publishes one part
per shard; a store that refuses the upload fails the run with one line, exit 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

pa = pytest.importorskip("pyarrow")
s3fs = pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

import pyarrow.csv as pcsv  # noqa: E402
import pyarrow.dataset as ds  # noqa: E402
import pyarrow.json as pjson  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from tests.integration.clusters import SERVER  # noqa: E402
from tests.integration.conftest import free_port  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

BUCKET = "harvest"


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    """moto's S3 server on loopback, one bucket; yields the environment that reaches it."""
    port = free_port("127.0.0.1")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {
        "AWS_ACCESS_KEY_ID": "dummy",
        "AWS_SECRET_ACCESS_KEY": "dummy",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "NO_PROXY": "127.0.0.1",
    }
    try:
        store(env).mkdir(BUCKET)
        yield env
    finally:
        server.stop()


def store(env: dict[str, str]) -> Any:
    """An s3fs filesystem on the loopback server (no cache: each test reads afresh)."""
    return s3fs.S3FileSystem(
        key=env["AWS_ACCESS_KEY_ID"],
        secret=env["AWS_SECRET_ACCESS_KEY"],
        client_kwargs={"endpoint_url": env["AWS_ENDPOINT_URL"]},
        skip_instance_cache=True,
        use_listings_cache=False,
    )


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    """A loopback site of 5 URLs, served by a child process."""
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, "127.0.0.122"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()


def harvester(env: dict[str, str], tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``harvester ARGS`` with the store's environment and a stage directory under ``tmp``."""
    config = tmp / "c.toml"
    config.write_text('[fetch]\nallow = ["127.0.0.0/8"]\n[run]\nuvloop = false\n')
    child_env = {**os.environ, **env, "HARVESTER_STAGE_DIR": str(tmp / "stage")}
    return subprocess.run(
        [sys.executable, "-m", "harvester", *args, "--config", str(config), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        env=child_env,
    )


def table(fs: Any, path: str, fmt: str) -> Any:
    """One object of the store as a pyarrow table, read over HTTP."""
    if fmt == "parquet":
        return pq.read_table(path, filesystem=fs)
    with fs.open(path, "rb") as fh:
        return pcsv.read_csv(fh) if fmt == "csv" else pjson.read_json(fh)


def local(path: Path, fmt: str) -> Any:
    if fmt == "parquet":
        return pq.read_table(path)
    return pcsv.read_csv(path) if fmt == "csv" else pjson.read_json(path)


def by_loc(t: Any) -> list[dict[str, Any]]:
    return sorted(t.to_pylist(), key=lambda r: r["loc"])


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_a_run_to_a_prefix_publishes_its_part_then_success(
    s3: dict[str, str], origin: str, tmp_path: Path, fmt: str
) -> None:
    done = harvester(s3, tmp_path, "run", origin, "-o", str(tmp_path / f"one.{fmt}"))
    assert done.returncode == 0, done.stderr
    expected = by_loc(local(tmp_path / f"one.{fmt}", fmt))
    assert len(expected) == 5

    url = f"s3://{BUCKET}/{fmt}/"
    done = harvester(s3, tmp_path, "run", origin, "-o", url, "--format", fmt)
    assert done.returncode == 0, done.stderr
    fs = store(s3)
    part = f"{BUCKET}/{fmt}/part-00000.{fmt}"
    success = json.loads(fs.cat_file(f"{BUCKET}/{fmt}/_SUCCESS"))
    names = {o["name"]: o for o in success["objects"]}
    assert set(names) == {f"part-00000.{fmt}", "report.json", "hosts.ndjson"}
    for name, entry in names.items():  # what _SUCCESS names is there, whole
        assert fs.size(f"{BUCKET}/{fmt}/{name}") == entry["bytes"]
    assert names[f"part-00000.{fmt}"]["records"] is True
    assert by_loc(table(fs, part, fmt)) == expected
    report = json.loads(fs.cat_file(f"{BUCKET}/{fmt}/report.json"))
    assert report["urls"] == 5
    # The glob of the format takes the records only.
    assert fs.glob(f"{BUCKET}/{fmt}/*.{fmt}") == [part]


def test_a_url_naming_an_object_gets_that_object_and_its_report_beside(
    s3: dict[str, str], origin: str, tmp_path: Path
) -> None:
    url = f"s3://{BUCKET}/named/urls.parquet"
    done = harvester(s3, tmp_path, "run", origin, "-o", url)  # the format from the name
    assert done.returncode == 0, done.stderr
    fs = store(s3)
    assert sorted(fs.ls(f"{BUCKET}/named", detail=False)) == [
        f"{BUCKET}/named/urls.parquet",
        f"{BUCKET}/named/urls.parquet.hosts.ndjson",
        f"{BUCKET}/named/urls.parquet.report.json",
    ]
    got = by_loc(table(fs, f"{BUCKET}/named/urls.parquet", "parquet"))
    assert [r["loc"] for r in got] == sorted(f"{origin}/p/{j}" for j in range(5))
    assert {r["event"] for r in got} == {"new"}
    # A second run to the same URL: the state kept in its stage directory knows the
    # URLs (undated, so unverified), as beside a local -o; the object is replaced whole.
    done = harvester(s3, tmp_path, "run", origin, "-o", url)
    assert done.returncode == 0, done.stderr
    again = by_loc(table(store(s3), f"{BUCKET}/named/urls.parquet", "parquet"))
    assert [r["loc"] for r in again] == [r["loc"] for r in got]
    assert {r["event"] for r in again} == {"unverified"}


def test_a_local_cluster_run_publishes_one_part_per_shard_as_one_dataset(
    s3: dict[str, str], origin: str, tmp_path: Path
) -> None:
    pytest.importorskip("distributed")
    url = f"s3://{BUCKET}/cluster/"
    args = ("run", origin, "-o", url, "--format", "parquet", "--no-state")
    done = harvester(s3, tmp_path, *args, "--scheduler", "local:1", "--shards", "3")
    assert done.returncode == 0, done.stderr
    fs = store(s3)
    success = json.loads(fs.cat_file(f"{BUCKET}/cluster/_SUCCESS"))
    parts = sorted(o["name"] for o in success["objects"] if o["records"])
    assert parts == [f"part-{n:05d}.parquet" for n in range(3)]
    dataset = ds.dataset(
        f"{BUCKET}/cluster/", filesystem=fs, format="parquet", exclude_invalid_files=True
    )
    got = sorted(r["loc"] for r in dataset.to_table().to_pylist())
    assert got == sorted(f"{origin}/p/{j}" for j in range(5))

    refused = harvester(s3, tmp_path, *args, "--scheduler", "tcp://127.0.0.1:9")
    assert refused.returncode == 2
    assert "works with --scheduler local only" in refused.stderr


def test_a_store_that_refuses_the_upload_fails_the_run_in_one_line(
    s3: dict[str, str], origin: str, tmp_path: Path
) -> None:
    done = harvester(s3, tmp_path, "run", origin, "-o", "s3://no-such-bucket/p/")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "run failed" in done.stderr
    assert "no-such-bucket" in done.stderr
    # The harvest itself stays staged, whole, for the next attempt.
    staged = list((tmp_path / "stage").glob("*/part-00000.jsonl"))
    assert len(staged) == 1
