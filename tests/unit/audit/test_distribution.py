"""audit.distribution: lastmod distribution verdicts, bounded memory, merge, trust score."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvester.audit.distribution import LastmodDistribution
from harvester.audit.verdict import Verdict
from harvester.dates import format_utc
from tests.unit.audit.samples import FETCHED, feed, honest_dates

# --- verdicts ----------------------------------------------------------------------------


def test_news_sitemap_stamped_with_generation_time_is_generation_time() -> None:
    # The news sitemap: every dated entry carries one of two timestamps a
    # second apart, and the later one is the file's Last-Modified.
    header = datetime(2026, 11, 30, 9, 15, 42, tzinfo=UTC)
    stamps = [format_utc(header - timedelta(seconds=1)), format_utc(header)]
    raws: list[str | None] = [stamps[i % 3 == 0] for i in range(900)] + [None] * 100
    v = feed(LastmodDistribution(), raws, header=header).verdict()
    assert v.verdict is Verdict.GENERATION_TIME
    assert v.figures.generation_share == 1.0
    assert v.figures.distinct_timestamps == 2
    assert v.figures.modal_cluster_share == 1.0
    assert v.figures.undated_share == pytest.approx(0.1)
    assert "Last-Modified" in v.reason


def test_generation_time_from_fetch_time_without_last_modified() -> None:
    # A dynamic sitemap: no Last-Modified header, every lastmod is "now".
    raws: list[str | None] = [format_utc(FETCHED - timedelta(seconds=i % 2)) for i in range(200)]
    v = feed(LastmodDistribution(), raws).verdict()
    assert v.verdict is Verdict.GENERATION_TIME


def test_a_few_entries_modified_at_generation_time_stay_plausible() -> None:
    header = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    raws = [*honest_dates(990), *[format_utc(header)] * 10]
    v = feed(LastmodDistribution(), raws, header=header).verdict()
    assert v.verdict is Verdict.PLAUSIBLE
    assert v.figures.generation_share == pytest.approx(0.01)


def test_generation_tolerance_is_configurable() -> None:
    header = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    # Stamped 5 s before the header: outside the default ±2 s, inside ±10 s.
    raws = [format_utc(header - timedelta(seconds=5 + i % 2)) for i in range(100)]
    default = feed(LastmodDistribution(), list(raws), header=header).verdict()
    assert default.figures.generation_share == 0.0
    assert default.verdict is Verdict.CONSTANT  # still caught: one cluster around the modal
    wide = LastmodDistribution(tolerance=timedelta(seconds=10))
    assert feed(wide, list(raws), header=header).verdict().verdict is Verdict.GENERATION_TIME


def test_archive_of_10000_urls_without_lastmod_is_absent() -> None:
    v = feed(LastmodDistribution(), [None] * 10_000).verdict()
    assert v.verdict is Verdict.ABSENT
    assert v.figures.total == 10_000
    assert v.figures.dated == 0
    assert v.figures.undated_share == 1.0
    assert v.figures.modal_timestamp is None
    assert "100% of 10000" in v.reason


def test_mostly_undated_is_absent_half_undated_is_judged_on_the_rest() -> None:
    assert feed(LastmodDistribution(), [*[None] * 95, *honest_dates(5)]).verdict().verdict is (
        Verdict.ABSENT
    )
    half = feed(LastmodDistribution(), [*[None] * 500, *honest_dates(500)]).verdict()
    assert half.verdict is Verdict.PLAUSIBLE
    assert half.figures.undated_share == 0.5


def test_empty_host_is_absent() -> None:
    v = LastmodDistribution().verdict()
    assert v.verdict is Verdict.ABSENT
    assert v.figures.total == 0


def test_all_the_same_old_date_is_constant() -> None:
    v = feed(LastmodDistribution(), ["2019-06-01"] * 500).verdict()
    assert v.verdict is Verdict.CONSTANT
    assert v.figures.modal_timestamp == "2019-06-01T00:00:00Z"
    assert v.figures.modal_share == 1.0
    assert v.figures.date_only_share == 1.0
    assert v.figures.distinct_timestamps == 1
    assert "2019-06-01T00:00:00Z" in v.reason


def test_ninety_percent_one_value_is_constant_eighty_is_not() -> None:
    assert feed(
        LastmodDistribution(), ["2019-06-01"] * 90 + honest_dates(10)
    ).verdict().verdict is (Verdict.CONSTANT)
    assert feed(
        LastmodDistribution(), ["2019-06-01"] * 80 + honest_dates(20)
    ).verdict().verdict is (Verdict.PLAUSIBLE)


def test_too_few_dated_entries_are_not_called_constant() -> None:
    assert feed(LastmodDistribution(), ["2019-06-01"] * 5).verdict().verdict is Verdict.PLAUSIBLE


def test_placeholder_dates_before_1995_are_constant() -> None:
    raws: list[str | None] = ["1970-01-01T00:00:00Z", "0001-01-01", "1900-01-01"] * 40
    v = feed(LastmodDistribution(), [*raws, *honest_dates(20)]).verdict()
    assert v.verdict is Verdict.CONSTANT
    assert v.figures.before_1995_share == pytest.approx(120 / 140, abs=1e-6)
    assert "before 1995" in v.reason


def test_date_only_today_for_every_entry_is_generation_time() -> None:
    # "lastmod = today" with day precision cannot match a 2 s tolerance; it is
    # still the generation time when that day is the fetch day.
    v = feed(LastmodDistribution(), ["2026-11-30"] * 300).verdict()
    assert v.verdict is Verdict.GENERATION_TIME
    assert "day the sitemap was generated" in v.reason


def test_future_dates_are_future() -> None:
    ahead = [format_utc(FETCHED + timedelta(days=30 + i)) for i in range(30)]
    v = feed(LastmodDistribution(), [*honest_dates(70), *ahead]).verdict()
    assert v.verdict is Verdict.FUTURE
    assert v.figures.future_share == pytest.approx(0.3)


def test_dates_within_the_clock_skew_are_not_future() -> None:
    near = [format_utc(FETCHED + timedelta(minutes=1, seconds=i)) for i in range(30)]
    v = feed(LastmodDistribution(), [*honest_dates(70), *near]).verdict()
    assert v.figures.future_share == 0.0
    assert v.verdict is Verdict.PLAUSIBLE


def test_date_only_today_east_of_greenwich_is_not_future() -> None:
    # Fetched at 20:00 UTC on the 29th, when it is already the 30th in Sydney.
    evening = datetime(2026, 11, 29, 20, tzinfo=UTC)
    dist = feed(LastmodDistribution(), ["2026-11-30"] * 100, fetched_at=evening)
    v = dist.verdict()
    assert v.figures.future_share == 0.0
    assert v.verdict is Verdict.GENERATION_TIME
    later = feed(LastmodDistribution(), ["2026-12-02"] * 100, fetched_at=evening).verdict()
    assert later.verdict is Verdict.FUTURE


def test_one_scheduled_post_in_the_future_is_still_plausible() -> None:
    v = feed(LastmodDistribution(), [*honest_dates(99), "2027-01-01"]).verdict()
    assert v.verdict is Verdict.PLAUSIBLE
    assert v.figures.future_share == pytest.approx(0.01)


def test_honest_varied_dates_are_plausible() -> None:
    v = feed(LastmodDistribution(), honest_dates(2000)).verdict()
    assert v.verdict is Verdict.PLAUSIBLE
    f = v.figures
    assert f.distinct_timestamps == 2000
    assert f.distinct_exact
    # 2000 distinct values overflow the 256 modal counters: the share is then
    # a lower bound, at most dated / 257 below the truth (here 1 / 2000).
    assert not f.modal_exact
    assert f.modal_share <= 1 / 2000
    assert f.generation_share == f.future_share == f.before_1995_share == 0.0
    assert f.date_only_share == 0.0


# --- histogram -----------------------------------------------------------------------------


def test_histogram_months_are_contiguous_with_edge_buckets() -> None:
    raws: list[str | None] = ["2024-01-15", "2024-01-20", "2024-04-01", "1970-01-01", "2030-01-01"]
    hist = feed(LastmodDistribution(), [*raws, None]).histogram()
    assert hist == [
        ("<1995", 1),
        ("2024-01", 2),
        ("2024-02", 0),
        ("2024-03", 0),
        ("2024-04", 1),
        ("future", 1),
    ]


def test_histogram_falls_back_to_years_for_long_ranges() -> None:
    hist = feed(LastmodDistribution(), ["1996-05-01", "2024-01-01", "2024-02-01"]).histogram(
        max_buckets=24
    )
    assert hist[0] == ("1996", 1)
    assert hist[-1] == ("2024", 2)
    assert len(hist) == 2024 - 1996 + 1


def test_histogram_buckets_are_bounded_whatever_the_dates() -> None:
    raws: list[str | None] = [f"{y:04d}-06-01" for y in range(1, 10000, 7)]
    dist = feed(LastmodDistribution(), raws)
    # Everything before 1995 or after the fetch shares one bucket each.
    assert len(dist._months) <= (2026 - 1995 + 1) * 12 + 2
    assert len(dist.histogram()) <= 120 + 2


# --- bounded memory and merge ----------------------------------------------------------------


def test_many_distinct_timestamps_keep_the_structures_capped() -> None:
    # 300,000 distinct values: 70x the sketch's cap, so the bound is what is tested.
    dist = LastmodDistribution()
    lastmod, step = datetime(2025, 3, 1, tzinfo=UTC), timedelta(seconds=1)
    add = dist.add
    for _ in range(300_000):
        add(lastmod, None, sitemap_last_modified=None, fetched_at=FETCHED)
        lastmod += step
    assert len(dist._kmv) == len(dist._kmv_heap) == dist.distinct_cap
    assert len(dist._modal) <= dist.modal_cap
    assert len(dist._months) <= 2
    f = dist.figures()
    assert not f.distinct_exact
    assert f.distinct_timestamps == pytest.approx(300_000, rel=0.05)
    assert not f.modal_exact
    assert f.modal_share <= 1 / (dist.modal_cap + 1)
    assert dist.verdict().verdict is Verdict.PLAUSIBLE


def test_heavy_hitter_is_found_beyond_the_modal_cap() -> None:
    dist = LastmodDistribution(modal_cap=16)
    heavy = datetime(2020, 2, 2, tzinfo=UTC)
    start = datetime(2021, 1, 1, tzinfo=UTC)
    for i in range(10_000):
        lastmod = heavy if i % 10 < 3 else start + timedelta(minutes=i)
        dist.add(lastmod, None, sitemap_last_modified=None, fetched_at=FETCHED)
    f = dist.figures()
    assert f.modal_timestamp == "2020-02-02T00:00:00Z"
    # Misra-Gries: a lower bound, off by at most dated / (cap + 1).
    assert 0.3 - 1 / 17 <= f.modal_share <= 0.3
    assert not f.modal_exact


# One entry: (seconds after a base, or None for undated; date-only?; Last-Modified offset).
entry = st.tuples(
    st.one_of(st.none(), st.integers(min_value=-(10**9), max_value=10**9)),
    st.booleans(),
    st.one_of(st.none(), st.integers(min_value=-5, max_value=5)),
)
BASE = datetime(2024, 6, 1, tzinfo=UTC)


def add_entries(
    dist: LastmodDistribution, entries: list[tuple[int | None, bool, int | None]]
) -> None:
    for seconds, day_only, header_offset in entries:
        header = None if header_offset is None else BASE + timedelta(seconds=header_offset)
        if seconds is None:
            dist.add(None, None, sitemap_last_modified=header, fetched_at=FETCHED)
            continue
        lastmod = BASE + timedelta(seconds=seconds)
        if day_only:
            lastmod = lastmod.replace(hour=0, minute=0, second=0)
        raw = lastmod.date().isoformat() if day_only else format_utc(lastmod)
        dist.add(lastmod, raw, sitemap_last_modified=header, fetched_at=FETCHED)


@given(st.lists(entry, max_size=60), st.integers(min_value=0, max_value=60))
def test_merge_of_partials_equals_one_accumulation(
    entries: list[tuple[int | None, bool, int | None]], cut: int
) -> None:
    whole, first, second = LastmodDistribution(), LastmodDistribution(), LastmodDistribution()
    add_entries(whole, entries)
    add_entries(first, entries[:cut])
    add_entries(second, entries[cut:])
    first.merge(second)
    assert first.figures() == whole.figures()
    assert first.histogram() == whole.histogram()
    assert first.verdict() == whole.verdict()


@given(st.lists(entry, max_size=80), st.integers(min_value=0, max_value=80))
def test_merge_beyond_the_caps_keeps_the_distinct_sketch_exact_and_bounded(
    entries: list[tuple[int | None, bool, int | None]], cut: int
) -> None:
    # The KMV sketch of a union is the union of the sketches: merging loses
    # nothing even past the cap. Misra-Gries counts only keep their bounds.
    caps = {"distinct_cap": 8, "modal_cap": 4}
    whole, first, second = (LastmodDistribution(**caps) for _ in range(3))  # type: ignore[arg-type]
    add_entries(whole, entries)
    add_entries(first, entries[:cut])
    add_entries(second, entries[cut:])
    first.merge(second)
    assert first.distinct() == whole.distinct()
    assert len(first._kmv) <= 8
    assert len(first._modal) <= 4
    assert (first.total, first.dated, first.generation, first.date_only) == (
        whole.total,
        whole.dated,
        whole.generation,
        whole.date_only,
    )
    assert first.figures().modal_share <= whole.figures().modal_share + 1 / 5 + 1e-9


def test_merge_refuses_accumulators_with_other_settings() -> None:
    with pytest.raises(ValueError, match="cannot merge"):
        LastmodDistribution().merge(LastmodDistribution(tolerance=timedelta(seconds=10)))
