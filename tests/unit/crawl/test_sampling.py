"""Issue 49's proof, the sampling error: over many samples of the known-truth site
(``tests/integration/coversites.known_site``: 200 listed URLs, 10 % dead, 5 % redirecting,
half of them to a listed URL, 5 % noindex, 5 % canonical elsewhere), K = 20 as the check
takes them, how often each share's 95 % interval holds the truth, and whether the shares
are right on average. The URLs of one draw differ by port only, as in the loopback tests
(a port is in every fingerprint), so each draw is another sample of the same site.
"""

from __future__ import annotations

from array import array

from harvester.crawl.batch import RecordBatch
from harvester.crawl.cover import share
from harvester.crawl.listed import ListedSample
from harvester.urls.fingerprint import fingerprint

K = 20
DRAWS = 1000
TRUTH = {
    "dead": 0.1,
    "redirect": 0.05,
    "redirect_to_listed": 0.025,
    "noindex": 0.05,
    "canonical_elsewhere": 0.05,
}
# known_site's listed paths: the home page and 139 linked pages (live), 20 dead, 10
# redirecting (/r/0-4 to a listed page), 10 noindex, 20 unlinked (/o/0-9 canonical elsewhere).
LISTED = ["/", *(f"/p/{i}" for i in range(139))]
LISTED += [
    f"/{kind}/{i}" for kind, n in (("d", 20), ("r", 10), ("n", 10), ("o", 20)) for i in range(n)
]


def outcomes(path: str) -> list[str]:
    """What the check finds the listed ``path`` of known_site to be."""
    kind, _, number = path[1:].partition("/")
    i = int(number) if number else 0
    return {
        "d": ["dead"],
        "r": ["redirect", "redirect_to_listed"] if i < 5 else ["redirect"],
        "n": ["noindex"],
        "o": ["canonical_elsewhere"] if i < 10 else [],
    }.get(kind, [])


def test_the_intervals_hold_the_truth_about_as_often_as_they_say() -> None:
    assert len(LISTED) == 200
    assert {n: sum(n in outcomes(p) for p in LISTED) / 200 for n in TRUTH} == TRUTH
    held = dict.fromkeys(TRUTH, 0)
    total = dict.fromkeys(TRUTH, 0)
    for port in range(20_000, 20_000 + DRAWS):
        origin = f"http://127.0.49.31:{port}"
        urls = [origin + path for path in LISTED]
        sample = ListedSample(K)
        sample.take(
            RecordBatch("h", [{"url": u} for u in urls], array("Q", map(fingerprint, urls)))
        )
        counts = dict.fromkeys(TRUTH, 0)
        for url in sample.urls():
            for name in outcomes(url.removeprefix(origin)):
                counts[name] += 1
        for name, count in counts.items():
            fig = share(count, K)
            held[name] += fig["low"] <= TRUTH[name] <= fig["high"]
            total[name] += count
    # Measured: 0.916-0.964 (Wilson's interval falls a little short of 95 % for shares
    # this small at K = 20: docs/coverage.md says so). A sampler that was not uniform
    # (say, the first K listed: no dead URL in any draw) fails the average.
    for name in TRUTH:
        assert held[name] / DRAWS >= 0.9, (name, held[name])
        assert abs(total[name] / (K * DRAWS) - TRUTH[name]) < 0.01, name  # unbiased
