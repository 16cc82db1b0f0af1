"""bench_hops' checks-only count runs against this tree's fetcher (no network)."""

from __future__ import annotations

from benchmarks.bench_hops import checks_only


async def test_the_checks_only_count_runs_the_fetchers_chain() -> None:
    spent = await checks_only(hosts=5, requests=2)
    assert spent >= 0.0
