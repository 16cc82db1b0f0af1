"""coverage/figures.py: shares with their Wilson interval, completeness, the run summary."""

from __future__ import annotations

from harvester.coverage.figures import OUTCOMES, completeness, share, summary


def test_share_and_its_interval() -> None:
    assert share(0, 0) == {"count": 0, "of": 0, "share": None, "low": None, "high": None}
    fig = share(2, 20)
    assert fig["share"] == 0.1
    assert (fig["low"], fig["high"]) == (0.0279, 0.301)  # Wilson, 95 %
    narrow = share(40, 400)
    assert fig["low"] < narrow["low"] < 0.1 < narrow["high"] < fig["high"]
    assert share(5, 5)["high"] == 1.0
    assert share(0, 5)["low"] == 0.0


def test_completeness_leaves_out_noindex_and_non_html() -> None:
    listed = {"a", "b"}
    fig = completeness(listed, ["a", "b", "c", "d", "n"], {"n", "d"})
    assert (fig["count"], fig["of"]) == (2, 3)


def test_summary_spreads_completeness_and_pools_the_sample() -> None:
    def host(done: float | None, dead: int, sampled: int) -> dict[str, object]:
        figures = {name: share(dead if name == "dead" else 0, sampled) for name in OUTCOMES}
        return {"completeness": {"share": done}, "sampled": sampled, "listed_not_live": figures}

    out = summary([host(0.5, 1, 10), host(0.9, 3, 10), host(None, 0, 0), {"error": "x"}])
    assert out["hosts"] == 4
    assert out["completeness"] == {"hosts": 2, "min": 0.5, "median": 0.7, "max": 0.9, "mean": 0.7}
    assert (out["listed_not_live"]["dead"]["count"], out["listed_not_live"]["dead"]["of"]) == (
        4,
        20,
    )
