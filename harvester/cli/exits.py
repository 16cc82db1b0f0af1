"""Exit statuses of every verb, and the one table that maps an exception to its status.

In: the exception a verb's job raised. Out: the status the process exits with and one
line on stderr. Cron users rely on these numbers: 0 done (per-item failures are in the
report), 1 the job itself failed, 2 usage or config error, 75 a run holds the state
file (EX_TEMPFAIL: retry later), 130 interrupted (SIGINT), 143 terminated (SIGTERM).
"""

from __future__ import annotations

import sqlite3
import sys

from harvester.errors import ConfigError, InputError, RunFailed, StateError, StateLocked

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_LOCKED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "JOB_ERRORS",
    "fail",
]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process killed by it
EXIT_LOCKED = 75  # EX_TEMPFAIL: another run holds the state file; cron may simply retry later

# The one mapping, in order: the first class that matches decides (a subclass comes
# before its base). ``failed``: the message says the job failed (else it is the
# user's to fix: the error alone says what).
_TABLE: tuple[tuple[type[BaseException], int, bool], ...] = (
    (ConfigError, EXIT_USAGE, False),
    (InputError, EXIT_USAGE, False),
    (StateLocked, EXIT_LOCKED, False),
    (StateError, EXIT_FAILED, True),
    (RunFailed, EXIT_FAILED, True),
    (sqlite3.Error, EXIT_FAILED, True),  # (StateStore translates; a reader may not)
    (OSError, EXIT_FAILED, True),
)

# What a verb catches around its job: everything the table maps, nothing else (a
# bug is a traceback, not an exit status).
JOB_ERRORS: tuple[type[BaseException], ...] = tuple(cls for cls, _, _ in _TABLE)


def fail(verb: str, exc: BaseException) -> int:
    """Tell the user why ``verb`` stopped (one stderr line); return the exit status.

    ``exc`` must be one of ``JOB_ERRORS``.
    """
    for cls, status, failed in _TABLE:
        if isinstance(exc, cls):
            what = f"{verb} failed: " if failed else ""
            print(f"harvester: {what}{exc}", file=sys.stderr)
            return status
    raise TypeError(f"no exit status for {type(exc).__name__}") from exc
