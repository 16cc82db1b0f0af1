"""Timestamps, parsed and formatted: ``<lastmod>``, Atom dates, RSS ``pubDate``, ``--since``.

In: the trimmed text of a date element. Out: a timezone-aware UTC ``datetime``
(or ``None``) and, for lastmods, a ``DateQuality`` the reader counts in its stats;
``format_utc`` the other way. On the ground floor, beside ``models``: the reader
parses with it, and the config (``output.since``), the records, the state file and
the audit read and write the same form.

Policy (conformance README, "Timestamps"):

* Strict W3C Datetime (``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD``,
  ``YYYY-MM-DDThh:mm[:ss[.s+]]TZD``) is ``W3C``. Reduced-precision dates are
  UTC midnight of the first day, as crawler-commons reads them.
* Unambiguous deviations are parsed and ``NONSTANDARD``: a datetime without a
  zone (read as UTC), the RFC 3339 space separator, lower-case ``t``/``z``,
  basic offsets (``+0100``), and RFC 822/1123 dates that carry a zone.
* Everything else is ``(None, INVALID)``: impossible values (month 13, Feb 30,
  hour 24 or 25), ambiguous ones (``16/07/2005``, bare digits, ``20050716``), words.

This runs once per sitemap entry. Where the compiled module
``harvester/_cdates.pyx`` is built, it parses the shapes sitemaps use almost
always (``YYYY-MM-DD``, and ``YYYY-MM-DDThh:mm[:ss]`` with ``Z`` or ``±hh:mm``)
and formats every aware datetime. Everything else, and
everything without it, takes the Python path: the strict form is one
precompiled regex and the ``datetime`` is built in C by
``datetime.fromisoformat``, memoised because some sitemaps repeat a handful of
timestamps thousands of times (most stamp each URL with its own time, which is
why the common shapes are compiled).

Example::

    >>> parse_lastmod("2004-12-23T18:00:15+01:00")
    (datetime.datetime(2004, 12, 23, 17, 0, 15, tzinfo=datetime.timezone.utc), <DateQuality.W3C: 0>)
    >>> format_utc(parse_lastmod("1997-07-16T19:20:30.45+01:00")[0])
    '1997-07-16T18:20:30.450000Z'
"""

from __future__ import annotations

import enum
import functools
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from harvester import compiled

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "DateQuality",
    "format_utc",
    "format_utc_seconds",
    "parse_lastmod",
    "parse_rfc822",
    "w3c_common",
]

_cdates = compiled.load("_cdates")
# The compiled parse of the common strict shapes (None: not handled there, or not built).
# Callers on the hot path try it first; parse_lastmod does too.
w3c_common: Callable[[str], datetime | None] | None = _cdates.w3c if _cdates is not None else None


class DateQuality(enum.IntEnum):
    """How well a date string followed the sitemaps.org format (W3C Datetime)."""

    W3C = 0  # strict W3C Datetime
    NONSTANDARD = 1  # parsed, but not W3C Datetime (counted as ``lastmod_nonstandard``)
    INVALID = 2  # impossible or ambiguous: no datetime (counted as ``lastmod_invalid``)


# The regexes only decide which form a string has; the values are built by
# datetime.fromisoformat (C, about twice as fast as int() over regex groups).
# Hours, minutes, seconds and offsets are range-checked here because
# fromisoformat is laxer than W3C there (3.11 takes an offset "+01:60", newer
# Pythons read "24:00" as the next midnight); day-of-month and Feb 29 are left
# to the datetime constructor. re.ASCII: \d would otherwise match other
# scripts' digits, which int() and fromisoformat accept.
_HH = r"(?:[01]\d|2[0-3])"
_MM = r"[0-5]\d"
_W3C = re.compile(
    rf"\d{{4}}(?:-\d{{2}}(?:-\d{{2}}"
    rf"(?:T{_HH}:{_MM}(?::{_MM}(?:\.\d+)?)?(?:Z|[+-]{_HH}:{_MM}))?)?)?",
    re.ASCII,
).fullmatch

# The ISO 8601 / RFC 3339 near-misses the policy accepts: a full date and
# hh:mm[:ss[.s+]] with 'T', 't' or ' ' between, and a zone that may be absent,
# 'z', or basic '+hhmm'. Strict strings match too, but never get here.
_LENIENT = re.compile(
    rf"\d{{4}}-\d{{2}}-\d{{2}}[Tt ]{_HH}:{_MM}(?::{_MM}(?:\.\d+)?)?(?:[Zz]|[+-]{_HH}:?{_MM})?",
    re.ASCII,
).fullmatch

