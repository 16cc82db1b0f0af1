"""``runtime.tune_malloc``: the threads of a tuned process share glibc's one malloc arena."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")


def glibc_defaults() -> dict[str, str]:
    """This environment without glibc's malloc tunables (``MALLOC_*``): Dask's nannies
    set ``MALLOC_TRIM_THRESHOLD_`` in the process that starts a cluster, and an earlier
    test's cluster would otherwise change the "default" baseline below."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}


# Threads that allocate, then glibc's own account of its arenas (malloc_info's XML
# has one <heap nr="..."> per arena), read in a fresh interpreter.
PROGRAM = """
import ctypes, os, sys, tempfile, threading
if sys.argv[1] == "tuned":
    from harvester.run.runtime import tune_malloc
    tune_malloc()
def work():
    keep = [bytearray(4096) for _ in range(200)]
    del keep
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
libc = ctypes.CDLL(None)
libc.fdopen.restype = ctypes.c_void_p
with tempfile.TemporaryFile() as fh:
    stream = libc.fdopen(os.dup(fh.fileno()), b"w")
    libc.malloc_info(0, ctypes.c_void_p(stream))
    libc.fclose(ctypes.c_void_p(stream))
    fh.seek(0)
    print(fh.read().count(b"<heap nr="))
"""


def printed(program: str, mode: str) -> int:
    """The number ``program`` prints, run with ``mode`` in a fresh interpreter
    under glibc's default tunables."""
    out = subprocess.run(
        [sys.executable, "-c", program, mode],
        capture_output=True,
        text=True,
        check=True,
        env=glibc_defaults(),
    )
    return int(out.stdout)


def arenas(mode: str) -> int:
    return printed(PROGRAM, mode)


def test_threads_share_one_arena_once_tuned() -> None:
    assert arenas("tuned") == 1
    # Without it, glibc gives the threads arenas of their own (the baseline the test
    # relies on: were it 1 here too, the assertion above would prove nothing).
    assert arenas("default") > 1


# Large blocks freed under a small one that stays (a long run's pattern: per-host
# buffers between longer-lived objects), then the RSS glibc kept, in a fresh process.
RETAINED = """
import sys
if sys.argv[1] == "tuned":
    from harvester.run.runtime import tune_malloc
    tune_malloc()
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096
big = bytearray(4 << 20)
del big  # default glibc: the mmap threshold is now 4 MiB, later blocks come from the heap
before = rss()
blocks, pins = [], []
for _ in range(200):
    blocks.append(bytearray(300_000))
    pins.append(bytearray(600))  # small, long-lived, on top of each block
del blocks
print(rss() - before)
"""


def retained(mode: str) -> int:
    return printed(RETAINED, mode)


def test_freed_large_blocks_are_given_back_once_tuned() -> None:
    # 200 blocks of 300 kB = 60 MB allocated and freed: tuned, each had its own
    # mapping and went back; by default they stay resident in the heap.
    assert retained("tuned") < 10_000_000
    assert retained("default") > 50_000_000
