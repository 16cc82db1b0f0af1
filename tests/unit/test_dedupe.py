from __future__ import annotations

import os
import random
from array import array
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvester.config import DedupeConfig, load_config
from harvester.errors import ConfigError
from harvester.urls.dedupe import SeenSet

if TYPE_CHECKING:
    from pathlib import Path


def _fps(n: int, seed: int = 1) -> list[int]:
    rng = random.Random(seed)
    return [rng.getrandbits(64) for _ in range(n)]


def dedupe_table() -> object:
    """The compiled hash table of table mode, or None where it is not built."""
    from harvester.urls import dedupe

    return dedupe._FpTable


def array_of(fps: list[int]) -> array[int]:
    return array("Q", fps)


def test_exact_mode_add_reports_new_once() -> None:
    seen = SeenSet()
    fps = _fps(5_000)
    assert all(seen.add(fp) for fp in fps)  # enough to split buckets several times
    assert not any(seen.add(fp) for fp in fps)
    assert len(seen) == 5_000
    assert all(fp in seen for fp in fps)
    assert 0 not in seen
    assert seen.add(0)
    assert seen.add(2**64 - 1)
    assert not seen.add(2**64 - 1)


def test_exact_mode_matches_a_set_with_duplicates() -> None:
    rng = random.Random(7)
    pool = _fps(3_000, seed=2)
    seen, ref = SeenSet(), set[int]()
    for _ in range(20_000):
        fp = rng.choice(pool)
        assert seen.add(fp) is (fp not in ref)
        ref.add(fp)
    assert len(seen) == len(ref)


def test_memory_is_about_8_bytes_per_url() -> None:
    seen = SeenSet()
    for fp in _fps(200_000):
        seen.add(fp)
    assert seen.memory_bytes / 200_000 < 10


def test_spill_path(tmp_path: Path) -> None:
    from harvester.urls import dedupe

    seen = SeenSet(DedupeConfig(spill_threshold=1_000), spill_dir=tmp_path)
    fps = _fps(3_500)
    assert all(seen.add(fp) for fp in fps)
    assert seen.spilled == 3_000  # three runs of 1,000; 500 still in memory
    files = list(tmp_path.iterdir())
    # One file a run: with the compiled module the first two runs were merged into one.
    assert len(files) == len(seen._runs) == (2 if dedupe._merge_runs is not None else 3)
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

    from harvester.urls import dedupe

    with SeenSet(DedupeConfig(spill_threshold=1_000), spill_dir=tmp_path) as seen:
        seen._small = None  # straight to the buckets, so add_many takes every batch
        seen._filter_budget = 8 * 1_000
        fps = _fps(20_000)
        for start in range(0, len(fps), 500):
            assert seen.add_many(array("Q", fps[start : start + 500])) == 0
        filters = seen._filters
        assert len(filters) == len(seen._runs) >= 2
        held = sum(len(f) for f in filters if f is not None)
        assert held <= 8 * 1_000
        if dedupe._run_filter is not None:
            assert filters[0] is None  # the biggest run (16,000): past the budget
            assert filters[-1] is not None
        assert seen.add_many(array("Q", fps[::7])) == len(fps[::7])
        assert seen.add_many(array("Q", [12345, 67890])) == 0


def test_context_manager_cleans_up(tmp_path: Path) -> None:
    with SeenSet(DedupeConfig(spill_threshold=10), spill_dir=tmp_path) as seen:
        for fp in _fps(25):
            seen.add(fp)
        assert list(tmp_path.iterdir())
    assert list(tmp_path.iterdir()) == []