# RFC 822 as amended by RFC 1123 (4-digit year) and RFC 2822's obsolete syntax
# (2-digit year, optional weekday and seconds). Hand-written rather than
# email.utils.parsedate_to_datetime, which accepts trailing garbage, swaps day
# and month when it fails, and reads "-0000" (UT per RFC 5322) as "no zone".
_RFC822 = re.compile(
    r"(?:([a-z]{3,9})\s*(?:,\s*|\s))?(\d{1,2})\s+([a-z]{3,9})\s+(\d{2,4})\s+"
    r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s+([+-]\d{4}|[a-z]{1,3})",
    re.ASCII | re.IGNORECASE,
).fullmatch

_WEEKDAYS = frozenset(
    {"mon", "tue", "wed", "thu", "fri", "sat", "sun"}
    | {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
)
_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
# Abbreviated (RFC 822) and full names, lower case.
_MONTHS = {name: n for n, full in enumerate(_MONTH_NAMES.split(), 1) for name in (full, full[:3])}
# RFC 822 zone names. Military single letters other than Z are left out on
# purpose: RFC 1123 §5.2.14 says their signs were defined backwards and that
# they carry no information, so such dates are zone-less and give None.
_ZONE_MINUTES = {
    "ut": 0,
    "utc": 0,
    "gmt": 0,
    "z": 0,
    "est": -300,
    "edt": -240,
    "cst": -360,
    "cdt": -300,
    "mst": -420,
    "mdt": -360,
    "pst": -480,
    "pdt": -420,
}

_INVALID: tuple[datetime | None, DateQuality] = (None, DateQuality.INVALID)

# Strict strings of these lengths are exactly YYYY, YYYY-MM and YYYY-MM-DD
# (the shortest datetime form, YYYY-MM-DDThh:mmZ, has 17 characters).
_MIDNIGHT_UTC = {4: "-01-01T00:00Z", 7: "-01T00:00Z", 10: "T00:00Z"}


def parse_lastmod(raw: str) -> tuple[datetime | None, DateQuality]:
    """Parse a ``<lastmod>`` (or Atom ``updated``) value into ``(UTC datetime, quality)``.

    ``raw`` must already be trimmed. Returns ``(None, DateQuality.INVALID)`` for
    values that are impossible or ambiguous; never raises. What the compiled
    parse does not answer goes to ``parse_lastmod_py``, cached per string.

    >>> parse_lastmod("2005-01-01")
    (datetime.datetime(2005, 1, 1, 0, 0, tzinfo=datetime.timezone.utc), <DateQuality.W3C: 0>)
    >>> parse_lastmod("2005-07-16 19:20:30+01:00")[1]
    <DateQuality.NONSTANDARD: 1>
    >>> parse_lastmod("16/07/2005")
    (None, <DateQuality.INVALID: 2>)
    """
    if w3c_common is not None:
        dt = w3c_common(raw)
        if dt is not None:
            return dt, DateQuality.W3C
    return parse_lastmod_py(raw)


@functools.lru_cache(maxsize=8192)
def parse_lastmod_py(raw: str) -> tuple[datetime | None, DateQuality]:
    """``parse_lastmod`` in Python alone: every form, decided here (see the module docstring)."""
    # Order matters: a string of the strict shape that names an impossible
    # instant (2005-02-30) is INVALID; it must not get a second, lenient chance.
    try:
        if _W3C(raw) is not None:
            # Reduced precision: complete it to midnight UTC and let fromisoformat
            # build it (3.11 has no YYYY or YYYY-MM form; this also beats
            # datetime(..., tzinfo=UTC) and .replace(tzinfo=UTC) by 4-6x).
            suffix = _MIDNIGHT_UTC.get(len(raw))
            if suffix is not None:
                return datetime.fromisoformat(raw + suffix), DateQuality.W3C
            dt = datetime.fromisoformat(raw)
            if dt.tzinfo is not UTC:  # fromisoformat returns UTC itself for Z and ±00:00
                dt = dt.astimezone(UTC)
            return dt, DateQuality.W3C
        if _LENIENT(raw) is not None:
            # Give fromisoformat its 'T' and 'Z'; the rest it reads as is, and a
            # missing zone yields a naive value, which the policy reads as UTC.
            dt = datetime.fromisoformat(f"{raw[:10]}T{raw[11:].upper()}")
            if dt.tzinfo is None:
                return dt.replace(tzinfo=UTC), DateQuality.NONSTANDARD
            return dt.astimezone(UTC), DateQuality.NONSTANDARD
    except (ValueError, OverflowError):  # OverflowError: year 1 or 9999 shifted out of range
        return _INVALID
    dt_822 = parse_rfc822(raw)
    return _INVALID if dt_822 is None else (dt_822, DateQuality.NONSTANDARD)


def parse_rfc822(raw: str) -> datetime | None:
    """Parse an RFC 822/1123 date (RSS ``pubDate``) into a UTC datetime.

    The zone is required: ``+hhmm``/``-hhmm`` or UT, UTC, GMT, Z and the US zone
    names. Without one the instant is unknown and the result is ``None``, as
    crawler-commons decides. The weekday, when present, is not checked against
    the date (feeds often get it wrong; the date itself is unambiguous).
    Two-digit years follow RFC 2822 §4.3: 00-49 → 20xx, 50-99 → 19xx.

    >>> parse_rfc822("Thu, 05 Jan 2017 13:34:51 +0100")
    datetime.datetime(2017, 1, 5, 12, 34, 51, tzinfo=datetime.timezone.utc)
    >>> parse_rfc822("05 Jan 17 13:34:55") is None
    True
    """
    m = _RFC822(raw)
    if m is None:
        return None
    weekday, day, month_name, year_s, hour, minute, second, zone = m.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None or (weekday is not None and weekday.lower() not in _WEEKDAYS):
        return None
    year = int(year_s)
    if len(year_s) == 2:
        year += 2000 if year < 50 else 1900
    elif len(year_s) == 3:
        year += 1900
    if zone[0] in "+-":
        oh, om = int(zone[1:3]), int(zone[3:5])
        if oh > 23 or om > 59:
            return None
        offset_minutes = oh * 60 + om
        if zone[0] == "-":
            offset_minutes = -offset_minutes
    else:
        named = _ZONE_MINUTES.get(zone.lower())
        if named is None:
            return None
        offset_minutes = named
    try:
        local = datetime(year, month, int(day), int(hour), int(minute), int(second or 0), 0, UTC)
        return local - timedelta(minutes=offset_minutes)
    except (ValueError, OverflowError):
        return None


def format_utc_py(dt: datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` in UTC.

    The fraction appears only when non-zero, with 6 digits (``isoformat`` style);
    this is the canonical form of the conformance corpus and of our output.
    Raises ``ValueError`` for a naive datetime, whose instant is unknown.

    >>> format_utc(datetime(2018, 12, 31, 23, 30, tzinfo=UTC))
    '2018-12-31T23:30:00Z'
    """
    if dt.tzinfo is not UTC:  # what parse_lastmod returns skips both calls
        if dt.utcoffset() is None:
            raise ValueError(f"naive datetime has no instant: {dt!r}")
        dt = dt.astimezone(UTC)
    # isoformat() of a UTC-aware datetime always ends in "+00:00".
    return dt.isoformat()[:-6] + "Z"


def format_utc_seconds_py(dt: datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SSZ`` in UTC: the output records' form.

    Always this one form, whole seconds (a fraction is dropped, truncated), for every
    date of a record in CSV and JSON Lines: pandas' ``parse_dates`` and
    ``pd.to_datetime(utc=True)`` then read a column as one format (a mix with and
    without a fraction stayed strings or raised). The state file keeps lastmods as
    whole epoch seconds too, so a URL's ``removed`` record carries the same lastmod as
    its ``new`` one. ``ValueError`` for a naive datetime, as ``format_utc``.

    >>> format_utc_seconds(datetime(2018, 12, 31, 23, 30, 5, 250000, tzinfo=UTC))
    '2018-12-31T23:30:05Z'
    """
    if dt.tzinfo is not UTC:
        if dt.utcoffset() is None:
            raise ValueError(f"naive datetime has no instant: {dt!r}")
        dt = dt.astimezone(UTC)
    return dt.isoformat(timespec="seconds")[:-6] + "Z"


# The compiled formatters give the same strings, several times faster.
format_utc: Callable[[datetime], str] = _cdates.format_utc if _cdates is not None else format_utc_py
format_utc_seconds: Callable[[datetime], str] = (
    _cdates.format_utc_seconds if _cdates is not None else format_utc_seconds_py
)
