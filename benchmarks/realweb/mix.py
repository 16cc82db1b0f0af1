"""The realweb's kinds and their mix: which share of the domains does what, how slow, how big.

In: a mix name (``fixed`` or ``random``) and a seed. Out: ``Mix`` (frozen): the kinds'
shares, the latency, TTFB and DNS distributions, the site sizes and the politeness chains;
``mix_for(name, seed)``; ``EXPECT`` (the class a correct tool reports per kind) and
``KINDS`` (the order in which a web's first domains take one kind each).

``fixed`` (the default) is the web of issue 29 with the kinds of issue 51 added at a small
share carved out of the end of `small`'s interval, so every other draw lands where it
did: a domain keeps its kind, latency and bytes unless it was a `small` whose draw fell in
that 1.4 %, or it is one of the few domains given a kind on purpose (``web.build``).

``random`` draws every parameter from the seed (``random.Random(f"mix:{seed}")``), each
within bounds around the fixed mix, so each seed is another web:

| parameter | fixed | random |
| --- | --- | --- |
| share of a kind of issue 29 | as in ``OLD_SHARES`` | its share x [0.5, 2] (log-uniform) |
| share of a kind of issue 51 | as in ``NEW_SHARES`` | its share x [1, 4] |
| latency of each response: median, sigma (lognormal, <= 2 s) | 60 ms, 0.7 | [30, 150] ms, [.5, 1] |
| `big` and index kinds' latency median | 100 ms | the median x [1.2, 2.5] |
| TTFB of `slow` sites (log-uniform, every response) | 5-30 s | [4, 8]-[12, 35] s |
| DNS median (cold cache) | 90 ms | [50, 180] ms |
| URLs of a `small`-like site (log-uniform) | 20-600 | [10, 40]-[300, 1500] |
| share of those served as one urlset (else an index of 1-3) | 0.7 | [0.5, 0.85] |
| URLs of a `big` site | 10,000-50,000 | [5,000, 15,000]-[30,000, 80,000] |
| `delay`: robots.txt Crawl-delay (log-uniform) | 1-30 s | 1-[10, 30] s |
| `delay`: index children (log-uniform, cut to the chain cap) | 4-40 | 4-[20, 60] |
| `bigindex`: index children, at most 2 x the chain cap | 60-400 | [40, 80]-[200, 600] |
| chain cap: Crawl-delay x (files - 1) at most, and the late host's chain | 200 s | [120, 300] s |
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from dataclasses import dataclass, field
from typing import Final

# Issue 29's mix, in its draw order: its cumulative sums are the fixed web's boundaries.
OLD_SHARES: Final[dict[str, float]] = {
    "small": 51.5,
    "www": 10,
    "big": 0.5,
    "http_only": 5,
    "fallback": 8,
    "soft404": 3,
    "nosite": 3,
    "robots_5xx": 2,
    "robots_hang": 1,
    "hang": 3,
    "refused": 4,
    "dropped": 3,
    "dns_nx": 3,
    "dns_servfail": 1,
    "dns_empty": 2,
}
# Issue 51's kinds and their share of the fixed web (percent, taken from `small`).
NEW_SHARES: Final[dict[str, float]] = {
    "slow": 0.5,
    "https_dropped": 0.3,
    "wall_403": 0.2,
    "wall_challenge": 0.1,
    "wall_401": 0.05,
    "wall_451": 0.05,
    "delay": 0.1,
    "bigindex": 0.1,
    "probe_only": 1.0,  # issue 49: a sitemap only a platform probe finds (web.py)
    # Issue 49: a sitemap only at /sitemap.xml.gz, and one only a home page's
    # <link rel="sitemap"> announces (web.py). Carved below the kinds above (LATER).
    "gz_only": 0.5,
    "link_only": 0.5,
}
# Kinds given a share after the others of NEW_SHARES: their intervals are carved from the
# top of `small`'s, below every other kind's (``_fixed``, ``draw``), and their random
# shares are drawn last, so every other kind keeps its interval and every drawn parameter
# its value.
LATER: Final = ("gz_only", "link_only")
KINDS: Final = (*OLD_SHARES, *NEW_SHARES)
EXPECT: Final[dict[str, str]] = {
    "small": "ok",
    "www": "ok",
    "big": "ok",
    "http_only": "ok",
    "fallback": "ok",
    "soft404": "none",
    "nosite": "none",
    "robots_5xx": "http_status",
    "robots_hang": "timeout",
    "hang": "timeout",
    "refused": "connect",
    "dropped": "timeout",
    "dns_nx": "dns",
    "dns_servfail": "dns",
    "dns_empty": "dns",
    # Issue 51: a patient client finds every URL of these two...
    "slow": "ok",
    "https_dropped": "ok",
    # ...and a wall is a class of its own, not "no sitemap".
    "wall_403": "blocked",
    "wall_challenge": "blocked",
    "wall_401": "blocked",
    "wall_451": "blocked",
    "delay": "ok",
    "bigindex": "ok",
    "probe_only": "ok",
    "gz_only": "ok",
    "link_only": "ok",
}
WALL_STATUS: Final = {"wall_403": 403, "wall_challenge": 403, "wall_401": 401, "wall_451": 451}
MIXES: Final = ("fixed", "random")


@dataclass(frozen=True, slots=True)
class Mix:
    """A web's parameters (see the module docstring); ``FIXED`` is issue 29's web + 51's kinds."""

    name: str
    seed: int
    names: tuple[str, ...]  # kinds in draw order
    bounds: tuple[float, ...]  # cumulative upper bound of each kind's interval
    latency: tuple[float, float] = (0.06, 0.7)  # median s, sigma
    slow_latency: float = 0.1  # median of `big`, `delay` and `bigindex` sites
    ttfb: tuple[float, float] = (5.0, 30.0)  # `slow`: seconds to every first byte
    dns_median: float = 0.090
    small_urls: tuple[int, int] = (20, 600)
    urlset_share: float = 0.7  # small-like sites served as one urlset (else an index)
    big_urls: tuple[int, int] = (10_000, 50_000)
    crawl_delay: tuple[float, float] = (1.0, 30.0)
    delay_children: tuple[int, int] = (4, 40)
    bigindex_children: tuple[int, int] = (60, 400)
    chain_cap: float = 200.0
    shares: dict[str, float] = field(default_factory=dict, compare=False)  # percent, for print

    @property
    def label(self) -> str:
        """``fixed`` or ``random:SEED``."""
        return self.name if self.name == "fixed" else f"{self.name}:{self.seed}"

    def pick(self, u: float) -> str:
        """The kind whose interval holds ``u`` (``random()``, in [0, 1))."""
        at = bisect.bisect(self.bounds, u * self.bounds[-1], 0, len(self.bounds) - 1)
        return self.names[at]

    def describe(self) -> dict[str, object]:
        """The drawn parameters, for the run's log and the results."""
        return {
            "mix": self.label,
            "shares_pct": {k: round(v, 3) for k, v in self.shares.items()},
            "latency_median_s": round(self.latency[0], 4),
            "latency_sigma": round(self.latency[1], 3),
            "slow_latency_median_s": round(self.slow_latency, 4),
            "ttfb_s": [round(v, 2) for v in self.ttfb],
            "dns_median_s": round(self.dns_median, 4),
            "small_urls": list(self.small_urls),
            "urlset_share": round(self.urlset_share, 3),
            "big_urls": list(self.big_urls),
            "crawl_delay_s": [round(v, 2) for v in self.crawl_delay],
            "delay_children": list(self.delay_children),
            "bigindex_children": list(self.bigindex_children),
            "chain_cap_s": round(self.chain_cap, 1),
        }


