from __future__ import annotations

import random
from array import array
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvester.config import DedupeConfig
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
_BATCHES = st.lists(
    st.lists(st.integers(min_value=0, max_value=2**64 - 1) | _EDGES | _TOP), max_size=12
)
_THRESHOLDS = st.integers(min_value=50, max_value=3_000)


@pytest.mark.skipif(dedupe_table() is None, reason="table mode needs the compiled module")
@given(batches=_BATCHES, threshold=_THRESHOLDS)
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
        for run_and_view in seen._spilled.runs:  # each spilled run is sorted
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


@pytest.mark.skipif(dedupe_table() is None, reason="the compact handle needs the compiled module")
@given(batches=_BATCHES, threshold=_THRESHOLDS)
def test_the_compact_handle_answers_as_add_does(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[int]], threshold: int
) -> None:
    """``compact`` (the compiled URL loop's inserts past the small set), settled at the
    end of each batch or once its ``room`` is used, answers each fingerprint as ``add``
    does on a twin set, repeats inside a batch among them; the twins split and spill
    at the same fingerprints, so they hold the same buckets, runs and memory."""
    spill_dir = tmp_path_factory.mktemp("spill")
    cfg = DedupeConfig(spill_threshold=threshold)
    with SeenSet(cfg, spill_dir=spill_dir) as seen, SeenSet(cfg, spill_dir=spill_dir) as twin:
        for fp in _fps(threshold // 2, seed=threshold):  # then past the small set
            seen.add(fp)
            twin.add(fp)
        for one in (seen, twin):
            if one._small is not None:
                one._leave_small(one._small)
        for batch in [*batches, _fps(2_000, seed=len(batches)), *batches[:2]]:
            handle = seen.compact()
            answers = []
            for fp in batch:
                assert handle is not None
                answers.append(handle.add(fp))
                if handle.count >= handle.room:
                    added, handle = handle.count, None  # (gone before a spill)
                    seen.settle(added)
                    handle = seen.compact()
            assert handle is not None
            added, handle = handle.count, None
            seen.settle(added)
            assert answers == [twin.add(fp) for fp in batch]
            assert len(seen) == len(twin)
            assert seen._buckets == twin._buckets
            assert seen.spilled == twin.spilled
            assert seen.memory_bytes == twin.memory_bytes
        held = {fp for batch in batches for fp in batch} | set(_fps(2_000, seed=len(batches)))
        assert all(fp in seen for fp in held)
        assert not any(fp in seen for fp in _fps(200, seed=-1) if fp not in twin)
    assert list(spill_dir.iterdir()) == []


def test_no_compact_handle_where_add_must_be_called() -> None:
    from harvester.urls import dedupe

    seen = SeenSet()
    assert seen.compact() is None  # the small set: _chost adds to it itself
    assert SeenSet(table=True).compact() is None
    seen._leave_small(seen._small or set())
    assert (seen.compact() is None) == (dedupe._Compact is None)
