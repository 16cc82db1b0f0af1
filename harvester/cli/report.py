"""``harvester report OUT.report.json --html PAGE``: a run report as one HTML page.

In: the path of a run report (it names its per-host lines, ``OUT.hosts.jsonl``)
and where to write the page. Out: the page (``view/page.py``), written
atomically; exit 0, or 2 with one line on stderr naming the file when the run
report cannot be read. ``write_html_report`` is also what ``run --html-report``
calls at the end of a run.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any

from harvester.cli.exits import EXIT_OK, EXIT_USAGE
from harvester.errors import InputError

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "command", "write_html_report"]


def add_parser(sub: Any) -> None:
    """The ``report`` verb's arguments."""
    r = sub.add_parser(
        "report",
        help="render a run report as one self-contained HTML page",
        description=(
            "Read a run report (OUT.report.json, written by `harvester run`) and the per-host"
            " lines it names (OUT.hosts.jsonl), and write one self-contained HTML page: the"
            " run's totals, failures by class, URLs per host, lastmod over time, the slowest"
            " and largest hosts, and each failed host linked to its report line. No script"
            " and no external asset: it opens offline."
        ),
    )
    r.add_argument("report", metavar="REPORT.json", help="the run report to render")
    r.add_argument("--html", required=True, metavar="PAGE", help="where to write the page")
    r.set_defaults(config=None)


def write_html_report(report_path: str, html_path: str) -> None:
    """Render ``report_path``'s page into ``html_path`` (temp file, then rename).

    Raises ``InputError`` naming the file when the run report cannot be read.
    """
    from harvester.view.page import render_page
    from harvester.view.summary import read_summary

    page = render_page(read_summary(report_path))
    directory = os.path.dirname(os.path.abspath(html_path))
    fd, temp = tempfile.mkstemp(dir=directory, prefix=os.path.basename(html_path) + ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(page)
        # A page to open and share: the umask's usual mode, not mkstemp's owner-only 0600.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, html_path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def command(ns: argparse.Namespace) -> int:
    """``harvester report``: write the page, return the exit status."""
    try:
        write_html_report(ns.report, ns.html)
    except InputError as exc:
        print(f"harvester report: {exc.message}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"harvester report: cannot write {ns.html}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    print(f"harvester report: wrote {ns.html}", file=sys.stderr)
    return EXIT_OK
