"""The run's coverage summary (issue 49): the hosts' coverage figures folded into one.

In: each finished host's ``coverage`` figures (``crawl/cover.py``; ``add``), or another
``Spread``'s ``state()`` (``merge``: a distributed run's shards, each with its own).
Out: ``summary()``, the ``coverage`` block of the run report: hosts checked and skipped,
completeness across the hosts checked (quartiles, mean) and the listed-but-not-live
shares pooled over every host's sample.

The completeness shares are kept as counts per value, not one value per host: a share
has four decimals (``cover.share``), so there are at most 10,001 of them however many
hosts a run has, and shards' counts add up into exactly the single run's summary.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

from harvester.crawl.cover import OUTCOMES, share

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["Spread"]


class Spread:
    """The run's coverage summary, host by host (``add``) or shard by shard (``merge``):
    completeness across the hosts checked (quartiles) and the listed-not-live shares
    pooled over every sample."""

    __slots__ = ("checked", "counts", "sampled", "skipped", "values")

    def __init__(self) -> None:
        self.values: dict[float, int] = {}  # completeness share -> hosts checked with it
        self.checked = 0
        self.skipped = 0
        self.sampled = 0
        self.counts = dict.fromkeys(OUTCOMES, 0)

    def add(self, figures: Mapping[str, Any] | None) -> None:
        """Fold in one host's ``coverage`` figures (None: not checked)."""
        if figures is None:
            return
        if "skipped" in figures or "error" in figures:
            self.skipped += 1
            return
        self.checked += 1
        done = figures.get("completeness", {}).get("share")
        if done is not None:
            self.values[done] = self.values.get(done, 0) + 1
        self.sampled += int(figures.get("sampled", 0))
        for name, fig in figures.get("listed_not_live", {}).items():
            if name in self.counts:
                self.counts[name] += int(fig.get("count", 0))

    def state(self) -> dict[str, Any]:
        """What ``merge`` takes (JSON- and pickle-safe): the counts, not the summary."""
        return {
            "checked": self.checked,
            "skipped": self.skipped,
            "sampled": self.sampled,
            "counts": dict(self.counts),
            "values": sorted(self.values.items()),
        }

    def merge(self, state: Mapping[str, Any] | None) -> None:
        """Add another ``Spread``'s ``state()`` (None: that shard checked no host)."""
        if not state:
            return
        self.checked += int(state["checked"])
        self.skipped += int(state["skipped"])
        self.sampled += int(state["sampled"])
        for name, count in state["counts"].items():
            if name in self.counts:
                self.counts[name] += int(count)
        for value, count in state["values"]:
            self.values[float(value)] = self.values.get(float(value), 0) + int(count)

    @property
    def hosts(self) -> int:
        """Hosts folded in (checked or skipped)."""
        return self.checked + self.skipped

    def summary(self) -> dict[str, Any]:
        """``{"hosts_checked", "hosts_skipped", "completeness": {min, q1, median, q3, max,
        mean}, "listed_not_live": pooled shares}`` (completeness {} with no host checked)."""
        items = sorted(self.values.items())
        n = sum(count for _, count in items)
        spread: dict[str, float] = {}
        if n:
            q1, median, q3 = _quartiles(items, n)
            every = itertools.chain.from_iterable(itertools.repeat(v, c) for v, c in items)
            spread = {
                "min": items[0][0],
                "q1": round(q1, 4),
                "median": round(median, 4),
                "q3": round(q3, 4),
                "max": items[-1][0],
                "mean": round(math.fsum(every) / n, 4),  # (statistics.fmean's sum)
            }
        return {
            "hosts_checked": self.checked,
            "hosts_skipped": self.skipped,
            "completeness": spread,
            "listed_not_live": {name: share(c, self.sampled) for name, c in self.counts.items()},
        }


def _quartiles(items: list[tuple[float, int]], n: int) -> tuple[float, float, float]:
    """``statistics.quantiles(values, n=4, method="inclusive")`` of the ``n`` values that
    ``items`` ((value, count), ascending) counts, without listing them; one value: itself
    three times."""
    if n == 1:
        return (items[0][0],) * 3

    def nth(j: int) -> float:  # the j-th value (from 0) in ascending order
        for value, count in items:
            if j < count:
                return value
            j -= count
        raise IndexError(j)

    out = []
    for i in (1, 2, 3):
        j, delta = divmod(i * (n - 1), 4)
        out.append((nth(j) * (4 - delta) + nth(j + 1) * delta) / 4)  # statistics' formula
    return out[0], out[1], out[2]
