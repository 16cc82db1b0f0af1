"""A page of the links walk, the coverage check or discovery's home page is parsed as its
body arrives (crawl/homepage.py, htmlpage.HtmlReader): a 2 MiB page served on loopback
costs the fetch far less Python memory than the page, its bytes kept only when asked.
(The page is served by another process, ``python -m http.server``, so that tracemalloc
counts the client alone.)"""

from __future__ import annotations

import re
import subprocess
import sys
import tracemalloc
from contextlib import contextmanager
from typing import TYPE_CHECKING

from harvester.config import FetchConfig, HostPolicy
from harvester.crawl.fetch import Fetcher
from harvester.crawl.homepage import Fetched, fetch_page
from harvester.crawl.htmlpage import MAX_HTML_BYTES
from harvester.crawl.scheduler import HostSlot

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

HOST = "127.0.49.90"


@contextmanager
def served(root: Path) -> Iterator[str]:
    """``root`` served on loopback by ``python -m http.server`` in a process of its own;
    yields its origin."""
    cmd = [sys.executable, "-u", "-m", "http.server", "--bind", HOST, "0"]
    proc = subprocess.Popen(
        cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        port = re.search(r"port (\d+)", line)
        assert port is not None, line
        yield f"http://{HOST}:{port.group(1)}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def big_page(size: int) -> bytes:
    head = b'<html><head><link rel="sitemap" href="/map.xml"></head><body>'
    para = b"<p>" + b"lorem ipsum dolor sit amet " * 30 + b'<a href="/x">x</a></p>\n'
    return head + para * (size // len(para)) + b'<a href="/last">l</a></body></html>'


async def _fetch(url: str, *, keep_body: bool) -> tuple[int, Fetched]:
    """``url`` fetched by ``fetch_page``, and the Python memory's peak meanwhile."""
    async with Fetcher(FetchConfig(allow=("127.0.0.0/8",))) as fetcher:
        slot = HostSlot(HOST, HostPolicy(concurrency=1, rate=1000.0, burst=10))
        await fetch_page(url, fetcher, slot)  # (the session's own allocations: not counted)
        tracemalloc.start()
        try:
            fetched = await fetch_page(url, fetcher, slot, keep_body=keep_body)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return peak, fetched


async def test_a_big_page_is_parsed_in_far_less_memory_than_its_size(tmp_path: Path) -> None:
    body = big_page(MAX_HTML_BYTES - 4_096)
    small = big_page(MAX_HTML_BYTES // 8)
    (tmp_path / "index.html").write_bytes(body)
    (tmp_path / "small.html").write_bytes(small)
    with served(tmp_path) as origin:
        small_peak, _ = await _fetch(f"{origin}/small.html", keep_body=False)
        peak, fetched = await _fetch(f"{origin}/", keep_body=False)
        kept_peak, kept = await _fetch(f"{origin}/", keep_body=True)
    assert fetched.page is not None
    assert fetched.page.sitemaps == (f"{origin}/map.xml",)
    assert fetched.page.links == (f"{origin}/x", f"{origin}/last")  # the whole page read
    assert not fetched.page.truncated
    assert fetched.body is None
    # Well under the page (the whole-body parse held all of it), and a page 8 times the
    # size costs no more than the bounded buffers of the connection (aiohttp's reader).
    assert peak < len(body) / 2
    assert peak - small_peak < (len(body) - len(small)) / 4
    # Asked for its bytes (the lastmod audit's sample), the page is held: the same results.
    assert kept.body == body
    assert kept.page == fetched.page
    assert kept_peak >= len(body)
