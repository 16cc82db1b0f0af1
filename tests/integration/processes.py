"""A run's processes as the tests look at them: a process's children and their roles
(/proc), whether one is alive, and how many worker processes a run starts."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

from harvester.run.seeds import parse_seed, shard_of

if TYPE_CHECKING:
    from tests.integration.conftest import Site


def children_of(pid: int) -> dict[int, str]:
    """Direct children of ``pid`` (Linux /proc), each with its role: the first argument
    after ``-c CODE`` (a harvester worker's is ``harvester-worker``), else its program.
    """
    found: dict[int, str] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                argv = [b""]
            role = argv[argv.index(b"-c") + 2] if b"-c" in argv[:-2] else argv[0]
            found[int(child)] = role.decode(errors="replace")
    return found


def shards_used(hosts: list[Site], workers: int) -> int:
    """How many worker processes a run over ``hosts`` starts (one per shard with a host)."""
    if workers == 1:
        return 0
    return len({shard_of(parse_seed(h.origin).host, workers) for h in hosts})


async def workers_of(pid: int, workers: int) -> dict[int, str]:
    """The children of ``pid`` (with their roles), sampled until ``workers`` harvester
    workers showed up (5 s at most).

    One look is not enough: /proc lists a child under the thread that started it, and
    while that thread (the dispatcher) exits, its children move to another thread.
    """
    kids: dict[int, str] = {}
    deadline = time.monotonic() + 5
    while True:
        kids.update(children_of(pid))
        found = sum(role == "harvester-worker" for role in kids.values())
        if found >= workers or time.monotonic() > deadline:
            return kids
        await asyncio.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, only not yet reaped
