"""A healthy state file that cannot be written is not a corrupt one (issue 50 item 5).

``harvester run`` runs as a user meets it: once as an unprivileged user (``setpriv``
to nobody) on a state file it may only read, once in a private mount namespace
(``unshare -m``) where the state file's directory is mounted read-only. Each must
exit 1 saying the file cannot be written and why, with advice about permissions,
never "corrupt" nor "move it away to start afresh" (which would throw away a
healthy history); the file must be left byte for byte, with no ``-wal``/``-shm``
files beside it. Skipped, saying why, where dropping privileges or mounting is
not permitted.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harvester.state.rows import LedgerRows
from harvester.state.store import StateStore

if TYPE_CHECKING:
    from collections.abc import Iterator

REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory anyone may enter and write (pytest's own are root's only)."""
    path = Path(tempfile.mkdtemp(prefix="harvester-access-", dir="/tmp"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def healthy_state(path: Path) -> str:
    """A state file with one complete run and a ledger chunk; its sha256."""
    with StateStore(str(path)) as store:
        store.start_run(emit="delta", output=None)
        store.add_urls("a.example", LedgerRows.of([(1, "https://a.example/p", "s.xml", None)]))
        store.finish_run("complete")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_args(state: Path, out: Path) -> list[str]:
    # The origin is never asked: the state file is refused first.
    return [
        sys.executable, "-m", "harvester", "run", "http://127.0.0.1:9/",
        "--allow-private", "--no-progress", "-o", str(out), "--state", str(state),
    ]  # fmt: skip


def assert_cannot_write(status: int, err: str, why: str) -> None:
    assert status == 1, err
    assert "cannot write" in err, err
    assert why in err.lower(), err
    assert "corrupt" not in err, err
    assert "to start afresh" not in err, err
    assert "permissions" in err, err  # the advice that fits
    assert "Traceback" not in err, err


def untouched(state: Path, digest: str) -> None:
    assert hashlib.sha256(state.read_bytes()).hexdigest() == digest
    assert not Path(f"{state}-wal").exists()
    assert not Path(f"{state}-shm").exists()


@pytest.mark.parametrize("lock_file", ["root's", "none yet"])
def test_a_state_file_the_user_may_only_read(shared_dir: Path, lock_file: str) -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv(1) to run harvester as an unprivileged user")
    state = shared_dir / "state.sqlite"
    digest = healthy_state(state)
    state.chmod(0o444)
    if lock_file == "none yet":
        Path(f"{state}.lock").unlink()  # (so the check reaches the state file itself)
    command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    proc = subprocess.run(
        [*command, *run_args(state, shared_dir / "out.jsonl")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=50,
        check=False,
    )
    if "Permission denied" in proc.stderr and "harvester" not in proc.stderr:
        pytest.skip(f"nobody cannot run this checkout's Python here: {proc.stderr.strip()}")
    assert_cannot_write(proc.returncode, proc.stderr, "permission denied")
    untouched(state, digest)


def test_a_state_file_on_a_read_only_filesystem(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) here to mount a directory read-only in a private namespace")
    ro = tmp_path / "ro"
    ro.mkdir()
    state = ro / "state.sqlite"
    digest = healthy_state(state)
    command = " ".join(run_args(state, tmp_path / "out.jsonl"))
    script = (
        f"mount --bind {ro} {ro} && mount -o remount,bind,ro {ro} || exit 97\n"
        f"{command} 2> {tmp_path}/err; echo $? > {tmp_path}/rc"
    )
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=50,
        check=False,
    )
    if proc.returncode == 97 or proc.stderr.startswith("unshare:"):
        pytest.skip(f"cannot mount read-only in a private mount namespace: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    err = (tmp_path / "err").read_text()
    assert_cannot_write(int((tmp_path / "rc").read_text()), err, "read-only file system")
    untouched(state, digest)
