"""Chunk-boundary invariance: any split of a document (plain or gzip) reads the same.

Documents are built from hostile-ish blocks (namespaces, BOMs, CDATA, comments,
entities, empty locs, whitespace, extensions) and compared with the one-shot read.
"""

from __future__ import annotations

import gzip
import itertools

from hypothesis import example, given
from hypothesis import strategies as st

from harvester.reader.sitemap import read_bytes
from tests.strategies import documents


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def _outcome(chunks: list[bytes]) -> tuple[object, ...]:
    entries, result = read_bytes(chunks)
    return (entries, result.kind, result.status, type(result.error), result.stats.as_dict())


@given(documents(), st.lists(st.integers(0, 10_000), max_size=20), st.booleans())
@example(b"<urlset><url><loc>https://e.com/a</loc></url></urlset>", [1, 2, 3], True)
@example(b"\xef\xbb\xbf\n<?xml version='1.0'?><urlset/>", [1, 2], False)
def test_any_split_reads_like_one_shot(data: bytes, cuts: list[int], compress: bool) -> None:
    if compress:
        data = gzip.compress(data)
    whole = _outcome([data])
    split = _outcome(_split(data, cuts))
    one_byte = _outcome([data[i : i + 1] for i in range(len(data))])
    assert split == whole
    assert one_byte == whole
