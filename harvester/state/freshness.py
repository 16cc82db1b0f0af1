"""HTTP freshness of a remembered answer (RFC 9111 §4.2): how long it may be reused unasked.

In: the answer's response headers (``Cache-Control``, ``Expires``, ``Date``,
``Last-Modified``), its status, the time it was received, a default lifetime and a cap
(``state.max_revisit_interval``). Out: the seconds it stays fresh (``lifetime``).

Used for a host's ``/.well-known/tdmrep.json`` (issue 53: a daily cron asked it on every
rediscovery although it changes rarely). The order is RFC 9111's: ``no-store`` or
``no-cache`` → 0 (ask every time it would have been asked before); ``max-age``; else
``Expires`` minus ``Date``; else, for a status heuristically cacheable (RFC 9110 §15.1), 10 %
of the time since ``Last-Modified`` (§4.2.2) or, without one, the default. Always at
most the cap.

Its own module: pure functions of values and a clock reading, like ``revisit.py``.
"""

from __future__ import annotations

from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

from harvester.state.revisit import HEURISTIC

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DEFAULT_LIFETIME", "HEURISTIC_STATUSES", "http_date", "lifetime"]

DEFAULT_LIFETIME = 7 * 86400.0  # an answer that says nothing of its freshness
# Statuses a cache may reuse without explicit freshness (RFC 9110 §15.1).
HEURISTIC_STATUSES = frozenset({200, 203, 204, 206, 300, 301, 304, 308, 404, 405, 410, 414, 501})


def http_date(value: str | None) -> float | None:
    """An HTTP date as epoch seconds (None: absent or unreadable)."""
    if not value:
        return None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # (HTTP dates are GMT)
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def lifetime(
    headers: Mapping[str, str],
    status: int,
    now: float,
    cap: float,
    *,
    default: float = DEFAULT_LIFETIME,
    last_modified: str | None = None,
) -> float:
    """Seconds an answer with ``headers`` and ``status`` received at ``now`` stays fresh
    (see the module), at most ``cap``. ``last_modified``: the remembered one, for a 304
    that does not repeat it."""
    control = _directives(headers.get("Cache-Control", ""))
    if "no-store" in control or "no-cache" in control:
        return 0.0
    if (max_age := control.get("max-age")) is not None:
        return _bounded(_seconds(max_age), cap)
    date = http_date(headers.get("Date")) or now
    if "Expires" in headers:  # an unreadable Expires ("0") means already expired
        expires = http_date(headers.get("Expires"))
        return _bounded(expires - date, cap) if expires is not None else 0.0
    if status not in HEURISTIC_STATUSES:
        return 0.0
    changed = http_date(headers.get("Last-Modified") or last_modified)
    if changed is not None and changed < date:
        return _bounded(HEURISTIC * (date - changed), cap)
    return _bounded(default, cap)


def _directives(value: str) -> dict[str, str]:
    """``Cache-Control``'s directives, lower-cased, each with its argument ("" if none)."""
    out: dict[str, str] = {}
    for part in value.lower().split(","):
        name, _, arg = part.strip().partition("=")
        if name:
            out.setdefault(name, arg.strip().strip('"'))
    return out


def _seconds(arg: str) -> float:
    try:
        return float(int(arg))
    except ValueError:
        return 0.0  # an invalid max-age is stale (RFC 9111 §4.2.1)


def _bounded(seconds: float, cap: float) -> float:
    return max(0.0, min(seconds, cap))
