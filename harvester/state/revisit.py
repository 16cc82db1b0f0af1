"""Adaptive revisit: when a sitemap that earlier runs read is due to be asked again.

In: what the state remembers of a sitemap's checks (``Revisit``: when it was last
asked, the interval then set, how many checks in a row found it unchanged, the
last outcomes), the time now, and ``state.max_revisit_interval``. Out: whether it
is due (``due``), and the ``Revisit`` a new check leaves (``after``).

The rule (issue 53 item 4). A check is a request answered with the sitemap's
list: a 304 (``n``), a body with the same bytes as the last full read (``s``),
or a body that changed (``c``; also the first read). A change sets the interval
to 0: the sitemap is asked on every run. Each unchanged check sets it to twice
the time since the check before (when that is at least ``MIN_GAP``), at most the
cap: the interval doubles from one
check to the next and so follows the cron's own period (a daily cron skips 1,
then 3, then 7 runs...; an hourly one the same number of its runs) without being
told it. A sitemap is due once ``7/8`` of its interval has passed since its
last check, so that a run that reaches the host a few minutes earlier than the
last one did still asks it. A news sitemap is always due (its list turns over
within hours).

A first read says nothing of how often a list changes, except what its server says:
its ``Last-Modified``. As an HTTP cache does without an expiry time (RFC 9111
§4.2.2, heuristic freshness), the first interval is then 10 % of the time since
that date (``heuristic``; at most the cap, 0 for a date in the future or none): a
list unchanged for months is not asked again the next hour, one made a minute
ago is. A server whose ``Last-Modified`` lags its changes delays the pick-up of a
change by that interval at most, once: the next change found resets it to 0.

The same rule, per host, spaces the late attempts (``run.late``) of a host whose
patient late attempt failed: ``late_due``, ``late_after`` (issue 53).

Nothing here knows about hosts or requests: ``crawl.incremental`` asks and records.

Its own module: pure functions of values and a clock reading, tested with any
clock; the time comes from ``codec.now`` in a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime

__all__ = [
    "HEURISTIC",
    "HISTORY",
    "MIN_GAP",
    "LateRevisit",
    "Revisit",
    "after",
    "due",
    "heuristic",
    "late_after",
    "late_due",
    "overdue",
]

HISTORY = 16  # outcomes remembered per sitemap (newest last)
# An unchanged check this soon after the last one (a re-run, a resumed run) says nothing
# about how often the sitemap changes: the interval stays as it was.
MIN_GAP = 60.0
_EARLY = 0.875  # a check is due once this share of its interval has passed
HEURISTIC = 0.1  # of the age of a first read's Last-Modified: its first interval (RFC 9111)

UNCHANGED = frozenset("ns")


@dataclass(frozen=True, slots=True)
class Revisit:
    """A sitemap's check history as the state stores it.

    ``checked_at``: wall-clock seconds of its last check (None: never checked since
    the revisit columns exist: due). ``interval``: seconds after ``checked_at`` it is
    due again (0: every run). ``quiet``: unchanged checks in a row. ``history``: the
    last ``HISTORY`` outcomes, ``n`` (304), ``s`` (same bytes), ``c`` (changed).
    ``news``: its last full read had Google News entries.
    """

    checked_at: float | None = None
    interval: float = 0.0
    quiet: int = 0
    history: str = ""
    news: bool = False


def due(memory: Revisit, now: float, cap: float) -> bool:
    """Whether a sitemap with this history is to be asked at ``now`` (``cap``: seconds,
    ``state.max_revisit_interval``; an interval stored under a larger cap obeys it)."""
    if memory.news or memory.checked_at is None or memory.interval <= 0:
        return True
    interval = min(memory.interval, cap)
    return now - memory.checked_at >= _EARLY * interval


def overdue(memory: Revisit, now: float, cap: float) -> bool:
    """Whether the sitemap went unasked for the whole ``cap`` since its last check (never
    checked: no; see ``crawl.revisits``): a skip by another rule (an index's lastmod) then
    gives way to a check."""
    return memory.checked_at is not None and now - memory.checked_at >= _EARLY * cap


def heuristic(last_modified: str | None, now: float, cap: float) -> float:
    """The first interval of a list whose server says it last changed at ``last_modified``
    (an HTTP date; None or unreadable: 0): ``HEURISTIC`` of its age at ``now``, at most
    ``cap``; 0 for a date not in the past, or an interval under ``MIN_GAP`` (a list made
    minutes ago: asked on the next run, as any first read)."""
    if not last_modified:
        return 0.0
    try:
        when = parsedate_to_datetime(last_modified)
    except (TypeError, ValueError, IndexError, OverflowError):
        return 0.0
    if when.tzinfo is None:  # (a date without a zone: HTTP dates are GMT)
        when = when.replace(tzinfo=UTC)
    interval = HEURISTIC * (now - when.timestamp())
    return min(cap, interval) if interval >= MIN_GAP else 0.0


def after(
    memory: Revisit | None,
    outcome: str,
    now: float,
    cap: float,
    news: bool,
    first: float = 0.0,
) -> Revisit:
    """The history a check at ``now`` with ``outcome`` (``n``, ``s`` or ``c``) leaves.

    ``memory`` None: the sitemap's first read, whose interval is ``first`` (seconds,
    ``heuristic``; 0: due on the next run). ``news``: the read found news entries (a
    304 keeps what the last full read found: pass ``memory.news``).
    """
    history = ((memory.history if memory else "") + outcome)[-HISTORY:]
    if memory is None:
        return Revisit(now, 0.0 if news else max(0.0, min(first, cap)), 0, history, news)
    if outcome not in UNCHANGED or memory.checked_at is None:
        return Revisit(now, 0.0, 0, history, news)
    since = max(0.0, now - memory.checked_at)
    if since < MIN_GAP:
        return Revisit(now, memory.interval, memory.quiet, history, news)
    interval = min(cap, 2.0 * since)
    return Revisit(now, interval, memory.quiet + 1, history, news)


@dataclass(frozen=True, slots=True)
class LateRevisit:
    """A host's late attempts that failed (``run.late``), as the state stores them.

    ``failed_at``: wall-clock seconds of its last late attempt that failed (None: none
    failed since one last reached it). ``interval``: seconds after ``failed_at`` before
    the next late attempt (0: on the next run). ``failures``: failed late attempts in a
    row.
    """

    failed_at: float | None = None
    interval: float = 0.0
    failures: int = 0


def late_due(memory: LateRevisit, now: float, cap: float) -> bool:
    """Whether a host whose first contact timed out gets its late attempt at ``now``.

    A late attempt waits on the host for up to ``fetch.late_first_byte_timeout`` (45 s):
    one that failed is tried again on a backoff, as a quiet sitemap is asked (``due``),
    the first contact being fast on every run (a host back up is found at once).
    """
    if memory.failed_at is None or memory.interval <= 0:
        return True
    return now - memory.failed_at >= _EARLY * min(memory.interval, cap)


def late_after(memory: LateRevisit, reached: bool, now: float, cap: float) -> LateRevisit:
    """What a late attempt at ``now`` leaves: ``reached`` the host, nothing; failed, an
    interval of twice the time since the last failure (the first: 0, the next run tries
    again), at most ``cap``; failures under ``MIN_GAP`` apart keep the interval."""
    if reached:
        return LateRevisit()
    if memory.failed_at is None:
        return LateRevisit(now, 0.0, 1)
    since = now - memory.failed_at
    interval = memory.interval if since < MIN_GAP else min(cap, 2.0 * since)
    return LateRevisit(now, interval, memory.failures + 1)
