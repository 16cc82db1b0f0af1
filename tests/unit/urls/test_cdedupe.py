"""The compiled fingerprint (harvester/urls/_cdedupe.pyx) is hashlib's BLAKE2b-64, bit for bit.

The value is a contract: the state file keys every URL by it, so a run with the
compiled module and a run without must agree on every string, whatever its
length (block boundaries at 128 bytes) or script (multi-byte UTF-8).
"""

from __future__ import annotations

import random
from array import array
from hashlib import blake2b
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvester.state import chunks
from harvester.state.chunks import NO_LASTMOD, _find_many_py, _sort_unique_py
from harvester.state.ledger import classify
from harvester.urls.fingerprint import fingerprint, fingerprint_py
from tests.compiled import compiled_module

if TYPE_CHECKING:
    from pathlib import Path

cdedupe = compiled_module("_cdedupe")


def reference(text: str) -> int:
    return int.from_bytes(blake2b(text.encode(), digest_size=8).digest(), "big")


def test_the_pipeline_uses_the_compiled_one() -> None:
    # What these tests compare with the Python twins is what the pipeline calls.
    assert fingerprint is cdedupe.fingerprint
    assert chunks._sort_unique is cdedupe.sort_unique
    assert chunks._find_many is cdedupe.find_many
    assert chunks.classify_many is cdedupe.classify_many  # (what ledger.py calls)


def test_known_value() -> None:
    # int(hashlib.blake2b(b"https://example.com/", digest_size=8).hexdigest(), 16), fixed
    # here: a change in both implementations at once would break every state file.
    assert cdedupe.fingerprint("https://example.com/") == 1493557592560457051
    assert cdedupe.fingerprint("") == reference("")


@pytest.mark.parametrize("length", range(300))
def test_every_length_across_block_boundaries(length: int) -> None:
    text = "".join(chr(97 + (i * 7) % 26) for i in range(length))
    assert cdedupe.fingerprint(text) == fingerprint_py(text) == reference(text)


@settings(max_examples=2000, deadline=None)
@given(st.text(max_size=400))
def test_generated_strings_agree(text: str) -> None:
    try:
        expected = reference(text)
    except UnicodeEncodeError:  # a lone surrogate: both refuse it the same way
        with pytest.raises(UnicodeEncodeError):
            cdedupe.fingerprint(text)
        return
    assert cdedupe.fingerprint(text) == expected


def test_a_run_filter_never_says_no_to_a_member() -> None:
    # The writer's cross-host set tests a spilled run's filter before bisecting the run:
    # a member the filter missed would be counted as new. Non-members mostly get a no.
    rng = random.Random(7)
    members = sorted({rng.getrandbits(64) for _ in range(20_000)})
    run = array("Q", members)
    bits = cdedupe.run_filter(run)
    assert len(bits) & (len(bits) - 1) == 0  # a power of two of bytes
    assert len(bits) >= len(members)  # 8 bits a fingerprint at least
    buckets: list[array[int]] = [array("Q")]
    added, repeated = cdedupe.add_many(buckets, 64, run, [memoryview(run)], [bits])
    assert (added, repeated) == (0, len(members))  # every member found through its filter
    others = array("Q", (rng.getrandbits(64) for _ in range(20_000)))
    added, repeated = cdedupe.add_many(buckets, 64, others, [memoryview(run)], [bits])
    assert (added, repeated) == (len(set(others) - set(members)), len(others) - added)


def test_a_filter_that_run_filter_did_not_make_is_refused() -> None:
    run = array("Q", [1, 2, 3])
    with pytest.raises(ValueError, match="power of two"):
        cdedupe.add_many([array("Q")], 64, array("Q", [5]), [memoryview(run)], [bytearray(24)])


@pytest.mark.parametrize("size", [1, 511, 512, 513, 5_000])
def test_a_fenced_run_read_with_pread_finds_exactly_its_members(tmp_path: Path, size: int) -> None:
    # A fence (the run's first fingerprint of every FENCE) sends a lookup to one page of
    # the run, read with pread from the spill file: every member must be found, at a
    # page's first and last slot too, and nothing else (below the first, above the last,
    # between two pages).
    rng = random.Random(size)
    members = sorted({rng.getrandbits(64) | 1 for _ in range(size)})  # odd: evens are out
    run = array("Q", members)
    path = tmp_path / "run.u64"
    pad = 4096 * 3  # the run at an offset, as later runs in the spill file are
    path.write_bytes(b"\xff" * pad + run.tobytes())
    fence = array("Q", members[:: cdedupe.FENCE])
    probes = array("Q", members + [0, 2**64 - 2] + [m - 1 for m in members[:: cdedupe.FENCE]])
    probes.extend(m + 1 for m in members[cdedupe.FENCE - 1 :: cdedupe.FENCE])
    with open(path, "rb") as fh:
        for reads in ([(fh.fileno(), pad)], None):  # pread, and through the buffer
            buckets: list[array[int]] = [array("Q")]
            added, repeated = cdedupe.add_many(
                buckets, 64, probes, [memoryview(run)], None, [fence], reads
            )
            assert repeated == len(members)
            assert added == len(probes) - len(members)
            assert set(buckets[0]) == set(probes) - set(members)


