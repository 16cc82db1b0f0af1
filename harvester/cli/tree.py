"""``harvester tree DOMAIN|URL``: the sitemap hierarchy of one host, as a person reads it.

In: one input entry (a domain, origin, robots.txt URL or sitemap URL) and the
loaded config. Out: robots.txt → indexes → children on stdout, each with its
kind, URL count, bytes, gzip, newest lastmod and failure: a rich tree, or with
``--json`` the same hierarchy as one JSON document (``view/tree.py``,
``tree_data``). The host is harvested by the run's own path (``run_shard``:
the same fetcher, SSRF guard, politeness and caps), its records counted and
dropped. Exit status as ``run``, 0 even when sitemaps failed (the tree says so),
except that a host that failed as a whole (nothing read and a failure: DNS,
connect, robots.txt 5xx, every sitemap failed) is 1, so a script sees it.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import TYPE_CHECKING, Any

from harvester.cli.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE, JOB_ERRORS, fail
from harvester.cli.options import fetch_arguments, typed_flags
from harvester.errors import InputError

if TYPE_CHECKING:
    import argparse

    from aiohttp.abc import AbstractResolver

    from harvester.config import Config

__all__ = ["add_parser", "command", "host_failed", "host_tree"]

_PIPE_WIDTH = 10_000  # columns when stdout is no terminal: wider than any line drawn


def add_parser(sub: Any) -> None:
    """The ``tree`` verb's arguments."""
    t = sub.add_parser(
        "tree",
        help="print one host's sitemap tree with counts and failures",
        description=(
            "Fetch one host's sitemaps as `harvester run` would (same config, SSRF guard,"
            " politeness and caps) and print their hierarchy: robots.txt, then the sitemaps it"
            " lists, then each index's children, each with its kind, URL count, bytes, gzip,"
            " newest lastmod and failure. The records themselves are not written. DOMAIN|URL"
            " is a bare domain, an origin, a robots.txt URL or a sitemap URL (discovery is"
            " then skipped)."
        ),
    )
    t.add_argument("target", metavar="DOMAIN|URL", help="the host (or one sitemap) to draw")
    t.add_argument("--json", action="store_true", help="print the tree as one JSON document")
    t.add_argument("--config", help="TOML config file (see config.example.toml)")
    typed_flags(
        t,
        [
            ("--max-depth", "limits.max_depth", int, "deepest sitemap-index nesting followed"),
            ("--max-sitemaps", "limits.max_sitemaps_per_host", int, "sitemap files per host"),
            ("--host-timeout", "limits.max_host_seconds", float, "seconds spent on one host"),
            ("--cross-host", "discovery.cross_host", str, "same-host | same-site | any"),
        ],
    )
    fetch_arguments(t)


async def host_tree(
    target: str, cfg: Config, *, resolver: AbstractResolver | None = None
) -> dict[str, Any]:
    """Harvest ``target``'s host with its sitemap log on; return its host report dict.

    Raises ``InputError`` when ``target`` is no valid input entry.
    """
    from harvester.run.pipeline import Kept, aiter_seeds, run_shard
    from harvester.run.seeds import parse_seed

    parse_seed(target)  # raises a clear InputError before anything is fetched
    cfg = dataclasses.replace(cfg, output=dataclasses.replace(cfg.output, sitemap_log=True))
    out = Kept()
    await run_shard(aiter_seeds([target]), cfg, out, resolver=resolver)
    return out.hosts[0].report


def command(ns: argparse.Namespace, cfg: Config) -> int:
    """``harvester tree``: fetch, print the tree, return the exit status."""
    from rich.console import Console

    from harvester.run.runtime import event_loop_runner
    from harvester.view.allows import allows_branch
    from harvester.view.tree import render_tree, tree_data

    try:
        report = event_loop_runner(cfg)(host_tree(ns.target, cfg))
    except InputError as exc:
        print(f"harvester tree: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except JOB_ERRORS as exc:
        return fail("tree", exc)
    data = tree_data(report)
    if report.get("allows") is not None:
        data["allows"] = report["allows"]
    if ns.json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        console = Console()
        if not console.is_terminal:
            # Into a pipe or file: whole lines, never cut at a guessed width of 80.
            console = Console(width=_PIPE_WIDTH)
        tree = render_tree(data)
        allows = allows_branch(report)
        if allows is not None:
            tree.add(allows)
        console.print(tree)
    return _status(report)


def host_failed(report: dict[str, Any]) -> bool:
    """Whether the host failed as a whole: no URL, no sitemap read, at least one failure."""
    read = int(report.get("sitemaps_fetched") or 0) - int(report.get("sitemaps_failed") or 0)
    return bool(report.get("failures")) and not report.get("urls") and read <= 0


def _status(report: dict[str, Any]) -> int:
    if not host_failed(report):
        return EXIT_OK
    first = report["failures"][0]
    print(
        f"harvester tree: {report.get('host')} failed: {first.get('class')}:"
        f" {first.get('message')}",
        file=sys.stderr,
    )
    return EXIT_FAILED
