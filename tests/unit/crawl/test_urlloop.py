"""The URL loop's state (crawl/urlloop.py, and ``_chost.UrlLoop`` where built).

Both implementations keep their state between calls: the buffers grow in place
(the batch reads them as they are, nothing is copied per call) until
``hand_over`` gives them away and starts new ones; where the reading stands (the
listed count, the position in the current file, the cap) carries over calls.
Runs on the pure-Python path too (the Python loop alone).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from harvester import compiled
from harvester.config import DedupeConfig, NormalizeConfig
from harvester.crawl.report import HostReport
from harvester.crawl.urlloop import FOREIGN_EXAMPLES, PyUrlLoop, UrlLoop
from harvester.models import Entry, SitemapChild, UrlEntry
from harvester.urls.dedupe import SeenSet
from harvester.urls.normalize import Normalizer

if TYPE_CHECKING:
    from harvester.crawl import _chost as typed

    def _conforms(loop: typed.UrlLoop) -> UrlLoop:
        """mypy: the compiled class (its stub, _chost.pyi) has the protocol's interface."""
        return loop


HOST = "e.com"
SITEMAP = "https://e.com/sitemap.xml"
_chost = compiled.load("_chost")
KINDS = ["python"] + (["compiled"] if _chost is not None else [])


def make(kind: str, cap: int = 100, *, encoded: bool = False, filtering: bool = True) -> UrlLoop:
    rules = Normalizer(NormalizeConfig()).rules_for(HOST)
    loop: UrlLoop
    if kind == "compiled":
        assert _chost is not None
        loop = _chost.UrlLoop(
            HOST,
            rules,
            HostReport(HOST),
            cap,
            filtering=filtering,
            encoded=encoded,
            ledger_text=encoded,
            audit=True,
        )
    else:
        loop = PyUrlLoop(HOST, rules, HostReport(HOST), cap, filtering, True)
    loop.seen = SeenSet(DedupeConfig())
    return loop


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def urls(*paths: str) -> list[Entry]:
    return [UrlEntry(f"https://e.com/{p}") for p in paths]


def test_the_buffers_grow_in_place_until_handed_over(kind: str) -> None:
    loop = make(kind)
    fps, lastmods, records = loop.fps, loop.lastmods, loop.records
    assert loop.take(urls("a", "b"), SITEMAP) == []
    assert loop.take([*urls("c"), SitemapChild("https://e.com/s.xml", None)], SITEMAP) == [
        SitemapChild("https://e.com/s.xml", None)
    ]
    # The same objects, three records in them: nothing was copied in or out.
    assert loop.fps is fps
    assert loop.lastmods is lastmods
    assert loop.records is records
    assert [r["url"] for r in records] == ["https://e.com/a", "https://e.com/b", "https://e.com/c"]
    out = loop.hand_over()
    assert out[0] is records
    assert out[1] is fps
    assert out[2] is lastmods
    assert (len(out[1]), len(out[2] or ())) == (3, 3)
    # New, empty buffers of the same kinds.
    assert loop.fps is not fps
    assert (len(loop.fps), loop.fps.typecode) == (0, "Q")
    assert loop.lastmods is not None
    assert (len(loop.lastmods), loop.lastmods.typecode) == (0, "q")
    assert loop.records == []
    assert loop.listed == 3  # (the host's count goes on)


def test_without_a_filter_no_lastmod_epochs_are_kept(kind: str) -> None:
    loop = make(kind, filtering=False)
    loop.take(urls("a"), SITEMAP)
    assert loop.lastmods is None
    assert loop.hand_over()[2] is None
    assert loop.lastmods is None


def test_the_encoded_lines_and_ledger_text_are_new_buffers_after_hand_over() -> None:
    if _chost is None:
        pytest.skip("the Python loop keeps records as dicts: no lines")
    loop = make("compiled", encoded=True)
    loop.take(urls("a", "b"), SITEMAP)
    lines, text = loop.encoded, loop.urls
    assert lines is not None
    assert text is not None
    assert lines.count(b"\n") == 2
    assert bytes(text) == b"https://e.com/a\nhttps://e.com/b\n"
    out = loop.hand_over()
    assert (out[3], out[4]) == (lines, text)
    assert out[3] is lines
    assert loop.encoded == bytearray()
    assert loop.urls == bytearray()
    assert loop.encoded is not lines


def test_the_reading_position_carries_over_calls_and_rereads(kind: str) -> None:
    loop = make(kind)
    loop.new_file()
    loop.take(urls("a", "b"), SITEMAP)
    loop.take(urls("c"), SITEMAP)
    assert (loop.position, loop.replayed) == (3, 0)
    loop.new_read()  # the file is read again: its first 3 entries are replays
    assert (loop.position, loop.replayed) == (0, 3)
    loop.take(urls("a", "b", "c", "c"), SITEMAP)
    # Three replays (not duplicates), then one duplicate past them.
    assert loop.report.duplicates == 1
    assert loop.listed == 3
    loop.new_file()
    assert (loop.position, loop.replayed) == (0, 0)


def test_the_cap_holds_across_calls(kind: str) -> None:
    loop = make(kind, cap=2)
    loop.take(urls("a"), SITEMAP)
    assert (loop.listed, loop.cap_hit) == (1, False)
    loop.take(urls("b", "c"), SITEMAP)
    assert loop.cap_hit
    loop.take(urls("d"), SITEMAP)
    assert (loop.listed, loop.report.urls, loop.report.limits_hit) == (
        2,
        2,
        ["max_urls_per_host"],
    )


def test_foreign_examples_stop_at_the_constant_across_calls(kind: str) -> None:
    loop = make(kind)
    loop.at_home((HOST,))
    for i in range(FOREIGN_EXAMPLES + 2):
        loop.take([UrlEntry(f"https://other.example/{i}", None)], SITEMAP)
    assert loop.report.foreign_locs == FOREIGN_EXAMPLES + 2
    assert len(loop.report.foreign_loc_examples) == FOREIGN_EXAMPLES
