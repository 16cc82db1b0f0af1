"""Ledger rows: a batch's URLs packed as the chunks the writer inserts."""

from __future__ import annotations

from array import array

from harvester.state.chunks import NO_LASTMOD, unpack_urls
from harvester.state.rows import LedgerRows


def test_pack_text_makes_the_chunks_pack_makes() -> None:
    urls = ["https://a.example/1", "https://a.example/é", "https://b.example/x"]
    fps, lastmods = array("q", [1, 2, 3]), array("q", [10, NO_LASTMOD, 30])
    text = bytearray("".join(u + "\n" for u in urls).encode())
    ends = [len("".join(u + "\n" for u in urls[:2]).encode()), len(text)]
    by_text = LedgerRows.pack_text(fps, text, ends, lastmods, [("s1", 2), ("s2", 1)])
    by_list = LedgerRows.pack(fps, urls, lastmods, [("s1", 2), ("s2", 1)])
    assert by_text.sitemaps == by_list.sitemaps
    assert [(f, m, unpack_urls(u)) for f, m, u in by_text.chunks] == [
        (f, m, unpack_urls(u)) for f, m, u in by_list.chunks
    ]
    assert unpack_urls(by_text.chunks[1][2]) == ["https://b.example/x"]
