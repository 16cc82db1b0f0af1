"""harvester.dates round trips: any W3C rendering of an instant parses back to that instant.

Datetimes span 1900-2100 with any offset within ±14:00 in whole minutes; the
W3C string is drawn in every lossless shape (seconds and fraction optional when
zero, fraction trimmed or zero-padded, Z / +00:00 / -00:00 for UTC).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

from hypothesis import example, given
from hypothesis import strategies as st

from harvester.dates import DateQuality, format_utc, parse_lastmod

OFFSETS = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
AWARE = st.datetimes(
    min_value=datetime(1900, 1, 1),
    max_value=datetime(2100, 12, 31, 23, 59, 59, 999_999),
    timezones=OFFSETS,
)


def _zone(d: datetime, data: st.DataObject) -> str:
    offset = d.utcoffset()
    assert offset is not None
    minutes = int(offset.total_seconds()) // 60
    if minutes == 0:
        return data.draw(st.sampled_from(["Z", "+00:00", "-00:00"]))
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{mins:02d}"


def _time(d: datetime, data: st.DataObject) -> str:
    """hh:mm[:ss[.s+]] of ``d``'s local time, dropping only what is zero."""
    text = f"{d.hour:02d}:{d.minute:02d}"
    if d.second or d.microsecond or data.draw(st.booleans(), label="seconds"):
        text += f":{d.second:02d}"
        if d.microsecond or data.draw(st.booleans(), label="zero fraction"):
            fraction = f"{d.microsecond:06d}"
            if data.draw(st.booleans(), label="trim fraction"):
                fraction = fraction.rstrip("0") or "0"
            # Digits beyond microseconds are truncated, so zeros there are lossless.
            fraction += "0" * data.draw(st.integers(0, 3), label="extra zeros")
            text += "." + fraction
    return text


def w3c_string(d: datetime, data: st.DataObject) -> str:
    """Render ``d`` (local fields plus offset) as a W3C Datetime, in a drawn shape."""
    return f"{d:%Y-%m-%d}T{_time(d, data)}{_zone(d, data)}"


@given(AWARE, st.data())
def test_w3c_string_parses_to_the_same_instant(d: datetime, data: st.DataObject) -> None:
    text = w3c_string(d, data)
    value, quality = parse_lastmod(text)
    assert quality is DateQuality.W3C, text
    assert value == d.astimezone(UTC), text  # aware comparison: same instant
    assert value is not None
    assert value.tzinfo is UTC


@given(AWARE)
@example(datetime(1900, 1, 1, tzinfo=timezone(timedelta(hours=14))))
@example(datetime(2100, 12, 31, 23, 59, 59, 999_999, tzinfo=timezone(timedelta(hours=-14))))
@example(datetime(2018, 1, 12, 1, 0, tzinfo=timezone(timedelta(hours=14))))
def test_format_utc_round_trips_through_parse_lastmod(d: datetime) -> None:
    text = format_utc(d)
    value, quality = parse_lastmod(text)
    assert (value, quality) == (d.astimezone(UTC), DateQuality.W3C)
    assert value is not None
    assert format_utc(value) == text


@given(st.dates(min_value=date(1900, 1, 1), max_value=date(2100, 12, 31)))
def test_reduced_precision_is_utc_midnight_of_the_first_day(day: date) -> None:
    midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
    assert parse_lastmod(day.isoformat()) == (midnight, DateQuality.W3C)
    assert parse_lastmod(f"{day:%Y-%m}") == (midnight.replace(day=1), DateQuality.W3C)
    assert parse_lastmod(f"{day:%Y}") == (midnight.replace(month=1, day=1), DateQuality.W3C)


@given(AWARE, st.data())
def test_unambiguous_deviations_parse_as_nonstandard(d: datetime, data: st.DataObject) -> None:
    day, time, zone = f"{d:%Y-%m-%d}", _time(d, data), _zone(d, data)
    separator = data.draw(st.sampled_from(["T", "t", " "]), label="separator")
    variants = [
        f"{day} {time}{zone}",  # RFC 3339 space separator
        f"{day}t{time}{zone.lower()}",  # lower-case t and z
        f"{day}{separator}{time}{zone.replace(':', '')}",  # basic offset (+hhmm)
    ]
    for text in variants:
        if text == f"{day}T{time}{zone}":  # e.g. basic offset of "Z" with 'T': strict
            continue
        assert parse_lastmod(text) == (d.astimezone(UTC), DateQuality.NONSTANDARD), text
    # Without a zone designator the local fields are read as UTC.
    assert parse_lastmod(f"{day}{separator}{time}") == (
        d.replace(tzinfo=UTC),
        DateQuality.NONSTANDARD,
    )


@given(st.text(max_size=40))
@example("2005-07-16T19:20:30+01:00\n")
@example("\u0662\u0660\u0660\u0665")
def test_parse_lastmod_never_raises_and_is_utc_or_invalid(raw: str) -> None:
    value, quality = parse_lastmod(raw)
    if value is None:
        assert quality is DateQuality.INVALID
    else:
        assert quality is not DateQuality.INVALID
        assert value.tzinfo is UTC
