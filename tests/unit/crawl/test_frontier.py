from __future__ import annotations

from datetime import UTC, datetime

from harvester.config import LimitsConfig
from harvester.crawl.frontier import Admission, Frontier, Newest, SitemapRef


def ref(url: str, day: int | None = None, depth: int = 0) -> SitemapRef:
    lastmod = datetime(2024, 1, day, tzinfo=UTC) if day else None
    return SitemapRef(url, depth=depth, lastmod=lastmod)


def test_newest_first_then_undated_in_discovery_order() -> None:
    f = Frontier(LimitsConfig())
    for r in [
        ref("http://e/u1"),
        ref("http://e/old", 1),
        ref("http://e/new", 9),
        ref("http://e/u2"),
    ]:
        assert f.push(r) is Admission.QUEUED
    order = []
    while (nxt := f.pop()) is not None:
        order.append(nxt.url)
    assert order == ["http://e/new", "http://e/old", "http://e/u1", "http://e/u2"]


def test_seen_set_uses_canonical_form() -> None:
    f = Frontier(LimitsConfig())
    assert f.push(ref("http://E/a.xml")) is Admission.QUEUED
    assert f.push(ref("http://e:80/a.xml#x")) is Admission.SEEN
    f.mark_seen("http://e/b.xml")
    assert f.push(ref("http://e/b.xml")) is Admission.SEEN


def test_caps() -> None:
    f = Frontier(LimitsConfig(max_depth=2, max_sitemaps_per_host=2))
    assert f.push(ref("http://e/deep", depth=3)) is Admission.TOO_DEEP
    assert f.push(ref("http://e/1")) is Admission.QUEUED
    assert f.push(ref("http://e/2", depth=2)) is Admission.QUEUED
    assert f.push(ref("http://e/3")) is Admission.TOO_MANY
    assert len(f) == 2


def child(url: str, day: int | None = None) -> SitemapRef:
    return SitemapRef(url, depth=1, lastmod=datetime(2024, 1, day, tzinfo=UTC) if day else None)


def drain(f: Frontier) -> list[str]:
    out = []
    while (nxt := f.pop()) is not None:
        out.append(nxt.url)
    return out


def test_an_index_hands_over_its_newest_children_within_the_room_left() -> None:
    f = Frontier(LimitsConfig(max_sitemaps_per_host=3))
    assert f.push(ref("http://e/index")) is Admission.QUEUED
    assert f.pop() is not None
    f.new_file()  # the index is read: room for two children
    offered = [f.offer(child(f"http://e/{d}", d)) for d in (21, 24, 19, 25, 23)]
    queued, too_many = Admission.QUEUED, Admission.TOO_MANY
    assert offered == [queued, queued, too_many, queued, too_many]
    assert [(d.ref.url, d.cap, d.queued) for d in f.displaced] == [
        ("http://e/21", too_many, False)  # 25 took its place
    ]
    for c, key in f.children():
        assert f.push(c, key) is Admission.QUEUED
    assert drain(f) == ["http://e/25", "http://e/24"]


def test_the_choice_of_children_is_bounded_by_the_per_index_cap() -> None:
    f = Frontier(LimitsConfig(max_children_per_index=2))
    f.new_file()
    # Oldest first: every child is newer than the ones kept, and displaces one.
    for day in range(1, 29):
        assert f.offer(child(f"http://e/{day}", day)) is Admission.QUEUED
    assert len(f._children) == 2
    assert {d.cap for d in f.displaced} == {Admission.TOO_MANY_CHILDREN}
    assert len(f.displaced) == 26
    assert [c.url for c, _ in f.children()] == ["http://e/28", "http://e/27"]


def test_a_newer_child_takes_the_place_of_the_oldest_queued_one() -> None:
    f = Frontier(LimitsConfig(max_sitemaps_per_host=3))
    listed = SitemapRef("http://e/robots-listed", source="robots")
    assert f.push(listed) is Admission.QUEUED  # an entry point: never taken out
    assert f.push(child("http://e/old", 2)) is Admission.QUEUED
    assert f.push(child("http://e/undated")) is Admission.QUEUED
    assert f.push(child("http://e/new", 9)) is Admission.QUEUED
    assert [(d.ref.url, d.queued) for d in f.displaced] == [("http://e/undated", True)]
    assert f.push(child("http://e/older", 1)) is Admission.TOO_MANY
    assert f.push(SitemapRef("http://e/another", source="robots")) is Admission.TOO_MANY
    assert not f.seen("http://e/undated")  # it may be listed again, by a later index
    assert drain(f) == ["http://e/new", "http://e/old", "http://e/robots-listed"]


def test_fifty_thousand_children_under_a_small_cap_stay_in_bounded_memory() -> None:
    f = Frontier(LimitsConfig(max_sitemaps_per_host=3))
    f.new_file()
    for i in range(50_000):  # newer and newer: each one displaces the oldest chosen
        lastmod = datetime.fromtimestamp(1_700_000_000 + i, UTC)
        f.offer(SitemapRef(f"http://e/c{i}.xml", 1, lastmod=lastmod))
        f.displaced.clear()
        assert len(f._children) <= 3
    chosen = f.children()
    assert [c.url for c, _ in chosen] == [f"http://e/c{i}.xml" for i in (49_999, 49_998, 49_997)]
    # The same stream pushed one by one (children carried over): the queue stays small too.
    for i in range(50_000):
        lastmod = datetime.fromtimestamp(1_700_000_000 + i, UTC)
        f.push(SitemapRef(f"http://e/p{i}.xml", 1, lastmod=lastmod))
        f.displaced.clear()
        assert len(f._heap) <= 2 * 3 + 64 + 1
        assert len(f._evictable) <= 2 * 3 + 64 + 1
    assert drain(f) == [f"http://e/p{i}.xml" for i in (49_999, 49_998, 49_997)]


def test_newest_keeps_the_newest_and_undated_last() -> None:
    n = Newest[str](3)
    left = [n.offer(u, s) for u, s in [("u1", None), ("a", 5.0), ("u2", None), ("b", 9.0)]]
    assert left == [None, None, None, "u2"]
    assert n.best_first() == ["b", "a", "u1"]
    assert len(n) == 0
