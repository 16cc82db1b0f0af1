"""``harvester coverage``: how much of each site its sitemaps cover (issue 49 item 1).

In: the parsed arguments (domains, ``--pages K``, ``--json PATH``) and the loaded
config (fetch, politeness, discovery). Out: one line per host on stdout
(completeness and the listed-but-not-live shares), the JSON report
(``coverage/check.py``'s shape) when asked, and the exit status (``exits.py``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

from harvester.cli.exits import EXIT_OK, EXIT_USAGE, JOB_ERRORS, fail
from harvester.cli.options import fetch_arguments

if TYPE_CHECKING:
    import argparse

    from harvester.config import Config

__all__ = ["add_parser", "command"]


def add_parser(sub: Any) -> None:
    """The ``coverage`` verb's arguments."""
    c = sub.add_parser(
        "coverage",
        help="per host: the share of its linked pages its sitemaps list, and listed URLs"
        " that are dead, redirected, noindex or canonical elsewhere",
        description=(
            "Per host: harvest its sitemaps, fetch the home page and up to K pages reached"
            " by same-site links (robots.txt and politeness honoured), and report the share"
            " of the pages found that the sitemaps list (a lower bound from a sample, with"
            " its count and 95%% interval); then sample K listed URLs and report the shares"
            " that answer 404/410, redirect (to a listed URL or not), say noindex or declare"
            " a canonical elsewhere. See docs/coverage.md."
        ),
    )
    c.add_argument("domains", nargs="+", metavar="DOMAIN", help="domains or origins")
    c.add_argument("--pages", type=int, default=20, metavar="K", help="K (default 20)")
    c.add_argument("--json", metavar="PATH", help="write the report as JSON to PATH")
    c.add_argument("--config", help="TOML config file (see config.example.toml)")
    fetch_arguments(c)


def command(ns: argparse.Namespace, cfg: Config) -> int:
    """Run the check; print a line per host; return the exit status."""
    from harvester.coverage.check import coverage

    if ns.pages < 1:
        print("harvester coverage: --pages must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    try:
        report = asyncio.run(coverage(list(ns.domains), cfg, ns.pages))
    except JOB_ERRORS as exc:
        return fail("coverage", exc)
    if ns.json:
        with open(ns.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
    for host in report["hosts"]:
        print(_line(host))
    return EXIT_OK


def _line(host: dict[str, Any]) -> str:
    """One host's figures as a line of text."""
    if "skipped" in host:
        return f"{host['host']}: not checked: {host['skipped']}"
    c = host["completeness"]
    done = "n/a" if c["share"] is None else f"{c['share']:.0%} ({c['count']}/{c['of']})"
    shares = ", ".join(
        f"{name} {fig['count']}/{fig['of']}" for name, fig in host["listed_not_live"].items()
    )
    return f"{host['host']}: completeness {done}; listed sample: {shares}"
