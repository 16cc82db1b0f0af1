"""Regenerate the tiny hostile gzip fixtures in this folder.

Run from anywhere: ``python tests/data/gzip/make_fixtures.py``. Output is
deterministic (mtime=0, fixed level, no file name in the header), so rerunning
it leaves the checked-in files unchanged on the same zlib. The payloads are
mirrored in tests/unit/reader/test_decompress.py; change both together.

* multi_member.gz     three gzip members that concatenate to one urlset
* nested.gz           gzip inside gzip (two layers)
* trailing_garbage.gz one member, then CRLF and bytes that are not gzip
* truncated.gz        one member cut at two thirds of its length
"""

from __future__ import annotations

import gzip
from pathlib import Path

HERE = Path(__file__).resolve().parent

HEAD = b'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
TAIL = b"</urlset>\n"


def urlset(n: int) -> bytes:
    """A sitemap with ``n`` entries https://example.com/page/0 .. n-1."""
    body = b"".join(b"<url><loc>https://example.com/page/%d</loc></url>\n" % i for i in range(n))
    return HEAD + body + TAIL


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def build() -> dict[str, bytes]:
    """Return {file name: bytes} for every fixture."""
    members = [HEAD, urlset(2)[len(HEAD) : -len(TAIL)], TAIL]
    whole = gz(urlset(40))
    return {
        "multi_member.gz": b"".join(gz(m) for m in members),
        "nested.gz": gz(gz(urlset(3))),
        "trailing_garbage.gz": gz(urlset(3)) + b"\r\n<html>not gzip</html>\n",
        "truncated.gz": whole[: len(whole) * 2 // 3],
    }


def main() -> None:
    for name, data in build().items():
        (HERE / name).write_bytes(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