def test_a_fence_of_another_run_is_refused() -> None:
    run = array("Q", range(1_000))
    with pytest.raises(ValueError, match="fence"):
        cdedupe.add_many(
            [array("Q")], 64, array("Q", [5]), [memoryview(run)], None, [array("Q", [0])]
        )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(-(2**63), 2**63 - 1) | st.integers(-5, 5),
            st.sampled_from([NO_LASTMOD, 0, 1, 2**40]),
        ),
        max_size=300,
    ),
    st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-6, 6), max_size=50),
)
def test_the_ledger_view_sorts_and_finds_like_the_python_twin(
    entries: list[tuple[int, int]], probes: list[int]
) -> None:
    fps = array("q", [fp for fp, _ in entries])
    lastmods = array("q", [lm for _, lm in entries])
    view = cdedupe.sort_unique(fps, lastmods)
    assert view == _sort_unique_py(fps, lastmods)
    assert list(view[0]) == sorted(set(fps))
    queries = array("q", probes + list(fps[:20]))
    assert cdedupe.find_many(view[0], queries) == _find_many_py(view[0], queries)


def test_sort_unique_refuses_columns_of_two_lengths() -> None:
    with pytest.raises(ValueError, match="length"):
        cdedupe.sort_unique(array("q", [1, 2]), array("q", [1]))


@pytest.mark.parametrize("count", [0, 1, 700, 5_000])
def test_the_table_sorts_in_place_clusters_that_wrap_round_its_end(count: int) -> None:
    rng = random.Random(count)
    uniform = [rng.getrandbits(64) for _ in range(count)]
    top = [2**64 - 1 - rng.randrange(2**40) for _ in range(count // 10 + 3)]  # wrap
    low = [rng.randrange(1, 2**40) for _ in range(5)]  # homed at the front
    values = [*uniform, *top, *low, 0, 2**64 - 1, *top[:3]]
    table = cdedupe.FpTable()
    added, repeated = table.add_many(array("Q", values), [], ahead=4)
    assert (added, repeated) == (len(set(values)), len(values) - len(set(values)))
    assert len(table) == len(set(values))
    assert all(v in table for v in values)
    assert table.nbytes >= len(set(values)) * 8 * 4 // 3
    run = table.sort()
    assert list(run) == sorted(set(values))
    run.release()
    table.clear()
    assert len(table) == 0
    assert 0 not in table
    assert values[0] not in table


@pytest.mark.parametrize("ahead", [-3, 0, 1, 8, 10_000])
def test_prefetching_ahead_changes_nothing_but_speed(ahead: int) -> None:
    """Any prefetch distance (none, negative, past the batch's end) leaves the same buckets."""
    rng = random.Random(ahead)
    shift = 56  # 256 buckets, so the prefetch runs (it is skipped with one bucket)
    batches = [array("Q", [rng.getrandbits(64) for _ in range(700)]) for _ in range(4)]
    batches.append(batches[1][::3])  # repeats, in another order
    expected = [array("Q") for _ in range(256)]
    got = [array("Q") for _ in range(256)]
    for batch in batches:
        want = cdedupe.add_many(expected, shift, batch, [], ahead=0)
        assert cdedupe.add_many(got, shift, batch, [], ahead=ahead) == want
    assert got == expected
    assert [fp for bucket in got for fp in bucket] == sorted({fp for b in batches for fp in b})


@pytest.mark.parametrize("shift", [64, 60, 54])
def test_inserts_into_clustered_buckets_keep_them_sorted(shift: int) -> None:
    """Far from uniform values (the interpolated guess is wrong) still land in order."""
    buckets = [array("Q") for _ in range(1 if shift >= 64 else 1 << (64 - shift))]
    rng = random.Random(shift)
    clustered = [(1 << 40) + rng.randrange(1000) for _ in range(3000)]
    edges = [0, 1, 2**64 - 1, 2**63, 2**63 - 1, *(rng.getrandbits(64) for _ in range(500))]
    values = clustered + edges + clustered[:100]
    added, repeated = cdedupe.add_many(buckets, shift, array("Q", values), [])
    assert added == len(set(values))
    assert repeated == len(values) - len(set(values))
    merged = [fp for bucket in buckets for fp in bucket]
    assert merged == sorted(set(values))
    for i, bucket in enumerate(buckets):  # each value in its own bucket
        assert all((fp >> shift if shift < 64 else 0) == i for fp in bucket)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-20, 20), st.sampled_from([NO_LASTMOD, 0, 5, 9])),
        max_size=40,
    ),
    st.lists(st.integers(-20, 20), max_size=10),
    st.lists(
        st.tuples(st.integers(-25, 25), st.sampled_from([NO_LASTMOD, 0, 5, 7, 9, 12])),
        max_size=40,
    ),
)
def test_classify_many_gives_each_url_the_event_classify_gives(
    ledger: list[tuple[int, int]], recorded: list[int], batch: list[tuple[int, int]]
) -> None:
    listed_fps, listed_lastmods = cdedupe.sort_unique(
        array("q", [fp for fp, _ in ledger]), array("q", [lm for _, lm in ledger])
    )
    this_run = array("q", sorted(set(recorded)))
    fps = array("q", [fp for fp, _ in batch])
    lastmods = array("q", [lm for _, lm in batch])
    got = cdedupe.classify_many(
        listed_fps, listed_lastmods, this_run, fps, lastmods, ("new", "changed", "unchanged")
    )
    known = dict(zip(listed_fps, listed_lastmods, strict=True))
    expected = []
    for fp, lm in batch:
        old = known.get(fp)
        prev = None if old is None else (None if old == NO_LASTMOD else old, 1, None)
        if fp in this_run:
            prev = (None, 2, None)  # last seen by this run (2)
        expected.append(classify(prev, None if lm == NO_LASTMOD else lm, 2))
    assert got == expected


def test_classify_many_refuses_columns_of_two_lengths() -> None:
    with pytest.raises(ValueError, match="length"):
        cdedupe.classify_many(
            array("q"), array("q"), array("q"), array("q", [1]), array("q"), ("a", "b", "c")
        )
