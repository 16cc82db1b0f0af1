"""Sink stage helpers: the ``OUT.part`` an output sits in until its run completes.

In: the path of a ``.part`` (a file for JSON Lines and CSV, a directory of
numbered Parquet files for Parquet) and a resume mark. Out: that ``.part`` cut
back to the mark (``cut_back``), whether it still holds what the mark counts
(``holds``), and its publication: the rename over the output and the fsync of
the directory (``publish_file``), also of what a run stopped while publishing
left (``publish_leftover``); and a small file written whole or not at all
(``write_atomic``: the run report, a distributed run's layout and report). Nothing
here imports pyarrow, so a JSON Lines run resuming after a Parquet one (or the other
way round) needs none.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile

from harvester.output.faults import fault_point

__all__ = [
    "ASSEMBLED",
    "cut_back",
    "cut_parts",
    "discard",
    "fsync_dir",
    "fsync_file",
    "holds",
    "list_parts",
    "part_name",
    "publish_file",
    "publish_leftover",
    "remove_parts",
    "write_atomic",
]

_PART = re.compile(r"part-(\d{6})\.parquet")
ASSEMBLED = "assembled.tmp"  # inside OUT.part/: the whole Parquet output, before its rename


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
    """Delete the parts of ``directory`` numbered ``keep`` or more (never committed), and
    an assembled file a close left before it published (made of the parts again)."""
    for index, path in list_parts(directory):
        if index >= keep:
            os.remove(path)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(directory, ASSEMBLED))
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


def fsync_file(path: str) -> None:
    """fsync the file at ``path`` (one written by a library that closed it itself)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def holds(part: str, mark: int, *, parquet: bool) -> bool:
    """Whether ``part`` still holds what a state commit of ``mark`` counted: at least
    ``mark`` bytes (a file), or parts ``0 .. mark - 1`` (a Parquet directory)."""
    if mark <= 0:
        return True
    if parquet:
        if not os.path.isdir(part):
            return False
        return sum(1 for index, _ in list_parts(part) if index < mark) == mark
    return os.path.isfile(part) and os.path.getsize(part) >= mark


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temp file beside it: fsync, rename, fsync the
    directory. A reader sees the old file or the new one, never a part; the temp file
    is removed when a step fails."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    fsync_dir(directory)


def publish_file(temp: str, path: str) -> None:
    """Rename ``temp`` (durable already) over ``path``, then make the rename durable."""
    os.replace(temp, path)
    fault_point("renamed")
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def publish_leftover(path: str, *, parquet: bool) -> bool:
    """Finish publishing ``path`` for a run that was stopped while it published.

    Its temporary file (``path.part``; Parquet: ``path.part/assembled.tmp``) is
    renamed over ``path`` if it is still there. Returns whether ``path`` now holds
    the run's output: False when neither is there (the output was lost).
    """
    part = path + ".part"
    temp = os.path.join(part, ASSEMBLED) if parquet else part
    if os.path.isfile(temp):
        publish_file(temp, path)
    elif not os.path.isfile(path):
        return False
    if parquet and os.path.isdir(part):
        remove_parts(part)
    return True


def remove_parts(directory: str) -> None:
    """Delete a published Parquet output's parts, and the directory once empty."""
    for _, part in list_parts(directory):
        with contextlib.suppress(FileNotFoundError):
            os.remove(part)
    with contextlib.suppress(OSError):  # (not empty: files of the user's own in it)
        os.rmdir(directory)


def discard(part: str) -> None:
    """Delete a ``.part`` (a file, or a Parquet directory's parts) whose records are lost
    or written again elsewhere; a no-op when it is not there."""
    if os.path.isdir(part):
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(part, ASSEMBLED))
        remove_parts(part)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.remove(part)
