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
within hours). Nothing here knows about hosts or requests: ``crawl.incremental``
asks and records.

Its own module: pure functions of values and a clock reading, tested with any
clock; the time comes from ``codec.now`` in a run.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HISTORY", "MIN_GAP", "Revisit", "after", "due", "overdue"]

HISTORY = 16  # outcomes remembered per sitemap (newest last)
# An unchanged check this soon after the last one (a re-run, a resumed run) says nothing
# about how often the sitemap changes: the interval stays as it was.
MIN_GAP = 60.0
_EARLY = 0.875  # a check is due once this share of its interval has passed

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


def after(memory: Revisit | None, outcome: str, now: float, cap: float, news: bool) -> Revisit:
    """The history a check at ``now`` with ``outcome`` (``n``, ``s`` or ``c``) leaves.

    ``memory`` None: the sitemap's first read. ``news``: the read found news entries
    (a 304 keeps what the last full read found: pass ``memory.news``).
    """
    history = ((memory.history if memory else "") + outcome)[-HISTORY:]
    if outcome not in UNCHANGED or memory is None or memory.checked_at is None:
        return Revisit(now, 0.0, 0, history, news)
    since = max(0.0, now - memory.checked_at)
    if since < MIN_GAP:
        return Revisit(now, memory.interval, memory.quiet, history, news)
    interval = min(cap, 2.0 * since)
    return Revisit(now, interval, memory.quiet + 1, history, news)
