"""Hypothesis strategies several test modules share (never imported from a test module).

Sitemap documents: ``documents`` (urlsets and indexes in every namespace form, with
extensions) and ``mutated`` (a document damaged at the byte level, from ``SNIPPETS`` of
hostile markup). URLs: ``urls`` (what sitemaps publish, tracking parameters and all)
and ``ANY_URL`` (any text after ``https://``).
"""

from __future__ import annotations

from urllib.parse import quote

from hypothesis import strategies as st

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


SNIPPETS = [
    b'<!DOCTYPE urlset [<!ENTITY a "aaaaaaaaaa">]>',
    b'<!ENTITY % p SYSTEM "file:///etc/passwd">',
    b"&a;&a;&a;",
    b"\x00",
    b"\xff\xfe",
    b"\xef\xbb\xbf",
    b"\x1f\x8b",
    b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff",
    b"]]>",
    b"<![CDATA[",
    b"<?xml version='1.0' encoding='utf-16'?>",
    b"<?xml version='1.0' encoding='x-no-such'?>",
    b'<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="file:///etc/passwd"/>',
    b"<sitemapindex>",
    b"</urlset>",
    b"<loc>",
    b"\n" * 3,
]


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """Apply 1-4 byte-level mutations to ``data``."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(buf)))
        op = draw(st.sampled_from(["flip", "cut", "dup", "insert", "snippet", "truncate"]))
        if op == "flip" and buf:
            i = min(pos, len(buf) - 1)
            buf[i] ^= draw(st.integers(1, 255))
        elif op == "cut":
            del buf[pos : pos + draw(st.integers(1, 64))]
        elif op == "dup":
            buf[pos:pos] = buf[pos : pos + draw(st.integers(1, 256))]
        elif op == "insert":
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif op == "snippet":
            buf[pos:pos] = draw(st.sampled_from(SNIPPETS))
        else:
            del buf[pos:]
    return bytes(buf)


LABEL = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)


HOST = st.lists(LABEL, min_size=1, max_size=3).map(lambda ls: ".".join([*ls, "com"]))


SEGMENT_CHARS = "abcXYZ019-._~!$&'()*+,=:@ %/äé€?#;"


SEGMENT = st.text(SEGMENT_CHARS, max_size=8)


KEY = st.sampled_from(["id", "page", "category", "q", "color", "a", "b", "sort", "p"])


VALUE = st.text("abcXYZ019-._~ +%&=/?ä", max_size=6)


TRACKING = st.sampled_from(
    [
        "utm_source",
        "utm_medium",
        "UTM_Campaign",
        "fbclid",
        "gclid",
        "msclkid",
        "jsessionid",
        "PHPSESSID",
    ]
)


ANY_URL = st.text("abcAB01:/?#[]@!$&'()*+,;=%-._~ äé€\t", max_size=40).map(lambda s: "https://" + s)


@st.composite
def urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https"]))
    host = draw(HOST)
    port = draw(st.sampled_from(["", ":8080", ":81"]))
    path = "/" + "/".join(quote(s, safe="") for s in draw(st.lists(SEGMENT, max_size=4)))
    pairs = draw(st.lists(st.tuples(KEY, VALUE), max_size=4))
    query = "&".join(f"{k}={quote(v, safe='')}" for k, v in pairs)
    url = f"{scheme}://{host}{port}{path}"
    return url + (f"?{query}" if query else "")
