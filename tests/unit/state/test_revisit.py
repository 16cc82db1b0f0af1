"""Adaptive revisit (issue 53 item 4): the interval rule, with explicit clock readings."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime

from harvester.state.revisit import (
    HEURISTIC,
    HISTORY,
    MIN_GAP,
    LateRevisit,
    Revisit,
    after,
    due,
    heuristic,
    late_after,
    late_due,
    overdue,
)

HOUR = 3600.0
DAY = 86400.0
WEEK = 7 * DAY


def test_a_first_read_is_due_on_the_next_run() -> None:
    first = after(None, "c", 1000.0, WEEK, news=False)
    assert first == Revisit(1000.0, 0.0, 0, "c", False)
    assert due(first, 1000.0 + HOUR, WEEK)


def test_unchanged_checks_double_the_interval_and_runs_between_are_skipped() -> None:
    """An hourly cron, first read at run 0: asked at runs 1, 3, 7, 14 (the last one due
    at 7/8 of its 8 hours); the runs between are skipped."""
    memory = after(None, "c", 0.0, WEEK, news=False)
    asked = []
    for run in range(1, 20):
        t = run * HOUR
        if due(memory, t, WEEK):
            asked.append(run)
            memory = after(memory, "n" if run < 5 else "s", t, WEEK, news=False)
    assert asked == [1, 3, 7, 14]
    assert memory.quiet == 4
    assert memory.interval == 2 * 7 * HOUR
    assert memory.history == "cnnss"


def test_the_cap_holds() -> None:
    memory = Revisit(0.0, 0.0, 3, "nnn")
    memory = after(memory, "n", 30 * DAY, WEEK, news=False)  # a month unasked
    assert memory.interval == WEEK
    assert not due(memory, 30 * DAY + 6 * DAY, WEEK)
    assert due(memory, 30 * DAY + WEEK, WEEK)
    # A smaller cap in the config applies to intervals stored under a larger one.
    assert due(memory, 30 * DAY + DAY, DAY)


def test_a_change_resets_the_interval_to_every_run() -> None:
    memory = Revisit(0.0, 4 * DAY, 4, "nnnn")
    changed = after(memory, "c", 4 * DAY, WEEK, news=False)
    assert (changed.interval, changed.quiet, changed.history) == (0.0, 0, "nnnnc")
    assert due(changed, 4 * DAY + 1.0, WEEK)


def test_a_news_sitemap_is_always_due() -> None:
    memory = Revisit(0.0, WEEK, 9, "n" * 9, news=True)
    assert due(memory, 1.0, WEEK)
    assert after(memory, "n", DAY, WEEK, news=memory.news).news


def test_a_quick_rerun_does_not_grow_the_interval() -> None:
    memory = after(None, "c", 0.0, WEEK, news=False)
    again = after(memory, "n", MIN_GAP / 2, WEEK, news=False)
    assert again.interval == 0.0  # still asked on every run
    assert due(again, MIN_GAP, WEEK)


def test_a_check_a_little_early_still_counts_as_due() -> None:
    memory = Revisit(0.0, 2 * DAY, 1, "n")
    assert due(memory, 2 * DAY - HOUR, WEEK)  # a run that reached the host an hour earlier
    assert not due(memory, DAY, WEEK)


def test_never_checked_is_due_and_overdue_and_history_is_bounded() -> None:
    assert due(Revisit(), 0.0, WEEK)
    assert not overdue(Revisit(), 0.0, WEEK)  # (the skip starts its clock: crawl.revisits)
    assert not overdue(Revisit(0.0, DAY, 1, "n"), DAY, WEEK)
    assert overdue(Revisit(0.0, DAY, 1, "n"), WEEK, WEEK)
    memory = Revisit(0.0, 0.0, 0, "c" * HISTORY)
    assert after(memory, "n", DAY, WEEK, news=False).history == "c" * (HISTORY - 1) + "n"


def test_a_first_read_waits_a_tenth_of_its_last_modified_age_at_most_the_cap() -> None:
    now = 1_800_000_000.0
    days_ago = "Mon, 06 Jan 2027 00:00:00 GMT"
    age = now - parsedate_to_datetime(days_ago).timestamp()
    assert heuristic(days_ago, now, WEEK) == HEURISTIC * age
    first = after(None, "c", now, WEEK, news=False, first=heuristic(days_ago, now, WEEK))
    assert first.interval == HEURISTIC * age
    assert not due(first, now + HOUR, WEEK)
    assert due(first, now + age * HEURISTIC, WEEK)
    assert heuristic("Mon, 01 Jan 2001 00:00:00 GMT", now, WEEK) == WEEK  # years: the cap
    # None, unreadable, in the future: no heuristic, due on the next run.
    for value in (None, "", "yesterday", "Sun, 01 Jan 2090 00:00:00 GMT"):
        assert heuristic(value, now, WEEK) == 0.0
    # A news sitemap is asked every run whatever its date; a check of a known list ignores it.
    assert after(None, "c", now, WEEK, news=True, first=WEEK).interval == 0.0
    assert after(first, "c", now + DAY, WEEK, news=False, first=WEEK).interval == 0.0
    # A list made minutes ago: due on the next run, however soon (a re-run).
    assert heuristic(format_datetime(datetime.fromtimestamp(now - 60, UTC), True), now, WEEK) == 0


def test_failed_late_attempts_back_off_doubling_up_to_the_cap() -> None:
    """An hourly cron, a host dead from run 1 on: late attempts at runs 1, 2, 4, 8, 15, ...
    (each waits twice the time since the one before it, due at 7/8 of that), until the
    cap; one that reaches the host clears it."""
    memory = LateRevisit()
    made = []
    for run in range(1, 60):
        t = run * HOUR
        if late_due(memory, t, DAY):
            made.append(run)
            memory = late_after(memory, False, t, DAY)
    assert made == [1, 2, 4, 8, 15, 28, 49]  # (after 28: 26 h, capped to a day)
    assert memory.failures == 7
    assert memory.interval == DAY
    assert late_after(memory, True, 60 * HOUR, DAY) == LateRevisit()
    # A re-run minutes later keeps the interval.
    again = late_after(memory, False, 49 * HOUR + 10, DAY)
    assert (again.interval, again.failures) == (DAY, 8)
