"""Lastmod audit, part 2: does a sitemap lastmod agree with the page's own dates? (issue 7)

Pure. In: a sitemap entry's lastmod (aware, or None) and the ``PageSignals``
that ``pagedates.extract_signals`` found on its page. Out: a ``Comparison``, an
``Agreement`` (``agree`` / ``disagree`` / ``no_signal``) per signal and
overall, which the sampled verification (``harvester.run.verify``) counts per host for
the trust score.

Its own module: the rule (a tolerance, date-only values by the day, any one
signal agreeing is enough) judges the signals; finding them in HTML is
``pagedates.py``'s.

Example::

    result = compare(entry.lastmod, extract_signals(body, response.headers))
    result.overall            # Agreement.AGREE / DISAGREE / NO_SIGNAL
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from harvester.audit.pagedates import SIGNAL_NAMES

if TYPE_CHECKING:
    from datetime import datetime

    from harvester.audit.pagedates import PageSignals, Signal

__all__ = ["DEFAULT_AGREEMENT_TOLERANCE", "Agreement", "Comparison", "compare"]

# A page date agrees with the sitemap lastmod within this. Both usually come
# from the same CMS field, but some generators round to the minute and a save
# may write them seconds apart; a time-zone bug (the smallest real offset is
# 30 min) must still disagree.
DEFAULT_AGREEMENT_TOLERANCE = timedelta(minutes=5)


class Agreement(StrEnum):
    """How a page signal relates to the sitemap lastmod."""

    AGREE = "agree"
    DISAGREE = "disagree"
    NO_SIGNAL = "no_signal"


@dataclass(frozen=True, slots=True)
class Comparison:
    """Agreement per signal name and overall (``agree`` if any signal agrees)."""

    overall: Agreement
    per_signal: dict[str, Agreement] = field(default_factory=dict)


def compare(
    sitemap_lastmod: datetime | None,
    signals: PageSignals,
    tolerance: timedelta = DEFAULT_AGREEMENT_TOLERANCE,
    *,
    sitemap_date_only: bool = False,
) -> Comparison:
    """Compare a sitemap lastmod with each page signal, and overall.

    A signal agrees within ``tolerance``; when either side is date-only it
    agrees when the UTC days are at most one apart (the site's own time zone
    may have put the day on either side). Overall: ``agree`` when any signal
    agrees (page plugins differ in freshness; one matching field shows that
    lastmod is the CMS's modification time), ``disagree`` when some signal
    exists and none agrees, ``no_signal`` when there is none or no lastmod.
    """
    per: dict[str, Agreement] = {}
    for name in SIGNAL_NAMES:
        s: Signal | None = getattr(signals, name)
        if s is None or sitemap_lastmod is None:
            per[name] = Agreement.NO_SIGNAL
        elif s.date_only or sitemap_date_only:
            days = abs(s.value.toordinal() - sitemap_lastmod.astimezone(UTC).toordinal())
            per[name] = Agreement.AGREE if days <= 1 else Agreement.DISAGREE
        else:
            ok = abs(s.value - sitemap_lastmod) <= tolerance
            per[name] = Agreement.AGREE if ok else Agreement.DISAGREE
    values = set(per.values())
    if Agreement.AGREE in values:
        overall = Agreement.AGREE
    elif Agreement.DISAGREE in values:
        overall = Agreement.DISAGREE
    else:
        overall = Agreement.NO_SIGNAL
    return Comparison(overall, per)
