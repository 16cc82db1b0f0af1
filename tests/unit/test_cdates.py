"""The compiled lastmod parse and format (harvester/_cdates.pyx) agree with the Python path.

``w3c`` may decline any string (None: the Python path decides it), but where it
answers, the answer must be the Python path's ``(datetime, W3C)``; and it must
answer for the shapes it exists for, or the speed-up silently vanishes.
``format_utc`` must give the Python path's string for every aware datetime.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harvester import dates
from harvester.dates import DateQuality, format_utc_py, parse_lastmod, parse_lastmod_py
from tests.compiled import compiled_module

cdates = compiled_module("_cdates")


def test_the_reader_uses_the_compiled_one() -> None:
    # What these tests compare with the Python path is what the reader and sinks call.
    assert dates.w3c_common is cdates.w3c
    assert dates.format_utc is cdates.format_utc


def check(raw: str) -> None:
    fast = cdates.w3c(raw)
    if fast is None:
        return
    value, quality = parse_lastmod_py(raw)
    assert quality is DateQuality.W3C, raw
    assert fast == value, raw
    assert fast.tzinfo is UTC, raw
    assert parse_lastmod(raw) == (value, quality)


@pytest.mark.parametrize(
    "raw",
    [
        "2024-05-01",
        "2024-05-01T10:20Z",
        "2024-05-01T10:20:30Z",
        "2024-05-01T10:20+02:00",
        "2024-05-01T10:20:30-05:00",
        "2024-02-29T23:59:59-00:00",
        "2000-02-29",
        "2024-12-31T23:30:00-05:00",  # rolls into the next year
        "2025-01-01T00:30:00+05:30",  # and back into the last one
        "0002-01-01T00:00+01:00",  # into year 1
    ],
)
def test_the_usual_shapes_are_answered_and_equal(raw: str) -> None:
    assert cdates.w3c(raw) is not None
    check(raw)


@pytest.mark.parametrize(
    "raw",
    [
        "2023-02-29",  # impossible: the Python path says INVALID
        "1900-02-29",
        "2024-04-31",
        "2024-13-01",
        "2024-00-10",
        "2024-05-00",
        "2024-05-01T24:00:00Z",
        "2024-05-01T10:60Z",
        "2024-05-01T10:20:60Z",
        "2024-05-01T10:20+24:00",
        "2024-05-01T10:20+01:60",
        "2024-05-01T10:20:30.5Z",  # a fraction: left to Python
        "2024",
        "2024-05",
        "2024-05-01 10:20:30Z",  # lenient forms
        "2024-05-01t10:20:30z",
        "2024-05-01T10:20:30",
        "2024-05-01T10:20:30+0100",
        "0001-01-01T00:00+01:00",  # years 1 and 9999 can leave the range
        "9999-12-31T23:59-01:00",
        "0000-01-01",
        "\uff12\uff10\uff12\uff14-05-01",  # other scripts' digits (fullwidth)
        "2024-05-01T10:20:30Z ",
        "Thu, 05 Jan 2017 13:34:51 +0100",
    ],
)
def test_other_strings_are_left_to_python(raw: str) -> None:
    assert cdates.w3c(raw) is None
    assert parse_lastmod(raw) == parse_lastmod_py(raw)


def test_every_day_of_leap_and_common_years() -> None:
    for year in (2, 1900, 1999, 2000, 2023, 2024, 9998):
        day = datetime(year, 1, 1)
        while day.year == year:
            for offset in ("Z", "+14:00", "-12:00"):
                check(day.strftime("%Y-%m-%d"))
                check(day.strftime("%Y-%m-%dT00:00") + offset)
                check(day.strftime("%Y-%m-%dT23:59:59") + offset)
            day += timedelta(days=1)


DIGIT = st.sampled_from("0123456789")
CHAR = st.sampled_from("0123456789-:TZ+.tz ")


@st.composite
def shaped(draw: st.DrawFn) -> str:
    """Strings of the handled lengths, mostly digits where digits go, sometimes not."""
    template = draw(
        st.sampled_from(
            [
                "dddd-dd-dd",
                "dddd-dd-ddTdd:ddZ",
                "dddd-dd-ddTdd:dd:ddZ",
                "dddd-dd-ddTdd:dd+dd:dd",
                "dddd-dd-ddTdd:dd:dd-dd:dd",
            ]
        )
    )
    out = []
    for ch in template:
        if draw(st.integers(0, 30)) == 0:
            out.append(draw(CHAR))
        elif ch == "d":
            out.append(draw(DIGIT))
        else:
            out.append(ch)
    return "".join(out)


@settings(max_examples=3000, deadline=None)
@given(st.one_of(shaped(), st.text(alphabet="0123456789-:TZ+.", max_size=26)))
@example("2024-05-01T10:20:30+23:59")
@example("1970-01-01T00:00:00+00:01")
def test_generated_strings_agree(raw: str) -> None:
    check(raw)
    assert parse_lastmod(raw) == parse_lastmod_py(raw)


@settings(max_examples=2000, deadline=None)
@given(
    st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    ),
    st.integers(-23 * 60, 23 * 60),
)
def test_format_utc_agrees(when: datetime, offset_minutes: int) -> None:
    assert cdates.format_utc(when) == format_utc_py(when)
    local = when.astimezone(timezone(timedelta(minutes=offset_minutes)))
    assert cdates.format_utc(local) == format_utc_py(local)


def test_format_utc_refuses_a_naive_datetime_like_python() -> None:
    naive = datetime(2024, 5, 1, 10, 0)
    with pytest.raises(ValueError, match="naive datetime") as fast:
        cdates.format_utc(naive)
    with pytest.raises(ValueError, match="naive datetime") as slow:
        format_utc_py(naive)
    assert str(fast.value) == str(slow.value)
