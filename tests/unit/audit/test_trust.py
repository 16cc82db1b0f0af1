"""The trust score across audits: recall, precision, page dates (``audit.trust.score_trust``)."""

from __future__ import annotations

import orjson
import pytest

from harvester.audit.trust import SignalAgreement, TrustLevel, TrustThresholds, score_trust
from harvester.audit.verdict import Verdict


def test_honest_host_is_trusted() -> None:
    pairs = [(True, True)] * 8 + [(False, False)] * 20 + [(True, False)] * 2
    s = score_trust(pairs, SignalAgreement(agree=12, disagree=1, no_signal=3), verdict="plausible")
    assert s.level is TrustLevel.TRUSTED
    assert s.recall == 1.0
    assert s.precision == pytest.approx(0.8)
    assert s.agreement_rate == pytest.approx(12 / 13)


def test_lastmod_that_never_moves_while_content_changes_is_untrusted() -> None:
    pairs = [(False, True)] * 6 + [(False, False)] * 4
    s = score_trust(pairs, SignalAgreement(), verdict=Verdict.PLAUSIBLE)
    assert s.level is TrustLevel.UNTRUSTED
    assert s.recall == 0.0
    assert s.precision is None
    assert "recall 0%" in s.reason


def test_lastmod_that_moves_every_run_without_content_change_is_untrusted() -> None:
    s = score_trust([(True, False)] * 10, SignalAgreement(), verdict="plausible")
    assert s.level is TrustLevel.UNTRUSTED
    assert s.precision == 0.0
    assert "precision" in s.reason


def test_too_little_evidence_is_unknown_and_says_what_is_missing() -> None:
    s = score_trust([(True, True)] * 3, SignalAgreement(agree=9), verdict="plausible")
    assert s.level is TrustLevel.UNKNOWN
    assert "3/5 content changes" in s.reason
    assert "3/5 lastmod moves" in s.reason
    assert score_trust([], SignalAgreement(), verdict="plausible").level is TrustLevel.UNKNOWN


def test_page_dates_that_agree_on_enough_pages_are_evidence_enough() -> None:
    """Issue 30 item 8: an honest site whose pages' dateModified agrees with every sampled
    lastmod was left ``unknown`` until five content changes had been observed."""
    s = score_trust([(True, True)] * 4, SignalAgreement(agree=20), verdict="plausible")
    assert s.level is TrustLevel.TRUSTED
    assert "page dates agree with lastmod on 100% of 20 pages" in s.reason
    assert "4/5 content changes" in s.reason  # change tracking goes on
    nine_of_ten = SignalAgreement(agree=9, disagree=1, no_signal=5)
    assert score_trust([], nine_of_ten, verdict="plausible").level is TrustLevel.TRUSTED
    eight_of_ten = SignalAgreement(agree=8, disagree=2)
    assert score_trust([], eight_of_ten, verdict="plausible").level is TrustLevel.UNKNOWN
    # Not alone against measured misses, nor with a distribution that is not plausible.
    misses = [(False, True)] * 5
    assert score_trust(misses, SignalAgreement(agree=20), verdict="plausible").level is (
        TrustLevel.UNTRUSTED
    )
    assert score_trust([], SignalAgreement(agree=20), verdict="constant").level is (
        TrustLevel.UNTRUSTED
    )


def test_perfect_evidence_does_not_trust_a_distribution_that_is_not_plausible() -> None:
    pairs = [(True, True)] * 10
    for verdict in ("absent", "generation_time", "constant", "future"):
        s = score_trust(pairs, SignalAgreement(agree=10), verdict=verdict)
        assert s.level is TrustLevel.UNTRUSTED
        assert verdict in s.reason


def test_page_dates_disagreeing_make_it_untrusted_only_with_enough_pages() -> None:
    pairs = [(True, True)] * 10
    many = score_trust(pairs, SignalAgreement(agree=3, disagree=7), verdict="plausible")
    assert many.level is TrustLevel.UNTRUSTED
    assert "page dates agree 30%" in many.reason
    few = score_trust(pairs, SignalAgreement(agree=1, disagree=3), verdict="plausible")
    assert few.level is TrustLevel.TRUSTED


def test_trust_thresholds_are_configurable_and_score_is_json_ready() -> None:
    strict = TrustThresholds(min_content_changes=20)
    s = score_trust([(True, True)] * 10, SignalAgreement(), verdict="plausible", thresholds=strict)
    assert s.level is TrustLevel.UNKNOWN
    d = orjson.loads(orjson.dumps(s.as_dict()))
    assert d["level"] == "unknown"
    assert d["both_changed"] == 10
    assert d["agreement_rate"] is None
