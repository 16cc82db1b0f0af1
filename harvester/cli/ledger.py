"""``harvester ledger``: the URLs a state file's ledger lists, as JSON lines.

In: the parsed arguments (a state file, hosts, an output path). Out: one JSON line
per URL (url, host, sitemap, lastmod, run) and the exit status (``exits.py``).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from harvester.cli.exits import EXIT_OK, EXIT_USAGE, JOB_ERRORS, fail

if TYPE_CHECKING:
    import argparse
    from typing import Any

__all__ = ["add_parser", "command"]


def add_parser(sub: Any) -> None:
    """The ``ledger`` verb's arguments."""
    g = sub.add_parser(
        "ledger",
        help="print the URLs a state file's ledger lists, as JSON lines",
        description=(
            "One JSON line per URL the state file's ledger lists (what the next run"
            " compares against): url, host, sitemap, lastmod, run (the last run that"
            " listed it). The ledger stores URLs as compressed chunks, not readable in"
            " SQL; this reads them. Exit status: 0 done, 1 the state file is unusable,"
            " 2 usage error."
        ),
    )
    g.add_argument("hosts", nargs="*", metavar="DOMAIN", help="hosts to print (default: all)")
    g.add_argument("--state", required=True, metavar="PATH", help="the state file of the runs")
    g.add_argument("-o", "--output", default="-", help="where to write (default: stdout)")
    g.set_defaults(config=None)


def command(ns: argparse.Namespace) -> int:
    """``harvester ledger``: print the ledger's URLs; return the exit status."""
    from harvester.crawl.scheduler import host_key
    from harvester.state.ledger import LedgerReader
    from harvester.urls.records import encode_records

    if not os.path.exists(ns.state):
        print(f"harvester ledger: no state file at {ns.state}", file=sys.stderr)
        return EXIT_USAGE
    # Hosts as the state names them (a domain, an origin or a URL each: its host).
    hosts = [host_key(h if "://" in h else f"https://{h}/") for h in ns.hosts] or None
    try:
        out = sys.stdout.buffer if ns.output == "-" else open(ns.output, "wb")  # noqa: SIM115
    except OSError as exc:
        print(f"harvester ledger: cannot write {ns.output}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    try:
        reader = LedgerReader(ns.state, run_id=0)
        try:
            batch: list[dict[str, Any]] = []
            for record in reader.listed(hosts):
                batch.append(record)
                if len(batch) >= 10_000:
                    out.write(encode_records(batch))
                    batch.clear()
            out.write(encode_records(batch))
        finally:
            reader.close()
    except JOB_ERRORS as exc:
        return fail("ledger", exc)
    finally:
        if out is not sys.stdout.buffer:
            out.close()
    return EXIT_OK
