"""Command line: ``harvester <verb> ...``; argparse → config → the library.

In: argv. Out: records on stdout (or a file), diagnostics on stderr, and an
exit status cron users rely on: 0 done (per-item failures are in the report),
1 the job itself failed, 2 usage or config error.

Verbs:
  parse FILE|-   read one local sitemap file (gzip or not) and print its entries as JSON Lines
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from harvester import __version__
from harvester.config import load_config
from harvester.errors import ConfigError
from harvester.normalize import host_of
from harvester.reader import SitemapReader
from harvester.records import record

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import BinaryIO, TextIO

    from harvester.config import ReaderConfig
    from harvester.models import Entry

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_READ_SIZE = 1 << 16


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="harvester",
        description="Find every URL a site publishes in its XML sitemaps.",
    )
    ap.add_argument("--version", action="version", version=f"harvester {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", required=True)

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
    return ap


def _overrides(ns: argparse.Namespace) -> dict[str, object]:
    """Flags whose dest is a dotted config key and that the user actually set."""
    return {k: v for k, v in vars(ns).items() if "." in k and v is not None}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit status."""
    ns = _parser().parse_args(argv)
    try:
        cfg = load_config(ns.config, _overrides(ns))
    except ConfigError as exc:
        print(f"harvester: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if ns.command == "parse":
        return _parse_command(ns.file, ns.url, ns.output, cfg.reader)
    return EXIT_USAGE  # pragma: no cover - argparse enforces the choices


def _parse_command(path: str, url: str | None, output: str, cfg: ReaderConfig) -> int:
    try:
        src: BinaryIO = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        print(f"harvester: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    sitemap = url or (None if path == "-" else path)
    # With --url the records belong to that sitemap's host; without, to each URL's own host.
    host = host_of(url) if url else None
    reader = SitemapReader(sitemap, cfg)
    out: TextIO = sys.stdout if output == "-" else open(output, "w", encoding="utf-8")  # noqa: SIM115
    try:
        with src:
            while chunk := src.read(_READ_SIZE):
                _write(out, reader.feed(chunk), sitemap, host)
                if reader.failed:
                    break
            _write(out, reader.finish(), sitemap, host)
    finally:
        if out is not sys.stdout:
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


def _write(out: TextIO, entries: list[Entry], sitemap: str | None, host: str | None) -> None:
    if entries:
        out.write(
            "".join(
                json.dumps(record(e, sitemap, host), ensure_ascii=False) + "\n" for e in entries
            )
        )