def test_bloom_mode() -> None:
    pytest.importorskip("rbloom")
    seen = SeenSet(DedupeConfig(mode="bloom", bloom_capacity=10_000, bloom_error_rate=1e-6))
    fps = _fps(10_000)
    new = sum(seen.add(fp) for fp in fps)
    assert new >= 9_999  # false positives possible, at 1e-6 practically none
    assert not any(seen.add(fp) for fp in fps)  # never a false negative
    assert 0 < seen.memory_bytes / 10_000 < 5


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ("[dedupe]\nmode = 'fuzzy'\n", "dedupe.mode"),
        ("[dedupe]\nspill_threshold = 0\n", "dedupe.spill_threshold"),
        ("[dedupe]\nbloom_error_rate = 1.5\n", "dedupe.bloom_error_rate"),
    ],
)
def test_bad_dedupe_config(tmp_path: Path, toml: str, key: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert key in str(info.value)


@given(
    st.lists(
        st.integers(min_value=0, max_value=2**64 - 1) | st.sampled_from([0, 1, 2**63]), max_size=300
    ),
    st.integers(min_value=1, max_value=50),
)
def test_any_sequence_matches_a_set(
    tmp_path_factory: pytest.TempPathFactory, fps: list[int], threshold: int
) -> None:
    spill_dir = tmp_path_factory.mktemp("spill")
    ref: set[int] = set()
    with SeenSet(DedupeConfig(spill_threshold=threshold), spill_dir=spill_dir) as seen:
        for fp in fps + fps[::3]:
            assert seen.add(fp) is (fp not in ref)
            ref.add(fp)
        assert len(seen) == len(ref)
    assert list(spill_dir.iterdir()) == []


def test_small_set_promotes_to_compact_buckets() -> None:
    """Small hosts use a small set; past SMALL_LIMIT everything moves to the buckets."""
    from harvester.urls.dedupe import SMALL_LIMIT

    seen = SeenSet()
    fps = [0, *_fps(SMALL_LIMIT * 3)]  # 0 too: the table keeps it aside
    assert all(seen.add(fp) for fp in fps[: SMALL_LIMIT - 1])
    small = seen._small
    assert small is not None
    assert len(small) == SMALL_LIMIT - 1
    # The small set costs at most 64 bytes a fingerprint (the set of ints: ~60).
    assert seen.memory_bytes <= SMALL_LIMIT * 64
    assert all(seen.add(fp) for fp in fps[SMALL_LIMIT - 1 :])
    assert seen._small is None  # the buckets hold them all now
    assert not any(seen.add(fp) for fp in fps)
    assert all(fp in seen for fp in fps)
    assert len(seen) == len(fps)
    assert seen.memory_bytes / len(fps) < 24


@pytest.mark.skipif(dedupe_table() is None, reason="needs the compiled module")
def test_the_small_set_is_a_table_of_16_bytes_a_slot() -> None:
    from harvester.urls._cdedupe import FpTable
    from harvester.urls.dedupe import SMALL_LIMIT

    seen = SeenSet()
    fps = _fps(SMALL_LIMIT - 1)
    for fp in fps:
        seen.add(fp)
    assert isinstance(seen._small, FpTable)
    assert sorted(seen._small) == sorted(fps)
    assert seen._small.nbytes <= 16 * SMALL_LIMIT  # at most 2 slots a fingerprint
    seen.close()
    assert isinstance(seen._small, FpTable)
    assert len(seen._small) == 0
    assert len(seen) == 0


def _add_batches_as_a_set_would(seen: SeenSet, batches: list[list[int]], ref: set[int]) -> None:
    """Add ``batches`` (then the first two again) to ``seen`` and to ``ref``: each
    ``add_many`` counts as seen what ``ref`` held, and ``seen`` ends as ``ref``."""
    for batch in [*batches, *batches[:2]]:
        expected = 0
        for fp in batch:
            expected += fp in ref
            ref.add(fp)
        assert seen.add_many(array("Q", batch)) == expected
    assert len(seen) == len(ref)
    assert all(fp in seen for fp in ref)


@pytest.mark.parametrize("compiled_inserts", [True, False], ids=["compiled", "python"])
@given(
    batches=st.lists(
        st.lists(st.integers(min_value=0, max_value=2**64 - 1) | st.sampled_from([0, 1, 2**63])),
        max_size=12,
    ),
    threshold=st.integers(min_value=100, max_value=3_000),
    small=st.sampled_from([0, 5, 4096]),
)
def test_add_many_matches_a_set(
    tmp_path_factory: pytest.TempPathFactory,
    batches: list[list[int]],
    threshold: int,
    small: int,
    compiled_inserts: bool,
) -> None:
    """Batches (with repeats inside and across them) count what a set says was seen,
    through the small set, the buckets as they split, and the spilled runs."""

    from harvester.urls import dedupe

    spill_dir = tmp_path_factory.mktemp("spill")
    saved = dedupe._add_many
    if not compiled_inserts:
        dedupe._add_many = None  # hypothesis and function-scoped fixtures do not mix
    try:
        ref: set[int] = set()
        with SeenSet(DedupeConfig(spill_threshold=threshold), spill_dir=spill_dir) as seen:
            seen._small_limit = min(small, threshold)
            if small == 0:
                seen._small = None
            _add_batches_as_a_set_would(seen, [*batches, _fps(1_000, seed=len(batches))], ref)
    finally:
        dedupe._add_many = saved
    assert list(spill_dir.iterdir()) == []


_EDGES = st.sampled_from([0, 1, 2**63, 2**64 - 1])
_TOP = st.integers(min_value=2**64 - 2**44, max_value=2**64 - 1)  # clusters that wrap


@pytest.mark.skipif(dedupe_table() is None, reason="table mode needs the compiled module")
@given(
    batches=st.lists(
        st.lists(st.integers(min_value=0, max_value=2**64 - 1) | _EDGES | _TOP), max_size=12
    ),
    threshold=st.integers(min_value=50, max_value=3_000),
)
def test_table_mode_matches_a_set(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[int]], threshold: int
) -> None:
    """Table mode answers as a set does, through its growth, its spills (each a sorted
    run made in place, clusters wrapped round the table's end among them) and ``add``."""
    spill_dir = tmp_path_factory.mktemp("spill")
    ref: set[int] = set()
    with SeenSet(DedupeConfig(spill_threshold=threshold), spill_dir=spill_dir, table=True) as seen:
        assert seen._table is not None
        _add_batches_as_a_set_would(seen, [*batches, _fps(2_000, seed=len(batches))], ref)
        assert not any(fp in seen for fp in _fps(200, seed=-1) if fp not in ref)
        for run_and_view in seen._runs:  # each spilled run is sorted
            run = run_and_view[1]
            assert all(run[i] < run[i + 1] for i in range(len(run) - 1))
        assert seen.add(2**64 - 3) is (2**64 - 3 not in ref)
        assert seen.add(2**64 - 3) is False
    assert list(spill_dir.iterdir()) == []


