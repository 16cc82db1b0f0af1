"""``harvester audit``: verify each host's sitemap lastmod against its pages.

In: the parsed arguments (a state file, hosts) and the loaded config (its fetch and
politeness settings). Out: the audit table on stdout, the JSON and HTML reports, the
trust scores in the state file, and the exit status (``exits.py``).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from harvester.cli.exits import EXIT_OK, EXIT_USAGE, JOB_ERRORS, fail
from harvester.cli.options import fetch_arguments

if TYPE_CHECKING:
    import argparse
    from typing import Any

    from harvester.config import Config

__all__ = ["add_parser", "command"]


def add_parser(sub: Any) -> None:
    """The ``audit`` verb's arguments."""
    a = sub.add_parser(
        "audit",
        help="verify each host's sitemap lastmod against its pages; score its trust",
        description=(
            "Per host of a state file: the lastmod distribution verdict of its last run"
            " (absent, generation_time, constant, future, plausible), then K pages sampled"
            " over its sitemaps are fetched (robots.txt and politeness honoured, bodies"
            " capped) and their own dates (JSON-LD dateModified, article:modified_time,"
            " og:updated_time, itemprop dateModified, Last-Modified) compared with the"
            " sitemap lastmod; content fingerprints are compared with the last audit's."
            " The trust level (trusted, untrusted, unknown) is stored in the state: the"
            " next runs let lastmod filter URLs only where it is trusted. Prints a table;"
            " --json and --html write the report. Exit status: 0 done, 1 the state file is"
            " unusable, 2 usage error, 75 a run holds the state file."
        ),
    )
    a.add_argument(
        "hosts",
        nargs="*",
        metavar="DOMAIN",
        help="hosts to audit, as in a domains file (default: all)",
    )
    a.add_argument("-i", "--input", help="a domains file ('-' = stdin): audit its hosts")
    a.add_argument("--state", required=True, metavar="PATH", help="the state file of the runs")
    a.add_argument("--sample", type=int, default=20, metavar="K", help="pages per host (20)")
    a.add_argument("--json", metavar="PATH", help="write the JSON report here")
    a.add_argument("--html", metavar="PATH", help="write the HTML report (with charts) here")
    a.add_argument("--config", help="TOML config file (fetch and politeness settings)")
    fetch_arguments(a)


def command(ns: argparse.Namespace, cfg: Config) -> int:
    """``harvester audit``: audit the hosts of a state file; return the exit status."""
    from harvester.audit.report import render_text
    from harvester.run.verify import run_audit

    if not os.path.exists(ns.state):
        print(f"harvester audit: no state file at {ns.state}", file=sys.stderr)
        return EXIT_USAGE
    if ns.sample < 1:
        print("harvester audit: --sample must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    hosts: list[str] | None = None
    if ns.hosts or ns.input:
        from harvester.crawl.seed import Seed
        from harvester.run.seeds import SeedReader, open_lines

        hosts = [s.host for s in SeedReader(open_lines(ns.hosts, ns.input)) if isinstance(s, Seed)]
    try:
        audits = run_audit(cfg, ns.state, ns.sample, hosts, json_path=ns.json, html_path=ns.html)
    except JOB_ERRORS as exc:
        return fail("audit", exc)
    print(render_text(audits))
    return EXIT_OK
