"""A full disk, for real: ``harvester run`` writing to a small tmpfs (issue 50 item 4).

Each case runs in a mount namespace of its own (``unshare -m``: we run as root in
the test machine, and the mount is gone with the namespace), with a tmpfs too
small for the output: the run must exit 1 naming the first error, the full disk
with its errno, never a later error it caused ("cannot rollback - no transaction
is active", ``ArrowInvalid: Operation on closed file``) nor a traceback. The same
script then grows the tmpfs and runs again: with a state file the run resumes
and every URL is written exactly once; without, it starts afresh and writes them
all. Skipped, saying why, where the namespace or the mount is not permitted.
"""

from __future__ import annotations

import asyncio
import hashlib
import shlex
import shutil
import sys
from typing import TYPE_CHECKING, Any

import pytest

from tests.roundtrip import read_csv, read_jsonl, read_parquet

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.conftest import Site, Sites

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
READERS = {"jsonl": read_jsonl, "csv": read_csv, "parquet": read_parquet}
CONFIG = """
[fetch]
allow = ["127.0.0.0/8"]
retries = 0
[politeness.default]
rate = 1000.0
[run]
uvloop = false
workers = {workers}
[state]
commit_interval = 0.0
[output]
row_group_rows = 500
"""
SCRIPT = """
mount -t tmpfs -o size={size} tmpfs {disk} || exit 97
{run} > /dev/null 2> {tmp}/err1; echo $? > {tmp}/rc1
mount -o remount,size=64m {disk} || exit 98
{run} > /dev/null 2> {tmp}/err2; echo $? > {tmp}/rc2
cp -a {disk}/. {tmp}/copy/
"""


async def big_sites(sites: Sites, hosts: int, per_file: int) -> tuple[list[Site], set[str]]:
    """``hosts`` hosts on 127.0.0.47, robots.txt → two urlsets of long URLs each."""
    out: list[Site] = []
    expected: set[str] = set()
    for _ in range(hosts):
        routes: dict[str, Any] = {}
        site = await sites.start("127.0.0.47", routes)
        for name in ("a", "b"):
            # Paths of hex digests: the Parquet output too is far larger than the disk.
            locs = [site.url(f"/{name}/{_digest(name, n)}") for n in range(per_file)]
            expected.update(locs)
            body = "".join(
                f"<url><loc>{loc}</loc><lastmod>2024-01-02</lastmod></url>" for loc in locs
            )
            routes[f"/{name}.xml"] = f'<?xml version="1.0"?><urlset {NS}>{body}</urlset>'.encode()
        routes["/robots.txt"] = (
            f"Sitemap: {site.url('/a.xml')}\nSitemap: {site.url('/b.xml')}\n".encode()
        )
        out.append(site)
    return out, expected


def _digest(name: str, n: int) -> str:
    return hashlib.sha256(f"{name}{n}".encode()).hexdigest()


async def full_disk_then_room(
    tmp_path: Path, args: list[str], size: str, workers: int = 1
) -> tuple[int, str, int, str, Path]:
    """Run ``harvester run ARGS`` on a tmpfs of ``size``, then again once it has room.

    ``args`` name the output as ``DISK/...``. Returns both exit statuses and stderrs,
    and where the tmpfs's files were copied to.
    """
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) here to make a private mount namespace for a small tmpfs")
    disk, copy = tmp_path / "disk", tmp_path / "copy"
    disk.mkdir()
    copy.mkdir()
    config = tmp_path / "harvester.toml"
    config.write_text(CONFIG.format(workers=workers))
    command = [sys.executable, "-m", "harvester", "run", "--config", str(config), *args]
    run = " ".join(shlex.quote(a.replace("DISK", str(disk))) for a in command)
    script = SCRIPT.format(size=size, disk=disk, tmp=tmp_path, run=run)
    proc = await asyncio.create_subprocess_exec(
        "unshare", "-m", "--propagation", "private", "sh", "-c", script,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _out, err = await asyncio.wait_for(proc.communicate(), timeout=55)
    why = err.decode().strip() or f"status {proc.returncode}"
    if proc.returncode in (97, 98) or why.startswith("unshare:"):  # (the mount, or unshare)
        pytest.skip(f"cannot mount a small tmpfs in a private mount namespace here: {why}")
    assert proc.returncode == 0, why

    def read(name: str) -> str:
        return (tmp_path / name).read_text()

    return int(read("rc1")), read("err1"), int(read("rc2")), read("err2"), copy


def assert_reported_as_itself(status: int, err: str) -> None:
    """Exit 1, one line naming the full disk with its errno, nothing that came after it."""
    assert status == 1, err
    assert "Traceback" not in err
    assert "cannot rollback" not in err
    assert "closed file" not in err
    failed = [line for line in err.splitlines() if "run failed" in line]
    assert len(failed) == 1, err
    assert "No space left on device" in failed[0] or "SQLITE_FULL" in failed[0], err
    assert "28" in failed[0] or "ENOSPC" in failed[0], err


@pytest.mark.parametrize(
    ("fmt", "workers"), [("jsonl", 1), ("jsonl", 2), ("csv", 1), ("parquet", 1)]
)
async def test_a_full_disk_with_a_state_file_is_reported_and_the_run_resumes(
    sites: Sites, tmp_path: Path, fmt: str, workers: int
) -> None:
    hosts, expected = await big_sites(sites, 4, 1500)
    origins = [h.origin for h in hosts]
    args = [*origins, "-o", f"DISK/urls.{fmt}", "--emit", "new", "--no-progress"]
    status, err, again, err2, copy = await full_disk_then_room(tmp_path, args, "1200k", workers)
    assert_reported_as_itself(status, err)
    assert again == 0, err2
    assert "resuming unfinished run" in err2
    urls = [r["url"] for r in READERS[fmt](str(copy / f"urls.{fmt}"))]
    assert len(urls) == len(set(urls))
    assert set(urls) == expected


async def test_a_full_disk_under_parquet_without_a_state_file_is_reported(
    sites: Sites, tmp_path: Path
) -> None:
    fmt = "parquet"  # (JSON Lines reported its ENOSPC as itself already)
    hosts, expected = await big_sites(sites, 4, 1500)
    args = [*(h.origin for h in hosts), "-o", f"DISK/urls.{fmt}", "--no-state", "--no-progress"]
    status, err, again, err2, copy = await full_disk_then_room(tmp_path, args, "120k")
    assert_reported_as_itself(status, err)
    assert again == 0, err2
    assert {r["url"] for r in READERS[fmt](str(copy / f"urls.{fmt}"))} == expected
