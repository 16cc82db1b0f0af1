"""``harvester merge OUT/ -o FILE``: one file from a distributed run's shards.

In: the output directory of a ``harvester run --scheduler`` run. Out: the records
of its committed shards, concatenated in shard (manifest) order, in the format
``--format`` or ``FILE``'s extension names (else the shards' own), written as
``FILE.part`` and renamed; the exit status (``exits.py``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from harvester.cli.exits import EXIT_OK, EXIT_USAGE, JOB_ERRORS, fail

if TYPE_CHECKING:
    import argparse
    from typing import Any

__all__ = ["add_parser", "command"]


def add_parser(sub: Any) -> None:
    """The ``merge`` verb's arguments."""
    m = sub.add_parser(
        "merge",
        help="concatenate a distributed run's committed shard files into one",
        description=(
            "Write the records of every committed shard of a distributed run's output"
            " directory (harvester run --scheduler ... -o DIR) into one file, in shard order,"
            " in the format --format or the file's extension (.jsonl, .csv, .parquet) names,"
            " else the shards' own; only the files a shard's manifest names are read. Exit"
            " status: 0 done, 1 a file could not be read or written, 2 not a finished run's"
            " directory or a conversion merge does not make."
        ),
    )
    m.add_argument(
        "--format",
        choices=("jsonl", "csv", "parquet"),
        default="",
        help="the format to write (default: by -o's extension, else the shards' format)",
    )
    m.add_argument("directory", metavar="DIR", help="the distributed run's output directory")
    m.add_argument("-o", "--output", default="-", help="where to write (default: stdout)")
    m.set_defaults(config=None)


def command(ns: argparse.Namespace) -> int:
    """``harvester merge``: concatenate the committed shard files; return the exit status."""
    from harvester.distributed.layout import read_layout
    from harvester.distributed.merge import merge

    try:
        layout = read_layout(ns.directory)
        if layout is None:
            print(
                f"harvester merge: {ns.directory} is not a distributed run's output directory",
                file=sys.stderr,
            )
            return EXIT_USAGE
        merge(layout, ns.output, ns.format)
    except JOB_ERRORS as exc:
        return fail("merge", exc)
    return EXIT_OK