def test_the_cross_host_set_is_a_table_of_at_most_16_mb() -> None:
    from harvester.urls.crosshost import CrossHostTracker

    tracker = CrossHostTracker()
    try:
        seen = tracker._seen
        assert (seen._table is not None) == (dedupe_table() is not None)
        if seen._table is not None:
            for start in range(0, 1_600_000, 100_000):  # past the default threshold
                tracker.add("h", array_of(_fps(100_000, seed=start)))
                assert seen._table.nbytes <= 16 << 20
            assert seen.spilled > 0
    finally:
        tracker.close()


def test_add_many_is_compiled_where_built() -> None:
    from harvester import compiled
    from harvester.urls import dedupe

    assert (dedupe._add_many is not None) == (compiled.load("_cdedupe") is not None)


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

    from harvester.urls import dedupe

    if dedupe._run_filter is None:
        pytest.skip("no run filters without the compiled module")
    with SeenSet(DedupeConfig(spill_threshold=250_000), spill_dir=tmp_path) as seen:
        seen._small = None
        fps = _fps(260_000)
        for start in range(0, len(fps), 10_000):
            assert seen.add_many(array("Q", fps[start : start + 10_000])) == 0
        assert len(seen._runs) == len(seen._files) == 1
        assert seen.spilled * 8 > 1_900_000
        assert _mapped_rss_kb(seen._files[0].name) < 200  # (was 1,956 KB)
        probes = fps[::500]  # enough to touch most of its 489 pages, were they mapped
        assert seen.add_many(array("Q", probes)) == len(probes)  # still found
        assert _mapped_rss_kb(seen._files[0].name) < 200  # (the lookups read with pread)


