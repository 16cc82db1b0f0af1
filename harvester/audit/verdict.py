"""Lastmod audit, part 1: what a host's lastmod distribution says, in types (issue 7).

Pure values, no computation of figures. In: the figures
``LastmodDistribution.figures()`` (``audit/distribution.py``) counted, and the
``VerdictThresholds`` a caller chose. Out: the verdict vocabulary its
``verdict()`` answers in: ``Verdict`` (``absent``, ``generation_time``,
``future``, ``constant``, ``plausible``), ``LastmodFigures`` and
``LastmodVerdict``, each JSON-ready through ``as_dict()``; and ``judge``, the rules
that turn the figures into a verdict.

Its own module because its readers need only these types: the trust score
(``audit/trust.py``) and the audit report (``audit/report.py``) read verdicts,
not the streaming accumulator and the compiled counter it loads.

Example::

    verdict = dist.verdict(VerdictThresholds(constant_share=0.95))
    verdict.verdict is Verdict.PLAUSIBLE
    verdict.as_dict()   # {"verdict": "plausible", "reason": ..., "figures": {...}}
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection

__all__ = [
    "LastmodFigures",
    "LastmodVerdict",
    "Verdict",
    "VerdictThresholds",
    "judge",
]


class Verdict(StrEnum):
    """What the distribution of a host's lastmods says about them."""

    ABSENT = "absent"  # (almost) no entry has a lastmod
    GENERATION_TIME = "generation_time"  # lastmod = when the file was generated
    FUTURE = "future"  # many lastmods after the fetch: a broken clock or zone
    CONSTANT = "constant"  # one value (or placeholder dates) for nearly everything
    PLAUSIBLE = "plausible"  # nothing wrong that the distribution can show


@dataclass(frozen=True, slots=True, kw_only=True)
class VerdictThresholds:
    """When each verdict fires; checked in the order of ``Verdict`` (first wins).

    Shares other than ``absent_undated_share`` are of the *dated* entries.
    """

    # Absent: 90 % undated leaves too few dated entries to act on for the host.
    absent_undated_share: float = 0.9
    # Generation time: honest hosts have a few entries modified just before the
    # file was written, never half of them.
    generation_share: float = 0.5
    # Future: a scheduled post or two is a glitch; a tenth is a broken generator.
    future_share: float = 0.1
    # Constant: 90 % within the tolerance of one timestamp (or before 1995).
    constant_share: float = 0.9
    # ...but only with enough dated entries to call it a pattern.
    constant_min_dated: int = 10
    placeholder_share: float = 0.5


@dataclass(frozen=True, slots=True, kw_only=True)
class LastmodFigures:
    """The figures behind a verdict (``undated_share`` of all, other shares of dated)."""

    total: int
    dated: int
    undated_share: float
    modal_timestamp: str | None  # UTC, as ``format_utc``
    modal_share: float  # exactly the modal value (a lower bound when not exact)
    modal_cluster_share: float  # within the tolerance of the modal value
    modal_exact: bool  # False once the bounded counter had to evict values
    distinct_timestamps: int
    distinct_exact: bool  # False: an estimate (KMV sketch, ~2 % error)
    generation_share: float
    future_share: float
    before_1995_share: float
    date_only_share: float
    tolerance_seconds: float

    def as_dict(self) -> dict[str, object]:
        """Return the figures as a JSON-ready dict."""
        # Its fields are scalars: dataclasses.asdict's deep copy is needless work per host.
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class LastmodVerdict:
    """A distribution verdict, the reason in words, and the figures."""

    verdict: Verdict
    reason: str
    figures: LastmodFigures

    def as_dict(self) -> dict[str, object]:
        """Return ``{"verdict", "reason", "figures"}`` as a JSON-ready dict."""
        return {
            "verdict": str(self.verdict),
            "reason": self.reason,
            "figures": self.figures.as_dict(),
        }


def judge(
    f: LastmodFigures, t: VerdictThresholds, generated_days: Collection[int]
) -> LastmodVerdict:
    """Classify figures; rules are checked in ``Verdict`` order, first wins.

    Order matters: generation timestamps are also one constant value, so
    ``generation_time`` (the more specific diagnosis) is tried before
    ``constant``; an impossible ``future`` beats ``constant`` too.
    ``generated_days``: the UTC days (ordinals) of the sitemaps' fetch times and
    Last-Modified headers.
    """
    if f.total == 0 or f.undated_share >= t.absent_undated_share:
        reason = f"{f.undated_share:.0%} of {f.total} entries have no lastmod"
        return LastmodVerdict(Verdict.ABSENT, reason, f)
    if f.generation_share >= t.generation_share:
        reason = (
            f"{f.generation_share:.0%} of dated entries are within {f.tolerance_seconds:g} s "
            "of the sitemap's Last-Modified or fetch time"
        )
        return LastmodVerdict(Verdict.GENERATION_TIME, reason, f)
    if f.future_share >= t.future_share:
        reason = f"{f.future_share:.0%} of dated entries are after the fetch"
        return LastmodVerdict(Verdict.FUTURE, reason, f)
    if f.dated >= t.constant_min_dated:
        if f.modal_cluster_share >= t.constant_share:
            if _dated_today(f, generated_days):
                reason = (
                    f"{f.modal_cluster_share:.0%} of dated entries carry the date-only "
                    f"value {f.modal_timestamp}, the day the sitemap was generated"
                )
                return LastmodVerdict(Verdict.GENERATION_TIME, reason, f)
            reason = f"{f.modal_cluster_share:.0%} of dated entries carry {f.modal_timestamp}"
            return LastmodVerdict(Verdict.CONSTANT, reason, f)
        if f.before_1995_share >= t.placeholder_share:
            reason = f"{f.before_1995_share:.0%} of dated entries are placeholders before 1995"
            return LastmodVerdict(Verdict.CONSTANT, reason, f)
    return LastmodVerdict(Verdict.PLAUSIBLE, "no pattern of a false lastmod", f)


def _dated_today(f: LastmodFigures, generated_days: Collection[int]) -> bool:
    # A date-only "lastmod = today" cannot match the 2 s tolerance, so it
    # shows up as constant; it is generation time when that day is the day
    # (±1 for the site's own time zone) of a fetch or Last-Modified.
    if f.modal_timestamp is None or f.date_only_share < f.modal_cluster_share:
        return False
    day = datetime.fromisoformat(f.modal_timestamp)
    if day.time() != datetime.min.time():
        return False
    return any(day.toordinal() + d in generated_days for d in (-1, 0, 1))
