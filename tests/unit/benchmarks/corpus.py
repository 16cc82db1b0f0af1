"""Reading back a corpus that ``benchmarks.webgen`` wrote, for the webgen tests."""

from __future__ import annotations

import gzip
from typing import TYPE_CHECKING

from benchmarks.webgen import load_manifest
from harvester.models import UrlEntry
from harvester.reader.sitemap import read_bytes

if TYPE_CHECKING:
    from pathlib import Path


def entries_of(out: Path) -> list[UrlEntry]:
    """The page URLs of every urlset of the corpus in ``out``, in manifest order."""
    found: list[UrlEntry] = []
    for host in load_manifest(out)["hosts"]:
        for f in host["files"]:
            if f["kind"] != "urlset":
                continue
            body = (out / "sites" / host["address"] / f["path"].lstrip("/")).read_bytes()
            if f["path"].endswith(".gz"):
                body = gzip.decompress(body)
            entries, _ = read_bytes(body, f"http://{host['address']}{f['path']}")
            found += [e for e in entries if type(e) is UrlEntry]
    return found
