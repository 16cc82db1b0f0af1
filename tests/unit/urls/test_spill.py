"""The seen-set's spilled runs (harvester/urls/spill.py): files, filters, fences, merging.

Driven through ``SeenSet`` (its owner), as a run grows past ``spill_threshold``.
"""

from __future__ import annotations

import os
import random
from typing import TYPE_CHECKING

import pytest

from harvester.config import DedupeConfig
from harvester.urls.dedupe import SeenSet

if TYPE_CHECKING:
    from pathlib import Path


def _fps(n: int, seed: int = 1) -> list[int]:
    rng = random.Random(seed)
    return [rng.getrandbits(64) for _ in range(n)]


def test_spill_path(tmp_path: Path) -> None:
    from harvester.urls import spill

    seen = SeenSet(DedupeConfig(spill_threshold=1_000), spill_dir=tmp_path)
    fps = _fps(3_500)
    assert all(seen.add(fp) for fp in fps)
    assert seen.spilled == 3_000  # three runs of 1,000; 500 still in memory
    files = list(tmp_path.iterdir())
    # One file a run: with the compiled module the first two runs were merged into one.
    assert len(files) == len(seen._spilled.runs) == (2 if spill._merge_runs is not None else 3)
    assert all(f.name.startswith("harvester-seen-") for f in files)
    assert not any(seen.add(fp) for fp in fps)  # found in spilled runs and in memory
    assert all(fp in seen for fp in fps)
    assert seen.add(12345)
    seen.close()
    assert list(tmp_path.iterdir()) == []
    seen.close()  # idempotent
    assert seen.add(fps[0])  # empty after close


def test_run_filters_stay_within_their_budget(tmp_path: Path) -> None:
    # Each spilled run gets a Bloom filter (1-2 bytes a fingerprint, where the compiled
    # module is built) until they would hold more than the set's budget; later runs have
    # none and are bisected. Lookups are exact either way.
    from array import array

    from harvester.urls import spill

    with SeenSet(DedupeConfig(spill_threshold=1_000), spill_dir=tmp_path) as seen:
        seen._small = None  # straight to the buckets, so add_many takes every batch
        seen._spilled.filter_budget = 8 * 1_000
        fps = _fps(20_000)
        for start in range(0, len(fps), 500):
            assert seen.add_many(array("Q", fps[start : start + 500])) == 0
        filters = seen._spilled.filters
        assert len(filters) == len(seen._spilled.runs) >= 2
        held = sum(len(f) for f in filters if f is not None)
        assert held <= 8 * 1_000
        if spill._run_filter is not None:
            assert filters[0] is None  # the biggest run (16,000): past the budget
            assert filters[-1] is not None
        assert seen.add_many(array("Q", fps[::7])) == len(fps[::7])
        assert seen.add_many(array("Q", [12345, 67890])) == 0


