"""state.freshness: how long a remembered answer (tdmrep.json) is reused unasked (RFC 9111)."""

from __future__ import annotations

from email.utils import formatdate

from harvester.state.freshness import DEFAULT_LIFETIME, lifetime

NOW = 1_800_000_000.0
CAP = 604_800.0  # state.max_revisit_interval's default


def date(epoch: float) -> str:
    return formatdate(epoch, usegmt=True)


def test_no_store_and_no_cache_are_stale_at_once() -> None:
    assert lifetime({"Cache-Control": "no-cache"}, 200, NOW, CAP) == 0.0
    assert lifetime({"Cache-Control": "public, no-store, max-age=600"}, 200, NOW, CAP) == 0.0


def test_max_age_wins_over_expires_and_is_capped() -> None:
    headers = {"Cache-Control": "max-age=600", "Expires": date(NOW + 86400)}
    assert lifetime(headers, 200, NOW, CAP) == 600.0
    assert lifetime({"Cache-Control": "max-age=99999999"}, 200, NOW, CAP) == CAP
    assert lifetime({"Cache-Control": "max-age=soon"}, 200, NOW, CAP) == 0.0


def test_expires_counts_from_the_answers_date() -> None:
    headers = {"Expires": date(NOW + 7200), "Date": date(NOW + 3600)}
    assert lifetime(headers, 200, NOW, CAP) == 3600.0
    assert lifetime({"Expires": "0"}, 200, NOW, CAP) == 0.0  # unreadable: already expired
    assert lifetime({"Expires": date(NOW - 60)}, 200, NOW, CAP) == 0.0


def test_heuristic_is_a_tenth_of_the_last_modified_age() -> None:
    headers = {"Last-Modified": date(NOW - 10 * 86400)}
    assert lifetime(headers, 200, NOW, CAP) == 86400.0
    # A 304 that does not repeat it: the remembered one.
    assert lifetime({}, 304, NOW, CAP, last_modified=date(NOW - 20 * 86400)) == 2 * 86400.0


def test_without_freshness_information_the_default_capped() -> None:
    assert lifetime({}, 404, NOW, CAP) == DEFAULT_LIFETIME
    assert lifetime({}, 200, NOW, 86400.0) == 86400.0
    assert lifetime({"Last-Modified": date(NOW + 60)}, 200, NOW, CAP) == DEFAULT_LIFETIME


def test_a_status_not_heuristically_cacheable_is_asked_again() -> None:
    assert lifetime({}, 403, NOW, CAP) == 0.0
    assert lifetime({"Cache-Control": "max-age=600"}, 403, NOW, CAP) == 600.0
