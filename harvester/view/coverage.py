"""The HTML run report's coverage section (issue 49): a sortable table, with no script.

In: each host report's ``coverage`` figures (``crawl/cover.py``, a run with
``--coverage K``), folded in by ``CoverageRows.add``; the run report's ``coverage``
summary. Out: ``section`` (the page's HTML: the spread of completeness, then one
row per host checked, a column per figure) and ``CSS``.

The page has no script (it opens offline and from a mail attachment), so sorting is
done in CSS: the table is written once per sort column, each copy with its own
anchor, and a column's header links to the copy sorted by it (``:target`` shows
it; with no anchor in the URL, the first copy: by completeness, lowest first).
That is why the rows kept are bounded (``KEEP``): the hosts file has them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harvester.view.charts import escape

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["COLUMNS", "CSS", "KEEP", "CoverageRows", "section"]

KEEP = 200  # hosts shown in the table (each sort writes it again)

# (key, header, lowest first): the sortable columns after ``host``; a share sorts with
# the worst first (completeness lowest, the listed-not-live shares highest).
COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("completeness", "completeness", True),
    ("pages", "pages found", False),
    ("sampled", "sampled", False),
    ("dead", "dead", False),
    ("redirect", "redirect", False),
    ("noindex", "noindex", False),
    ("canonical_elsewhere", "canonical elsewhere", False),
)
_SHARES = ("completeness", "dead", "redirect", "noindex", "canonical_elsewhere")

CSS = """
.covsort{display:none}.covsort:target{display:block;outline:none}
.covsorts:not(:has(.covsort:target)) .covsort:first-child{display:block}
th a{color:inherit}th[aria-sort] a{text-decoration:none}
"""


@dataclass(slots=True)
class CoverageRows:
    """The hosts checked (their figures, the first ``KEEP``), and how many were."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    checked: int = 0
    skipped: int = 0

    def add(self, host: str, figures: Mapping[str, Any] | None) -> None:
        """Fold in one host's ``coverage`` figures (None: the check was off for it)."""
        if not isinstance(figures, dict):
            return
        if "skipped" in figures:
            self.skipped += 1
            return
        self.checked += 1
        if len(self.rows) >= KEEP:
            return
        done = figures.get("completeness") or {}
        shares = figures.get("listed_not_live") or {}
        row: dict[str, Any] = {
            "host": host,
            "completeness": done.get("share"),
            "pages": done.get("of"),
            "sampled": figures.get("sampled"),
        }
        for name in _SHARES[1:]:
            row[name] = (shares.get(name) or {}).get("share")
        self.rows.append(row)


def _cell(key: str, value: Any) -> str:
    if value is None:
        return '<td class="n empty">n/a</td>'
    text = f"{value:.0%}" if key in _SHARES else f"{value:,}"
    return f'<td class="n">{escape(text)}</td>'


def _table(rows: list[dict[str, Any]], by: str) -> str:
    """One copy of the table, sorted by column ``by`` (``host``, or a ``COLUMNS`` key)."""
    heads = [("host", "host", True), *COLUMNS]
    ths = []
    for key, title, _ in heads:
        cls = "" if key == "host" else ' class="n"'
        sort = ' aria-sort="ascending"' if key == by else ""
        ths.append(f'<th{cls}{sort}><a href="#cov-by-{key}">{escape(title)}</a></th>')
    body = "".join(
        f"<tr><td>{escape(str(r['host']))}</td>"
        + "".join(_cell(key, r[key]) for key, _, _ in COLUMNS)
        + "</tr>"
        for r in _sorted(rows, by)
    )
    return (
        f'<div class="covsort scroll" id="cov-by-{by}"><table>'
        f"<tr>{''.join(ths)}</tr>{body}</table></div>"
    )


def _sorted(rows: list[dict[str, Any]], by: str) -> list[dict[str, Any]]:
    """``rows`` by column ``by`` (its direction in ``COLUMNS``), n/a last, then by host."""
    if by == "host":
        return sorted(rows, key=lambda r: str(r["host"]))
    lowest_first = next(low for key, _, low in COLUMNS if key == by)
    sign = 1 if lowest_first else -1
    return sorted(rows, key=lambda r: (r[by] is None, sign * (r[by] or 0), str(r["host"])))


def _spread(summary: Mapping[str, Any] | None) -> str:
    """The run report's spread of completeness as one sentence."""
    done = (summary or {}).get("completeness") or {}
    if not done:
        return ""
    names = (("min", "min"), ("q1", "Q1"), ("median", "median"), ("q3", "Q3"), ("max", "max"))
    parts = ", ".join(f"{name} {done[key]:.0%}" for key, name in names if key in done)
    return f'<p id="coverage-spread">Completeness across hosts: {escape(parts)}.</p>'


def section(rows: CoverageRows, summary: Mapping[str, Any] | None) -> str:
    """The page's coverage section; "" when no host was checked nor skipped."""
    if not rows.checked and not rows.skipped:
        return ""
    head = (
        f'<h2 id="coverage">Sitemap coverage ({rows.checked:,} hosts checked,'
        f" {rows.skipped:,} skipped)</h2><p>Completeness: the share of the pages found by"
        " links that the sitemaps list (a lower bound from a sample). dead, redirect,"
        " noindex, canonical elsewhere: shares of the sampled listed URLs. A column's"
        " header sorts by it.</p>"
    )
    more = ""
    if rows.checked > len(rows.rows):
        more = f"<p>The first {len(rows.rows):,} hosts are shown (all in the hosts file).</p>"
    if not rows.rows:
        return head + _spread(summary)
    # The first copy is the one shown without an anchor: by completeness.
    order = ["completeness", "host", *(key for key, _, _ in COLUMNS[1:])]
    tables = "".join(_table(rows.rows, key) for key in order)
    return f'{head}{_spread(summary)}{more}<div class="covsorts">{tables}</div>'