def _mapped_rss_kb(path: str) -> int:
    """This process's resident KB of the mappings of ``path`` (from /proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and ":" in head[3]:  # a mapping's first line
                inside = head[-1] == path
            elif inside and head[0] == "Rss:":
                total += int(head[1])
    return total


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs Linux /proc")
def test_a_spilled_run_never_becomes_resident_through_its_mapping(tmp_path: Path) -> None:
    # The run's filter and fence are made from the buckets, and add_many reads the run's
    # pages with pread: nothing reads it through its mapping, so a spilled run does not
    # count in the writer's RSS (2 MB here, 16 MB a run at the default threshold).
    from array import array

    from harvester.urls import spill

    if spill._run_filter is None:
        pytest.skip("no run filters without the compiled module")
    with SeenSet(DedupeConfig(spill_threshold=250_000), spill_dir=tmp_path) as seen:
        seen._small = None
        fps = _fps(260_000)
        for start in range(0, len(fps), 10_000):
            assert seen.add_many(array("Q", fps[start : start + 10_000])) == 0
        assert len(seen._spilled.runs) == len(seen._spilled.files) == 1
        assert seen.spilled * 8 > 1_900_000
        assert _mapped_rss_kb(seen._spilled.files[0].name) < 200  # (was 1,956 KB)
        probes = fps[::500]  # enough to touch most of its 489 pages, were they mapped
        assert seen.add_many(array("Q", probes)) == len(probes)  # still found
        assert _mapped_rss_kb(seen._spilled.files[0].name) < 200  # (the lookups read with pread)


def test_a_runs_filter_and_fence_made_from_the_buckets_are_those_of_the_run(
    tmp_path: Path,
) -> None:
    # Both are made before the buckets are written (so the run is never read back through
    # its mapping); they must be what the written run itself gives.
    from array import array

    from harvester.urls import spill

    if spill._run_filter is None:
        pytest.skip("no run filters or fences without the compiled module")
    with SeenSet(DedupeConfig(spill_threshold=100_000), spill_dir=tmp_path) as seen:
        seen._small = None
        fps = _fps(100_000, seed=3)
        for start in range(0, len(fps), 1_000):
            seen.add_many(array("Q", fps[start : start + 1_000]))
        assert len(seen._spilled.runs) == 1
        assert len(seen._buckets) == 1  # (the set had split into many buckets before)
        run = seen._spilled.runs[0][1]
        assert seen._spilled.fences[0] == array("Q", run[:: spill._FENCE])
        assert seen._spilled.filters[0] == spill._run_filter([array("Q", run)])


def test_runs_merge_as_they_spill_and_stay_exact(tmp_path: Path) -> None:
    # A binary counter of runs: after k spills at most log2(k) + 1 runs, each sorted, with
    # the filter and fence a spill would have made; lookups exact; merged files deleted.
    from array import array

    from harvester.urls import spill

    run_filter = spill._run_filter
    if spill._merge_runs is None or run_filter is None:
        pytest.skip("runs are merged by the compiled module only")
    with SeenSet(DedupeConfig(spill_threshold=1_000), spill_dir=tmp_path, table=True) as seen:
        fps = _fps(15_500, seed=7)
        for start in range(0, len(fps), 500):
            assert seen.add_many(array("Q", fps[start : start + 500])) == 0
        # 15 spills of 1,000 (binary 1111): runs of 8,000, 4,000, 2,000 and 1,000.
        assert [len(view) for _, view in seen._spilled.runs] == [8_000, 4_000, 2_000, 1_000]
        assert len(list(tmp_path.iterdir())) == 4
        spilled = sorted(fp for _, view in seen._spilled.runs for fp in view)
        assert len(set(spilled)) == 15_000
        for index, (_, view) in enumerate(seen._spilled.runs):
            run = array("Q", view)
            assert list(run) == sorted(run)
            assert seen._spilled.fences[index] == array("Q", run[:: spill._FENCE])
            assert seen._spilled.filters[index] == run_filter([run])
        assert seen.add_many(array("Q", fps[::3])) == len(fps[::3])  # every one found
        assert seen.add_many(array("Q", _fps(2_000, seed=8))) == 0  # none new is
        assert seen.add_many(array("Q", fps[100:600])) == 500  # (those just added too)
    assert list(tmp_path.iterdir()) == []


def test_merge_runs_reads_and_writes_whole_runs(tmp_path: Path) -> None:
    # The streaming merge on its own: runs longer than its chunk, at offsets, a shared
    # fingerprint written once.
    from array import array

    from harvester.urls import spill

    merge, run_filter = spill._merge_runs, spill._run_filter
    if merge is None or run_filter is None:
        pytest.skip("needs the compiled module")
    a = array("Q", sorted(_fps(70_000, seed=1)))
    b = array("Q", sorted([*_fps(140_000, seed=2), a[5]]))
    src, out = tmp_path / "src", tmp_path / "out"
    src.write_bytes(b"x" * 16 + a.tobytes() + b.tobytes())
    with open(src, "rb") as fa, open(out, "wb") as fo:
        count, bloom, fence = merge(
            fa.fileno(), 16, len(a), fa.fileno(), 16 + 8 * len(a), len(b), fo.fileno()
        )
    merged = array("Q")
    merged.frombytes(out.read_bytes())
    assert count == len(merged) == len(a) + len(b) - 1
    assert list(merged) == sorted(set(a) | set(b))
    assert fence == array("Q", merged[:: spill._FENCE])
    assert bloom == run_filter([merged])
    with open(src, "rb") as fa, open(out, "wb") as fo:
        _, none, _ = merge(fa.fileno(), 16, 10, fa.fileno(), 16, 0, fo.fileno(), False)
    assert none is None
    with open(src, "rb") as fa, open(out, "wb") as fo, pytest.raises(OSError, match="ends early"):
        merge(fa.fileno(), 16, 10**7, fa.fileno(), 16, 1, fo.fileno())
