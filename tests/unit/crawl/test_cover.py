"""crawl/cover.py: shares with their Wilson interval, completeness, the listed sample kept
from record batches in any of their shapes, and the run's spread of completeness."""

from __future__ import annotations

import json
import random
import statistics
from array import array

from harvester.crawl.batch import RecordBatch
from harvester.crawl.cover import OUTCOMES, completeness, share
from harvester.crawl.listed import ListedSample
from harvester.crawl.spread import Spread
from harvester.state.rows import signed
from harvester.urls.fingerprint import fingerprint
from harvester.urls.records import encode_records


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
    fig = completeness(listed.__contains__, ["a", "b", "c", "d", "n"], {"n", "d"})
    assert (fig["count"], fig["of"]) == (2, 3)


def _rank(url: str) -> int:
    """A URL's place in the sample's order: its fingerprint as the state file stores it
    (signed), as the lastmod audit picks its pages."""
    return signed(fingerprint(url))


def _urls(n: int) -> list[str]:
    return [f"https://example.com/p/{i}" for i in range(n)]


def _batch(urls: list[str], *, encoded: bool = False, lines: int | None = None) -> RecordBatch:
    records = [{"url": u, "host": "example.com"} for u in urls]
    fps = array("Q", (fingerprint(u) for u in urls))
    if encoded:
        return RecordBatch("example.com", [], fps, data=encode_records(records), lines=lines)
    return RecordBatch("example.com", records, fps)


def test_the_sample_is_the_lowest_fingerprints_whatever_the_order_and_shape() -> None:
    urls = _urls(500)
    truth = sorted(urls, key=_rank)[:20]
    shuffled = urls[:]
    random.Random(7).shuffle(shuffled)
    for encoded in (False, True):
        sample = ListedSample(20)
        for start in range(0, 500, 64):  # batches of 64, as a host's records go out
            sample.take(_batch(shuffled[start : start + 64], encoded=encoded))
        assert sample.urls() == truth
    small = ListedSample(20)
    small.take(_batch(urls[:5]))
    assert small.urls() == sorted(urls[:5], key=_rank)


def test_a_filtered_batch_is_sampled_from_its_records() -> None:
    # With a filter (--emit, --since) a batch holds fewer records than fingerprints: the
    # indices no longer line up, so its URLs are fingerprinted again.
    urls = _urls(100)
    kept = urls[::2]
    for encoded in (False, True):
        batch = _batch(urls, encoded=encoded)
        records = [{"url": u} for u in kept]
        data = encode_records(records) if encoded else None
        filtered = RecordBatch(
            "example.com",
            [] if encoded else records,
            batch.fingerprints,
            data=data,
            lines=len(kept) if encoded else None,
        )
        sample = ListedSample(10)
        sample.take(filtered)
        assert sample.urls() == sorted(kept, key=_rank)[:10]


async def test_wrap_samples_then_emits_the_same_batch() -> None:
    got: list[RecordBatch] = []

    async def emit(batch: RecordBatch) -> None:
        got.append(batch)

    sample = ListedSample(3)
    batch = _batch(_urls(10))
    await sample.wrap(emit)(batch)
    assert got == [batch]
    assert sample.urls() == sorted(_urls(10), key=_rank)[:3]


def _host(done: float | None, dead: int, sampled: int) -> dict[str, object]:
    figures = {name: share(dead if name == "dead" else 0, sampled) for name in OUTCOMES}
    return {"completeness": {"share": done}, "sampled": sampled, "listed_not_live": figures}


def test_spread_gives_quartiles_and_pools_the_sample() -> None:
    spread = Spread()
    for host in (_host(0.5, 1, 10), _host(0.9, 3, 10), _host(0.1, 0, 10), _host(0.3, 0, 10)):
        spread.add(host)
    spread.add(_host(None, 0, 0))  # checked, nothing found by links
    spread.add({"skipped": "no sitemap read"})
    spread.add(None)  # not checked at all: not counted
    out = spread.summary()
    assert spread.hosts == 6
    assert (out["hosts_checked"], out["hosts_skipped"]) == (5, 1)
    assert out["completeness"] == {
        "min": 0.1,
        "q1": 0.25,
        "median": 0.4,
        "q3": 0.6,
        "max": 0.9,
        "mean": 0.45,
    }
    dead = out["listed_not_live"]["dead"]
    assert (dead["count"], dead["of"]) == (4, 40)


def test_spread_of_one_host_and_of_none() -> None:
    one = Spread()
    one.add(_host(0.7, 0, 5))
    assert one.summary()["completeness"]["q1"] == one.summary()["completeness"]["q3"] == 0.7
    none = Spread()
    assert none.summary()["completeness"] == {}
    assert none.hosts == 0


def test_spreads_merged_shard_by_shard_give_the_one_spread_s_summary() -> None:
    rng = random.Random(49)
    values = [round(rng.random(), 4) for _ in range(101)] + [0.5] * 7  # some repeated
    hosts = [_host(v, rng.randrange(3), 5) for v in values] + [{"skipped": "no sitemap read"}]
    one = Spread()
    for host in hosts:
        one.add(host)
    merged = Spread()
    for part in (hosts[:40], hosts[40:41], [], hosts[41:]):
        shard = Spread()
        for host in part:
            shard.add(host)
        merged.merge(json.loads(json.dumps(shard.state())))  # as a shard's report carries it
    merged.merge(None)
    assert merged.summary() == one.summary()
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    done = one.summary()["completeness"]
    assert (done["q1"], done["median"], done["q3"]) == (
        round(q1, 4),
        round(median, 4),
        round(q3, 4),
    )
    assert done["mean"] == round(statistics.fmean(values), 4)