def _fixed() -> Mix:
    # The old boundaries exactly as ``random.choices`` computed them (itertools.accumulate
    # of the old weights), and the new kinds' intervals inside the top of `small`'s: a
    # draw outside that slice picks the kind it picked before, bit for bit.
    # The kinds of ``LATER`` sit lowest, so the earlier new kinds keep their intervals.
    old = list(itertools.accumulate(OLD_SHARES.values()))
    carved = sum(NEW_SHARES.values())
    names = ["small"]
    bounds = [old[0] - carved]
    upper = old[0] - carved
    earlier = [k for k in NEW_SHARES if k not in LATER]
    for kind in (*LATER, *earlier):
        upper += NEW_SHARES[kind]
        names.append(kind)
        bounds.append(upper)
    bounds[-1] = old[0]
    names += list(OLD_SHARES)[1:]
    bounds += old[1:]
    shares = {**OLD_SHARES, **NEW_SHARES}
    shares["small"] -= carved
    return Mix("fixed", 0, tuple(names), tuple(bounds), shares=shares)


FIXED: Final = _fixed()


def _log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def draw(seed: int) -> Mix:
    """The random mix of ``seed`` (the module docstring's bounds); the same in every process."""
    rng = random.Random(f"mix:{seed}")
    shares = {k: v * _log_uniform(rng, 0.5, 2.0) for k, v in OLD_SHARES.items()}
    earlier = {k: v for k, v in NEW_SHARES.items() if k not in LATER}
    shares.update({k: v * _log_uniform(rng, 1.0, 4.0) for k, v in earlier.items()})
    median = _log_uniform(rng, 0.03, 0.15)
    small_lo, small_hi = rng.randint(10, 40), rng.randint(300, 1500)
    latency = (median, rng.uniform(0.5, 1.0))
    slow_latency = median * rng.uniform(1.2, 2.5)
    ttfb = (rng.uniform(4.0, 8.0), rng.uniform(12.0, 35.0))
    dns_median = _log_uniform(rng, 0.05, 0.18)
    urlset_share = rng.uniform(0.5, 0.85)
    big_urls = (rng.randint(5_000, 15_000), rng.randint(30_000, 80_000))
    crawl_delay = (1.0, rng.uniform(10.0, 30.0))
    delay_children = (4, rng.randint(20, 60))
    bigindex_children = (rng.randint(40, 80), rng.randint(200, 600))
    chain_cap = rng.uniform(120.0, 300.0)
    # ``LATER``'s shares come out of the top of `small`'s interval: every other kind keeps
    # its interval, so a seed's web is the one it was but for those draws.
    later = {k: NEW_SHARES[k] * _log_uniform(rng, 1.0, 4.0) for k in LATER}
    total = sum(shares.values())
    shares["small"] -= sum(later.values())
    shares = {"small": shares.pop("small"), **later, **shares}
    shares = {k: 100 * v / total for k, v in shares.items()}
    return Mix(
        "random",
        seed,
        tuple(shares),
        tuple(itertools.accumulate(shares.values())),
        latency=latency,
        slow_latency=slow_latency,
        ttfb=ttfb,
        dns_median=dns_median,
        small_urls=(small_lo, small_hi),
        urlset_share=urlset_share,
        big_urls=big_urls,
        crawl_delay=crawl_delay,
        delay_children=delay_children,
        bigindex_children=bigindex_children,
        chain_cap=chain_cap,
        shares=shares,
    )


def mix_for(name: str, seed: int) -> Mix:
    """``FIXED`` for ``fixed`` (the seed then only drives the draws of kinds and content),
    ``draw(seed)`` for ``random``; ValueError for another name."""
    if name == "fixed":
        return FIXED
    if name == "random":
        return draw(seed)
    raise ValueError(f"unknown mix {name!r} (one of {', '.join(MIXES)})")
