"""The compiled count (harvester/audit/_cdistribution.pyx) is ``count_entries``: the same
distribution, figure for figure, with caps small enough for the sketch's replacements and
the modal counter's evictions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harvester.audit import distribution as auditmod
from harvester.audit.distribution import LastmodDistribution
from tests.compiled import compiled_module
from tests.lastmods import NOW, T0, distribution, lastmods

cdistribution = compiled_module("_cdistribution")


def counted(
    pairs: list[tuple[datetime | None, str | None]],
    modified: datetime | None,
    counter: Any,
    distinct_cap: int,
    modal_cap: int,
) -> dict[str, Any]:
    """The distribution of ``pairs`` (in two calls) counted by ``counter`` (None: Python)."""
    saved = auditmod._count_lastmods
    auditmod._count_lastmods = counter
    try:
        dist = LastmodDistribution(distinct_cap=distinct_cap, modal_cap=modal_cap)
        half = len(pairs) // 2
        for part in (pairs[:half], pairs[half:]):
            dist.add_many(
                [lastmod for lastmod, _ in part],
                [raw for _, raw in part],
                sitemap_last_modified=modified,
                fetched_at=NOW,
            )
        return distribution(dist)
    finally:
        auditmod._count_lastmods = saved


@settings(max_examples=300, deadline=None)
@given(
    st.lists(lastmods(), max_size=200),
    st.sampled_from([None, T0 + timedelta(hours=3), NOW]),
    st.sampled_from([2, 5, 4096]),
    st.sampled_from([1, 3, 256]),
)
def test_the_compiled_count_is_count_entries(
    pairs: list[tuple[datetime | None, str | None]],
    modified: datetime | None,
    distinct_cap: int,
    modal_cap: int,
) -> None:
    # LastmodDistribution.add_many's compiled path against its Python loop, with caps
    # small enough for the sketch's replacements and the modal counter's evictions.
    assert auditmod._count_lastmods is cdistribution.count_lastmods
    compiled = counted(pairs, modified, cdistribution.count_lastmods, distinct_cap, modal_cap)
    assert compiled == counted(pairs, modified, None, distinct_cap, modal_cap)


def test_the_compiled_count_past_the_caps_with_distinct_timestamps() -> None:
    pairs: list[tuple[datetime | None, str | None]] = [
        (T0 + timedelta(seconds=37 * i, microseconds=i % 3), None) for i in range(6000)
    ]
    pairs += [(None, None), (datetime(1990, 1, 1, tzinfo=UTC), "1990-01-01")] * 50
    compiled = counted(pairs, None, cdistribution.count_lastmods, 1024, 256)
    assert compiled["evicted"]
    assert compiled == counted(pairs, None, None, 1024, 256)


def test_the_compiled_count_over_more_months_than_it_keeps_in_c() -> None:
    # 100 months, visited back and forth in one call: the C slots (32) fill and are
    # added to the dict more than once; the month histogram must still be the sum.
    pairs: list[tuple[datetime | None, str | None]] = [
        (datetime(2001 + (i * 7 % 100) // 12, (i * 7 % 100) % 12 + 1, 1 + i % 28, tzinfo=UTC), None)
        for i in range(2000)
    ]
    pairs += [(T0 + timedelta(days=4000), None), (datetime(1990, 1, 1, tzinfo=UTC), None)] * 20
    compiled = counted(pairs, None, cdistribution.count_lastmods, 4096, 256)
    assert len(compiled["months"]) > 32
    assert compiled == counted(pairs, None, None, 4096, 256)
