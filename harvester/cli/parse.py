"""``harvester parse``: one local sitemap file's entries as JSON Lines.

In: a file path (or ``-``), the URL it was served at, the reader's config. Out: one
record per entry on stdout (the shape ``harvester run`` writes; index children with
``"is_sitemap": true``), a stats line (JSON) on stderr, and the exit status: 0 read
fully, 1 the document is broken (entries before the fault are still printed).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from harvester.cli.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from harvester.urls.normalize import host_of

if TYPE_CHECKING:
    from typing import Any, BinaryIO

    from harvester.config import ReaderConfig
    from harvester.models import Entry

__all__ = ["add_parser", "command"]

_READ_SIZE = 1 << 16


def add_parser(sub: Any) -> None:
    """The ``parse`` verb's arguments."""
    p = sub.add_parser(
        "parse",
        help="print the entries of one local sitemap file as JSON Lines",
        description=(
            "Read one local sitemap file (urlset, sitemap index, RSS, Atom or text; gzip or"
            " not, detected from the bytes) and print one JSON record per entry on stdout."
            ' Index children are printed with "is_sitemap": true. A stats line (JSON) goes'
            " to stderr. Exit status: 0 read fully, 1 the document is broken (entries before"
            " the fault are still printed), 2 usage or config error."
        ),
    )
    p.add_argument("file", help="path of the sitemap file, or - for standard input")
    p.add_argument(
        "--url",
        help="the URL the file was served at (fills the 'sitemap' and 'host' fields)",
    )
    p.add_argument("--config", help="TOML config file (see config.example.toml)")
    p.add_argument(
        "--max-decompressed-bytes",
        type=int,
        dest="reader.max_decompressed_bytes",
        help="cap on decompressed size (default 52428800, the protocol limit)",
    )
    p.add_argument(
        "--max-entries",
        type=int,
        dest="reader.max_entries_per_file",
        help="stop after this many entries in one file",
    )
    p.add_argument("-o", "--output", default="-", help="write records here instead of stdout")


def command(path: str, url: str | None, output: str, cfg: ReaderConfig) -> int:
    """``harvester parse``: print one local file's entries; return the exit status."""
    from harvester.reader.sitemap import SitemapReader

    try:
        src: BinaryIO = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        print(f"harvester: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    sitemap = url or (None if path == "-" else path)
    # With --url the records belong to that sitemap's host; without, to each URL's own host.
    host = host_of(url) if url else None
    reader = SitemapReader(sitemap, cfg)
    out: BinaryIO = sys.stdout.buffer if output == "-" else open(output, "wb")  # noqa: SIM115
    try:
        with src:
            while chunk := src.read(_READ_SIZE):
                _write(out, reader.feed(chunk), sitemap, host)
                if reader.failed:
                    break
            _write(out, reader.finish(), sitemap, host)
    finally:
        if out is sys.stdout.buffer:
            out.flush()
        else:
            out.close()
    result = reader.result()
    summary = {
        "file": path,
        "kind": result.kind,
        "status": result.status,
        "error": result.error.as_dict() if result.error else None,
        **result.stats.as_dict(),
    }
    print(json.dumps(summary), file=sys.stderr)
    return EXIT_OK if result.status == "ok" else EXIT_FAILED


def _write(out: BinaryIO, entries: list[Entry], sitemap: str | None, host: str | None) -> None:
    from harvester.urls.records import encode_records, record

    if entries:
        # The same encoder as `harvester run`, so both verbs print identical records.
        out.write(encode_records(record(e, sitemap, host) for e in entries))
