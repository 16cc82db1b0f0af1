"""Sink stage helpers: the ``OUT.part`` an output sits in until its run completes.

In: the path of a ``.part`` (a file for JSON Lines and CSV, a directory of
numbered Parquet files for Parquet) and a resume mark. Out: that ``.part`` cut
back to the mark. Nothing here imports pyarrow, so a JSON Lines run resuming
after a Parquet one (or the other way round) needs none.
"""

from __future__ import annotations

import os
import re

__all__ = ["cut_back", "cut_parts", "fsync_dir", "list_parts", "part_name"]

_PART = re.compile(r"part-(\d{6})\.parquet")


def part_name(index: int) -> str:
    """The file name of Parquet part ``index`` inside ``OUT.part/``."""
    return f"part-{index:06d}.parquet"


def list_parts(directory: str) -> list[tuple[int, str]]:
    """The (index, path) of the part files in ``directory``, in order (others ignored)."""
    out = []
    for name in os.listdir(directory):
        m = _PART.fullmatch(name)
        if m is not None:
            out.append((int(m.group(1)), os.path.join(directory, name)))
    return sorted(out)


def cut_parts(directory: str, keep: int) -> None:
    """Delete the parts of ``directory`` numbered ``keep`` or more (never committed)."""
    for index, path in list_parts(directory):
        if index >= keep:
            os.remove(path)
    fsync_dir(directory)


def cut_back(part: str, mark: int) -> None:
    """Cut an interrupted run's ``part`` back to its committed ``mark``.

    A file (JSON Lines, CSV) is truncated to ``mark`` bytes; a directory
    (Parquet) keeps its first ``mark`` parts. Nothing there: nothing to do. What
    is on disk says which, so the format of the run that wrote it need not be known.
    """
    if os.path.isdir(part):
        cut_parts(part, mark)
    elif os.path.exists(part) and os.path.getsize(part) > mark:
        os.truncate(part, mark)


def fsync_dir(directory: str) -> None:
    """Make a rename or a new name in ``directory`` durable (a no-op where it cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the rename itself happened
    finally:
        os.close(fd)
