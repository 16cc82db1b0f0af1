"""Lastmod audit, part 4: the trust score of a host, across runs (issue 7, issue 30).

In: per sampled URL and pair of audits, whether lastmod moved and whether the page's
content changed; how often the pages' own dates agreed with lastmod; the host's last
distribution verdict (``distribution.py``). Out: ``score_trust(...)`` → ``TrustScore``:
did lastmod move when the content changed (recall) and only then (precision), do the
pages' dates agree? ``trusted`` / ``untrusted`` / ``unknown``, with the evidence. Pure.

Example::

    score = score_trust(pairs, SignalAgreement(agree=9, disagree=1), verdict="plausible")
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from harvester.audit.verdict import Verdict

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["SignalAgreement", "TrustLevel", "TrustScore", "TrustThresholds", "score_trust"]


class TrustLevel(StrEnum):
    """Whether lastmod may be used as a change hint for a host."""

    TRUSTED = "trusted"
    UNTRUSTED = "untrusted"
    UNKNOWN = "unknown"  # not enough evidence either way (yet)


@dataclass(frozen=True, slots=True)
class SignalAgreement:
    """Sampled URLs whose page dates agree with the sitemap lastmod, or not, or have none."""

    agree: int = 0
    disagree: int = 0
    no_signal: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustThresholds:
    """Minimum evidence and rates for ``score_trust``.

    Recall guards the costly failure (a changed page skipped because lastmod
    stood still), so it is strict. Precision only costs fetches, and the
    fingerprint ignores navigation and boilerplate that a CMS may legitimately
    bump lastmod for, so it is lenient. Page dates are optional evidence:
    many sites publish none.
    """

    min_content_changes: int = 5  # sampled URLs whose content changed (for recall)
    min_lastmod_moves: int = 5  # sampled URLs whose lastmod moved (for precision)
    min_compared: int = 10  # sampled URLs with a page date (agree + disagree)
    recall: float = 0.8
    precision: float = 0.6
    agreement: float = 0.7
    # Page dates agreeing this often (on min_compared pages or more) are evidence enough
    # by themselves: a page's own dateModified is an independent signal, and a site
    # whose pages all say what its sitemap says would otherwise wait for several runs of
    # observed content changes. Change tracking keeps checking it on every audit.
    dates_alone: float = 0.9


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustScore:
    """The trust level, why, and the evidence (rates are None without data)."""

    level: TrustLevel
    reason: str
    verdict: str
    both_changed: int  # lastmod moved and content changed
    content_only: int  # content changed, lastmod did not (a miss)
    lastmod_only: int  # lastmod moved, content did not (a false alarm)
    neither: int
    recall: float | None
    precision: float | None
    agree: int
    disagree: int
    no_signal: int
    agreement_rate: float | None

    def as_dict(self) -> dict[str, object]:
        """Return the score and evidence as a JSON-ready dict."""
        d = asdict(self)
        d["level"] = str(self.level)
        return d


def score_trust(
    pairs: Iterable[tuple[bool, bool]],
    agreement: SignalAgreement,
    *,
    verdict: Verdict | str,
    thresholds: TrustThresholds | None = None,
) -> TrustScore:
    """Score a host from ``(lastmod_changed, content_changed)`` per sampled URL and run pair.

    ``trusted`` needs a ``plausible`` distribution and either page dates that agree
    with lastmod on ``dates_alone`` of at least ``min_compared`` sampled pages, or
    recall and precision each measured on enough URLs and above threshold (with
    page-date agreement above threshold when enough sampled pages carry a date).
    ``untrusted`` when the distribution is not plausible or any rate measured on
    enough URLs is below threshold. Otherwise ``unknown``. Re-run every audit:
    generators change.

    >>> score_trust([(True, True)] * 5 + [(False, False)] * 5, SignalAgreement(),
    ...             verdict="plausible").level
    <TrustLevel.TRUSTED: 'trusted'>
    """
    t = thresholds or TrustThresholds()
    tp, fn, fp, neither = _count(pairs)
    compared = agreement.agree + agreement.disagree
    recall = round(tp / (tp + fn), 6) if tp + fn else None
    precision = round(tp / (tp + fp), 6) if tp + fp else None
    agree_rate = round(agreement.agree / compared, 6) if compared else None
    failures, missing = _checks(
        str(verdict), t, (recall, tp + fn), (precision, tp + fp), (agree_rate, compared)
    )
    dates_suffice = (
        agree_rate is not None and compared >= t.min_compared and agree_rate >= t.dates_alone
    )
    if failures:
        level, reason = TrustLevel.UNTRUSTED, "; ".join(failures)
    elif dates_suffice and missing:
        level = TrustLevel.TRUSTED
        reason = (
            f"page dates agree with lastmod on {agree_rate:.0%} of {compared} pages"
            f" (change tracking: {', '.join(missing)})"
        )
    elif missing:
        level, reason = TrustLevel.UNKNOWN, "not enough evidence: " + ", ".join(missing)
    else:
        level, reason = TrustLevel.TRUSTED, "lastmod moved with the content"
    return TrustScore(
        level=level,
        reason=reason,
        verdict=str(verdict),
        both_changed=tp,
        content_only=fn,
        lastmod_only=fp,
        neither=neither,
        recall=recall,
        precision=precision,
        agree=agreement.agree,
        disagree=agreement.disagree,
        no_signal=agreement.no_signal,
        agreement_rate=agree_rate,
    )


def _count(pairs: Iterable[tuple[bool, bool]]) -> tuple[int, int, int, int]:
    """(both changed, content only, lastmod only, neither) of ``(lastmod, content)`` pairs."""
    counts = {(True, True): 0, (False, True): 0, (True, False): 0, (False, False): 0}
    for lastmod_changed, content_changed in pairs:
        counts[(bool(lastmod_changed), bool(content_changed))] += 1
    return (
        counts[(True, True)],
        counts[(False, True)],
        counts[(True, False)],
        counts[(False, False)],
    )


def _checks(
    verdict: str,
    t: TrustThresholds,
    recall: tuple[float | None, int],
    precision: tuple[float | None, int],
    agreement: tuple[float | None, int],
) -> tuple[list[str], list[str]]:
    """What fails ``t`` and what is missing for a verdict: each rate with the number of
    URLs (or pages) it was measured on (``(None, n)``: none)."""
    failures: list[str] = []
    missing: list[str] = []
    if verdict != Verdict.PLAUSIBLE:
        failures.append(f"distribution verdict is {verdict}")
    for label, (rate, n), least, threshold, what in (
        ("recall", recall, t.min_content_changes, t.recall, "content changes"),
        ("precision", precision, t.min_lastmod_moves, t.precision, "lastmod moves"),
    ):
        if rate is not None and n >= least:
            if rate < threshold:
                failures.append(f"{label} {rate:.0%} < {threshold:.0%}")
        else:
            missing.append(f"{n}/{least} {what}")
    rate, compared = agreement
    if rate is not None and compared >= t.min_compared and rate < t.agreement:
        failures.append(f"page dates agree {rate:.0%} < {t.agreement:.0%}")
    return failures, missing
