"""Command line: ``harvester <verb> ...``; argparse → config → the library.

In: argv. Out: records on stdout (or a file), diagnostics on stderr, and an exit
status cron users rely on (``exits.py`` has the numbers and the one table that maps
an exception to them).

May import: every layer (``distributed``, ``frames``, ``view``, ``coverage``, ``run``,
``output``, ``crawl``, ``state``, ``audit``, ``reader``, ``urls``) and the ground floor. It
sits beside the
package's public API (``harvester/__init__.py``), and only ``__main__`` is above it.

Verbs, one module each:
  run [DOMAIN ...] [-i FILE|-]   harvest every URL the hosts' sitemaps publish (run.py)
  audit --state PATH [DOMAIN ...] verify lastmod against the pages; score trust (audit.py)
  ledger --state PATH [DOMAIN ...] print the URLs a state file lists (ledger.py)
  parse FILE|-                   print one local sitemap file's entries (parse.py)
  tree DOMAIN|URL                print one host's sitemap tree with counts and failures (tree.py)
  report REPORT.json --html PAGE the run report as one self-contained HTML page (report.py)
  merge DIR [-o FILE]            one file from a distributed run's shards (merge.py)
  coverage DOMAIN ... [--pages K] how much of each site its sitemaps list (coverage.py)
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from harvester.cli import audit, coverage, ledger, merge, parse, remote, run
from harvester.cli import report as report_verb
from harvester.cli import tree as tree_verb
from harvester.cli.exits import EXIT_OK, EXIT_USAGE
from harvester.cli.options import overrides
from harvester.config import load_config
from harvester.errors import ConfigError
from harvester.version import __version__

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: the verbs and their flags."""
    ap = argparse.ArgumentParser(
        prog="harvester",
        description="Find every URL a site publishes in its XML sitemaps.",
    )
    ap.add_argument(
        "--version",
        action="version",
        version=f"harvester {__version__}",
        help="show the version and whether the compiled modules are in use, then exit",
    )
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", required=True)
    run.add_parser(sub)
    audit.add_parser(sub)
    ledger.add_parser(sub)
    parse.add_parser(sub)
    tree_verb.add_parser(sub)
    report_verb.add_parser(sub)
    merge.add_parser(sub)
    coverage.add_parser(sub)  # issue 49
    return ap


def _version() -> str:
    """``--version``: ours, lxml's, and whether the compiled modules loaded (and if not,
    why: a slow reader is otherwise hard to tell from a slow network)."""
    from lxml import etree

    from harvester import compiled

    lxml_version = ".".join(map(str, etree.LXML_VERSION[:3]))
    return f"harvester {__version__} (lxml {lxml_version}; compiled: {compiled.status()})"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        print(_version())
        return EXIT_OK
    ns = build_parser().parse_args(args)
    try:
        cfg = load_config(ns.config, overrides(ns))
    except ConfigError as exc:
        print(f"harvester: {exc}", file=sys.stderr)
        return EXIT_USAGE
    match ns.command:
        case "parse":
            return parse.command(ns.file, ns.url, ns.output, cfg.reader)
        case "run":
            return remote.command(ns, cfg, run.command)  # (-o s3://...: staged, published)
        case "audit":
            return audit.command(ns, cfg)
        case "ledger":
            return ledger.command(ns)
        case "tree":
            return tree_verb.command(ns, cfg)
        case "report":
            return report_verb.command(ns)
        case "merge":
            return merge.command(ns)
        case "coverage":
            return coverage.command(ns, cfg)
    return EXIT_USAGE  # pragma: no cover - argparse enforces the choices
