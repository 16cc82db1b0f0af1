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

NAMESPACES = [
    'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"',
    'xmlns="https://www.sitemaps.org/schemas/sitemap/0.9"',
    'xmlns="http://www.google.com/schemas/sitemap/0.84"',
    "",
]
LOC_FORMS = [
    "https://example.com/{i}",
    "  https://example.com/{i}?a=1&amp;b=2 ",
    "<![CDATA[https://example.com/{i}?x&y]]>",
    "https://example.com/<!-- c -->{i}",
    "",
    "/relative/{i}",
    "https://example.com/&#233;{i}",
]
EXTRAS = [
    "",
    "<lastmod>2024-01-0{d}</lastmod>",
    "<lastmod> 2024-01-0{d}T10:00:00+01:00 </lastmod>",
    "<changefreq>Daily</changefreq><priority>0.{d}</priority>",
    '<image:image xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
    "<image:loc>https://img.example.com/{d}.jpg</image:loc></image:image>",
    '<xhtml:link xmlns:xhtml="http://www.w3.org/1999/xhtml" rel="alternate" hreflang="de"'
    ' href="https://example.com/de/{d}"/>',
]


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["urlset", "sitemapindex", "text"]))
    n = draw(st.integers(0, 12))
    if kind == "text":
        sep = draw(st.sampled_from(["\n", "\r\n", "\r"]))
        lines = [
            draw(
                st.sampled_from(
                    ["https://e.com/{i}", "# c", "", "junk {i}", "  https://e.com/{i} "]
                )
            ).format(i=i)
            for i in range(n)
        ]
        body = sep.join(lines)
    else:
        entry = "url" if kind == "urlset" else "sitemap"
        items = []
        for i in range(n):
            loc = draw(st.sampled_from(LOC_FORMS)).format(i=i)
            extra = draw(st.sampled_from(EXTRAS)).format(d=(i % 9) + 1)
            items.append(f"<{entry}><loc>{loc}</loc>{extra}</{entry}>")
            if draw(st.booleans()):
                items.append("<!-- between -->")
        ns = draw(st.sampled_from(NAMESPACES))
        decl = draw(st.sampled_from(['<?xml version="1.0" encoding="UTF-8"?>\n', "", "\n  "]))
        body = f"{decl}<{kind} {ns}>{''.join(items)}</{kind}>"
    prefix = draw(st.sampled_from([b"", b"\xef\xbb\xbf"]))
    data = prefix + body.encode()
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]  # truncated documents too
    return data


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
