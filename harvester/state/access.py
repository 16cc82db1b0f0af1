"""State file access: may this file be opened for writing, and what an error opening it means.

In: a state file path (before any SQLite connection to it), or an error that
opening, migrating or starting a run on it raised. Out: nothing when the file
may be used, else a ``StateError`` saying which of these it is, with advice
that fits it:

* **foreign**: another application's SQLite file (its ``application_id``), or a
  file written by a newer harvester. Refused before SQLite opens it for
  writing, so it is left byte for byte as it was (opening it read-write first
  would switch it to WAL, and closing that connection would checkpoint into it).
* **corrupt**: not an SQLite file at all, or one SQLite finds damaged. Moving it
  away starts afresh and forgets its history: the advice says so.
* **cannot write**: a read-only file, directory or filesystem, or a permission
  refused. Nothing is wrong with the file; moving it away would throw away a
  healthy history, so the advice is about permissions, never about moving it.
* **disk full**, and any other SQLite failure, named with its error code.

Only the file header is read here (the first 100 bytes, with plain ``open``):
SQLite documents its layout (``application_id`` at offset 68, ``user_version``
at 60, the schema cookie at 40), so a foreign file is recognised without an
SQLite connection, which would create ``-wal``/``-shm`` files beside a WAL-mode
file that is not writable. ``forget_created`` removes those files when an open
that created them is refused.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3

from harvester.errors import StateError

__all__ = [
    "APPLICATION_ID",
    "check_file",
    "check_writable",
    "forget_created",
    "sidecars",
    "state_error",
]

APPLICATION_ID = 0x48525653  # "HRVS": tells our state files from any other SQLite file
_MAGIC = b"SQLite format 3\x00"
_HEADER = 100

# SQLite's primary result codes (the low byte of an extended code).
_PERM, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 8, 10, 11, 13, 14, 26
_CANNOT_WRITE = frozenset({_PERM, _READONLY, _CANTOPEN})
_CORRUPTED = frozenset({_CORRUPT, _NOTADB})
_NO_WRITE_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})

CANNOT_WRITE_ADVICE = (
    "check the permissions of the file and of its directory (SQLite writes STATE-wal and"
    " STATE-shm beside it) and whether the filesystem is mounted read-only; nothing says"
    " the file is damaged, so do not move it away (its history would be lost)"
)
CORRUPT_ADVICE = (
    "it was left as it is; move it away (or restore a backup) to start afresh, which"
    " forgets its history"
)


def sidecars(path: str) -> tuple[str, str]:
    """The files SQLite keeps beside a WAL-mode database: ``PATH-wal`` and ``PATH-shm``."""
    return path + "-wal", path + "-shm"


def check_file(path: str, newest: int) -> None:
    """Refuse ``path`` unless it is missing, empty, or a harvester state file of schema
    ``newest`` or older (``StateError``), reading its header only.

    A header that says "empty" (no application id, schema cookie 0) is let through:
    a new file of ours whose first transaction still sits in its ``-wal`` looks like
    that too, and ``schema.migrate`` checks the schema itself once SQLite reads it.
    """
    try:
        with open(path, "rb") as fh:
            header = fh.read(_HEADER)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise state_error(exc, path) from exc
    if not header:
        return  # an empty file: SQLite makes it a database
    if len(header) < _HEADER or not header.startswith(_MAGIC):
        raise StateError(
            f"not a harvester state file, or a corrupt one (its first bytes are not SQLite's);"
            f" {CORRUPT_ADVICE}",
            url=path,
        )
    app_id = int.from_bytes(header[68:72], "big")
    version = int.from_bytes(header[60:64], "big")
    cookie = int.from_bytes(header[40:44], "big")
    if app_id == APPLICATION_ID and version > newest:
        raise StateError(
            f"written by a newer harvester (schema {version}; this one knows up to {newest});"
            " upgrade harvester or use another state file (this one was left as it is)",
            url=path,
        )
    if app_id not in (0, APPLICATION_ID) or (app_id == 0 and cookie != 0):
        raise StateError(
            "not a harvester state file (another application's SQLite database); it was left"
            " as it is: give --state a path of its own",
            url=path,
        )


def check_writable(path: str) -> None:
    """Refuse (``StateError``, "cannot write") a state file or directory that cannot be written.

    ``os.access`` answers for the file mode and for a read-only mount; what it cannot
    see (an ACL, a security module) still surfaces from SQLite as ``SQLITE_READONLY``
    or ``SQLITE_CANTOPEN``, which ``state_error`` words the same way.
    """
    directory = os.path.dirname(os.path.abspath(path))
    for what, target in (("the state file", path), ("its directory", directory)):
        if os.path.exists(target) and not os.access(target, os.W_OK):
            reason = "read-only filesystem" if _read_only_mount(target) else "permission denied"
            raise StateError(f"cannot write {what} ({reason}): {CANNOT_WRITE_ADVICE}", url=path)


def _read_only_mount(path: str) -> bool:
    """Whether ``path`` lies on a filesystem mounted read-only."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def state_error(exc: BaseException, path: str, doing: str = "") -> StateError:
    """The ``StateError`` for an ``sqlite3.Error`` or ``OSError`` on the state file.

    ``doing``: what was under way (``"opening"``, ``"starting the run"``), for the message.
    The error's own text and code (SQLite's name, or the errno) are always in it.
    """
    prefix = f"{doing}: " if doing else ""
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        name = getattr(exc, "sqlite_errorname", None) or "SQLITE_ERROR"
        detail = f"{exc} ({name})"
        primary = None if code is None else code & 0xFF
    elif isinstance(exc, OSError):
        detail = f"{exc.strerror or exc} (errno {exc.errno}"
        detail += f" {errno.errorcode.get(exc.errno, '')})" if exc.errno is not None else ")"
        primary = (
            _READONLY
            if exc.errno in _NO_WRITE_ERRNOS
            else _FULL
            if exc.errno == errno.ENOSPC
            else _IOERR
        )
    else:
        return StateError(f"{prefix}{exc}", url=path)
    if primary in _CANNOT_WRITE:
        return StateError(
            f"{prefix}cannot write the state file: {detail}; {CANNOT_WRITE_ADVICE}", url=path
        )
    if primary in _CORRUPTED:
        return StateError(f"{prefix}corrupt state file: {detail}; {CORRUPT_ADVICE}", url=path)
    if primary == _FULL:
        # (SQLite answers SQLITE_FULL when a write of the file fails with ENOSPC.)
        if "ENOSPC" not in detail:
            detail += " [errno 28 ENOSPC]"
        return StateError(
            f"{prefix}no space left on the device of the state file: {detail}; free some"
            " space and run again (the run resumes)",
            url=path,
        )
    return StateError(f"{prefix}state file: {detail}", url=path)


def forget_created(path: str, existed: tuple[bool, bool]) -> None:
    """Remove the ``-wal``/``-shm`` files of ``path`` that an open refused just created.

    ``existed``: whether each was there before the open. A ``-wal`` is removed only
    while it is empty (one with content holds transactions: never thrown away), and
    the ``-shm`` only with it (it indexes the ``-wal``).
    """
    wal, shm = sidecars(path)
    wal_existed, shm_existed = existed
    with contextlib.suppress(OSError):
        if not wal_existed and os.path.getsize(wal) == 0:
            os.remove(wal)
    with contextlib.suppress(OSError):
        if not shm_existed and not os.path.exists(wal):
            os.remove(shm)
