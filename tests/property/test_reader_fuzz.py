"""Fuzz the reader: whatever the bytes, only harvester's own errors come out, and quickly.

Inputs are random bytes, and valid sitemaps (plain and gzip, from the chunk-invariance
test's strategy) mutated at the byte level (flips, cuts, duplications, hostile
snippets such as entity declarations, NULs, invalid UTF-8 and stray gzip magic),
fed in random chunks, with default and with tiny caps. ``feed`` and ``finish``
must never raise; the stored error, if any, is a ``HarvesterError``. The suite
runs 150 examples per property; for a long run set ``HARVESTER_FUZZ_EXAMPLES``
(e.g. ``HARVESTER_FUZZ_EXAMPLES=20000 pytest tests/property/test_reader_fuzz.py``).
"""

from __future__ import annotations

import gzip
import itertools
import os
import time

from hypothesis import example, given, settings
from hypothesis import strategies as st

from harvester.config import ReaderConfig
from harvester.errors import HarvesterError
from harvester.models import SitemapChild, UrlEntry
from harvester.reader.sitemap import SitemapReader
from tests.strategies import documents, mutated

EXAMPLES = int(os.environ.get("HARVESTER_FUZZ_EXAMPLES", "150"))
MAX_SECONDS = 2.0  # CPU seconds per example; the inputs are a few kB, so this is generous


CONFIGS = [
    None,
    ReaderConfig(max_decompressed_bytes=300, max_entries_per_file=3, max_url_length=25),
    ReaderConfig(extensions=False),
]


@st.composite
def hostile_inputs(draw: st.DrawFn) -> bytes:
    doc = draw(documents())
    where = draw(st.sampled_from(["plain", "mutate-then-gzip", "gzip-then-mutate"]))
    if where == "plain":
        return draw(mutated(doc))
    if where == "mutate-then-gzip":
        return gzip.compress(draw(mutated(doc)), 1)
    return draw(mutated(gzip.compress(doc, 1)))


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def _check(data: bytes, cuts: list[int], cfg: ReaderConfig | None) -> None:
    start = time.process_time()  # CPU time: a loaded machine does not stretch it
    reader = SitemapReader("http://fuzz.example/s.xml", cfg)
    entries = []
    for chunk in _chunks(data, cuts):
        entries.extend(reader.feed(chunk))  # never raises: errors are stored
    entries.extend(reader.finish())
    result = reader.result()
    assert time.process_time() - start < MAX_SECONDS
    assert result.error is None or isinstance(result.error, HarvesterError)
    assert result.status in ("ok", "partial", "error")
    assert (result.status == "ok") == (result.error is None)
    assert all(isinstance(e, UrlEntry | SitemapChild) for e in entries)
    assert reader.feed(b"<urlset/>") == []  # after finish: ignored, not an error
    assert reader.finish() == []


@settings(max_examples=EXAMPLES)
@given(
    st.binary(max_size=4096),
    st.lists(st.integers(0, 5000), max_size=12),
    st.sampled_from(CONFIGS),
)
@example(b"\x1f\x8b", [1], None)
@example(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\x03\x00", [], None)
@example(b"\xef\xbb\xbf<", [2], None)
@example(b"\xff\xfe<\x00u\x00", [1, 3], None)
def test_random_bytes_only_raise_harvester_errors(
    data: bytes, cuts: list[int], cfg: ReaderConfig | None
) -> None:
    _check(data, cuts, cfg)


@settings(max_examples=EXAMPLES)
@given(
    hostile_inputs(),
    st.lists(st.integers(0, 10_000), max_size=16),
    st.sampled_from(CONFIGS),
)
@example(b'<!DOCTYPE urlset [<!ENTITY a "b">]><urlset>&a;</urlset>', [5], None)
@example(gzip.compress(b"<urlset><url><loc>https://e.com/\x00</loc></url></urlset>"), [7], None)
def test_mutated_sitemaps_only_raise_harvester_errors(
    data: bytes, cuts: list[int], cfg: ReaderConfig | None
) -> None:
    _check(data, cuts, cfg)
