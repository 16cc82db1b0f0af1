"""audit.verdict: a distribution verdict and its figures as JSON, with stable names."""

from __future__ import annotations

import orjson

from harvester.audit.distribution import LastmodDistribution
from tests.unit.audit.samples import feed, honest_dates


def test_verdict_as_dict_is_json_ready_with_stable_names() -> None:
    d = feed(LastmodDistribution(), honest_dates(50)).verdict().as_dict()
    assert d["verdict"] == "plausible"
    back = orjson.loads(orjson.dumps(d))
    assert set(back["figures"]) == {
        "total",
        "dated",
        "undated_share",
        "modal_timestamp",
        "modal_share",
        "modal_cluster_share",
        "modal_exact",
        "distinct_timestamps",
        "distinct_exact",
        "generation_share",
        "future_share",
        "before_1995_share",
        "date_only_share",
        "tolerance_seconds",
    }
