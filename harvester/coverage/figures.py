"""The coverage figures of one host, and the run's summary: pure, no I/O.

In: the URLs a host's sitemaps list (canonical), what the links walk found
(``crawl.links.Walk``) and the outcome of each sampled listed URL. Out: JSON-ready
dicts. Every share comes with its count and a 95 % Wilson interval: the links walk
and the listed sample are samples, so a share is an estimate, and completeness is a
lower bound on what the site links (pages past the walk's budget are not seen).
"""

from __future__ import annotations

import math
import statistics
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["OUTCOMES", "completeness", "share", "summary"]

# What a sampled listed URL turned out to be (one each; "live" is a page that is fine).
OUTCOMES = ("dead", "redirect", "redirect_to_listed", "noindex", "canonical_elsewhere")
_Z = 1.96  # 95 %


def share(hits: int, total: int) -> dict[str, Any]:
    """``hits`` of ``total`` as a share with its 95 % Wilson interval (None when total is 0)."""
    if total <= 0:
        return {"count": hits, "of": total, "share": None, "low": None, "high": None}
    p = hits / total
    centre = (p + _Z * _Z / (2 * total)) / (1 + _Z * _Z / total)
    half = (_Z / (1 + _Z * _Z / total)) * math.sqrt(
        p * (1 - p) / total + _Z * _Z / (4 * total * total)
    )
    return {
        "count": hits,
        "of": total,
        "share": round(p, 4),
        "low": round(max(0.0, centre - half), 4),
        "high": round(min(1.0, centre + half), 4),
    }


def completeness(listed: set[str], found: Iterable[str], excluded: set[str]) -> dict[str, Any]:
    """Of the pages the links found (less ``excluded``: noindex, not HTML), the share
    ``listed`` holds."""
    pages = [url for url in found if url not in excluded]
    return share(sum(1 for url in pages if url in listed), len(pages))


def summary(hosts: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's figures: how completeness is spread over the hosts, the pooled shares."""
    values = sorted(
        h["completeness"]["share"]
        for h in hosts
        if h.get("completeness", {}).get("share") is not None
    )
    spread: dict[str, Any] = {"hosts": len(values)}
    if values:
        spread.update(
            min=values[0],
            median=round(statistics.median(values), 4),
            max=values[-1],
            mean=round(statistics.fmean(values), 4),
        )
    sampled = sum(h.get("sampled", 0) for h in hosts)
    pooled = {
        name: share(
            sum(h.get("listed_not_live", {}).get(name, {}).get("count", 0) for h in hosts), sampled
        )
        for name in OUTCOMES
    }
    return {"hosts": len(hosts), "completeness": spread, "listed_not_live": pooled}