def test_a_runs_filter_and_fence_made_from_the_buckets_are_those_of_the_run(
    tmp_path: Path,
) -> None:
    # Both are made before the buckets are written (so the run is never read back through
    # its mapping); they must be what the written run itself gives.
    from array import array

    from harvester.urls import dedupe

    if dedupe._run_filter is None:
        pytest.skip("no run filters or fences without the compiled module")
    with SeenSet(DedupeConfig(spill_threshold=100_000), spill_dir=tmp_path) as seen:
        seen._small = None
        fps = _fps(100_000, seed=3)
        for start in range(0, len(fps), 1_000):
            seen.add_many(array("Q", fps[start : start + 1_000]))
        assert len(seen._runs) == 1
        assert len(seen._buckets) == 1  # (the set had split into many buckets before)
        run = seen._runs[0][1]
        assert seen._fences[0] == array("Q", run[:: dedupe._FENCE])
        assert seen._filters[0] == dedupe._run_filter([array("Q", run)])


def test_runs_merge_as_they_spill_and_stay_exact(tmp_path: Path) -> None:
    # A binary counter of runs: after k spills at most log2(k) + 1 runs, each sorted, with
    # the filter and fence a spill would have made; lookups exact; merged files deleted.
    from array import array

    from harvester.urls import dedupe

    run_filter = dedupe._run_filter
    if dedupe._merge_runs is None or run_filter is None:
        pytest.skip("runs are merged by the compiled module only")
    with SeenSet(DedupeConfig(spill_threshold=1_000), spill_dir=tmp_path, table=True) as seen:
        fps = _fps(15_500, seed=7)
        for start in range(0, len(fps), 500):
            assert seen.add_many(array("Q", fps[start : start + 500])) == 0
        # 15 spills of 1,000 (binary 1111): runs of 8,000, 4,000, 2,000 and 1,000.
        assert [len(view) for _, view in seen._runs] == [8_000, 4_000, 2_000, 1_000]
        assert len(list(tmp_path.iterdir())) == 4
        spilled = sorted(fp for _, view in seen._runs for fp in view)
        assert len(set(spilled)) == 15_000
        for index, (_, view) in enumerate(seen._runs):
            run = array("Q", view)
            assert list(run) == sorted(run)
            assert seen._fences[index] == array("Q", run[:: dedupe._FENCE])
            assert seen._filters[index] == run_filter([run])
        assert seen.add_many(array("Q", fps[::3])) == len(fps[::3])  # every one found
        assert seen.add_many(array("Q", _fps(2_000, seed=8))) == 0  # none new is
        assert seen.add_many(array("Q", fps[100:600])) == 500  # (those just added too)
    assert list(tmp_path.iterdir()) == []


def test_merge_runs_reads_and_writes_whole_runs(tmp_path: Path) -> None:
    # The streaming merge on its own: runs longer than its chunk, at offsets, a shared
    # fingerprint written once.
    from array import array

    from harvester.urls import dedupe

    merge, run_filter = dedupe._merge_runs, dedupe._run_filter
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
    assert fence == array("Q", merged[:: dedupe._FENCE])
    assert bloom == run_filter([merged])
    with open(src, "rb") as fa, open(out, "wb") as fo:
        _, none, _ = merge(fa.fileno(), 16, 10, fa.fileno(), 16, 0, fo.fileno(), False)
    assert none is None
    with open(src, "rb") as fa, open(out, "wb") as fo, pytest.raises(OSError, match="ends early"):
        merge(fa.fileno(), 16, 10**7, fa.fileno(), 16, 1, fo.fileno())
