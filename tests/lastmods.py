"""Lastmods for the tests of the audit's count, compiled and not (``test_cdistribution``,
and the URL batch's ``test_chost``, whose sample feeds it): a strategy of a lastmod and
its text in every branch of the count, and every figure of a distribution to compare."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from harvester.audit.distribution import DEFAULT_FUTURE_SKEW

if TYPE_CHECKING:
    from harvester.audit.distribution import LastmodDistribution

T0 = datetime(2024, 5, 1, tzinfo=UTC)
NOW = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)  # the workers' fetch time


@st.composite
def lastmods(draw: st.DrawFn) -> tuple[datetime | None, str | None]:
    """A lastmod and its text, in every branch of the audit's count."""
    kind = draw(st.integers(0, 7))
    if kind == 0:
        return None, None
    if kind == 1:  # date-only texts (with the blanks the audit's regex allows), or almost
        text = draw(st.sampled_from(["2024-05-01", " 2024-05 ", "2024", "2024-5-01", "20240501"]))
        return datetime(2024, 5, 1, tzinfo=UTC), text
    if kind == 2:  # the future, or within a day of it, to the half second around its limits
        edge = NOW + DEFAULT_FUTURE_SKEW + draw(st.sampled_from([timedelta(0), timedelta(days=1)]))
        when = edge + timedelta(milliseconds=500 * draw(st.integers(-3, 3)))
        if draw(st.booleans()):
            when = NOW + timedelta(hours=draw(st.integers(-30, 30)))
        return when, when.date().isoformat() if draw(st.booleans()) else when.isoformat()
    if kind == 3:  # before 1995, and before 1970 (negative epochs)
        when = datetime(draw(st.integers(1, 1994)), 3, 1, 12, 0, 0, 999_999, tzinfo=UTC)
        return when, when.isoformat()
    if kind == 4:  # not in UTC: the distribution's own add
        when = T0.astimezone(timezone(timedelta(hours=draw(st.integers(-5, 5)))))
        return when, when.isoformat()
    if kind == 5:  # the fetch time: "generation time"
        return NOW + timedelta(microseconds=draw(st.integers(-2_000_000, 2_000_000))), None
    when = T0 + timedelta(hours=draw(st.integers(-9, 9)), microseconds=draw(st.integers(0, 9)))
    return when, when.isoformat()


def distribution(dist: LastmodDistribution) -> dict[str, Any]:
    """Every figure and sketch of the lastmod audit, and its verdict."""
    fields = ("total", "dated", "generation", "future", "before_1995", "date_only")
    out: dict[str, Any] = {name: getattr(dist, name) for name in fields}
    out.update(
        months=dist._months,
        modal=dist._modal,
        evicted=dist._modal_evicted,
        kmv=sorted(dist._kmv),
        heap=sorted(dist._kmv_heap),
        ref_days=dist._ref_days,
        ref=dist._ref[2:],
        verdict=dist.verdict().as_dict(),
    )
    return out
