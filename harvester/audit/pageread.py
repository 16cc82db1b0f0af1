"""One sampled page read as the lastmod audit reads it (issue 7), wherever it was fetched.

In: the first bytes of a page's body, its response headers, the sitemap lastmod of its
URL (epoch seconds, None: none) and when it was fetched. Out: a ``PageReading``: its
agreement with the lastmod (``agreement.compare``), its main-text fingerprint and the
date it gives itself, what a row of the state's ``samples`` table holds.

Who fetches: ``harvester audit`` (``run/verify.py``), and a run's coverage check
(``crawl/cover.py``), whose sampled listed pages are stored as the audit's samples when
the run has a state file, so the next audit does not fetch them again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from harvester.audit.agreement import Agreement, compare
from harvester.audit.pagedates import extract_signals

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["PageReading", "read_page"]


@dataclass(frozen=True, slots=True)
class PageReading:
    """What the audit keeps of one sampled page."""

    at: float  # when it was fetched (epoch seconds)
    agreement: Agreement  # its own dates against the sitemap lastmod
    fingerprint: int | None  # simhash of its main text (unsigned; None: no words)
    page_modified: int | None  # its first date signal (epoch seconds; None: none)


def read_page(
    body: bytes,
    headers: Mapping[str, str],
    lastmod: int | None,
    *,
    cap: int,
    fetched_at: datetime | None = None,
) -> PageReading:
    """Read the first ``cap`` bytes of ``body`` (fetched at ``fetched_at``, default now)
    against ``lastmod``. Never raises (``extract_signals`` is total)."""
    fetched = fetched_at or datetime.now(UTC)
    signals = extract_signals(body[:cap], headers, fetched_at=fetched, max_bytes=cap)
    sitemap_lastmod = None if lastmod is None else datetime.fromtimestamp(lastmod, UTC)
    modified = next((s.value for s in signals.signals()), None)
    return PageReading(
        fetched.timestamp(),
        compare(sitemap_lastmod, signals).overall,
        signals.fingerprint,
        None if modified is None else int(modified.timestamp()),
    )
