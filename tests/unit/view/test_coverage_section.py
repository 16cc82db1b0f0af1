"""view/coverage.py: the report page's coverage section, sorted in CSS (one copy of the
table per column), values escaped, rows bounded."""

from __future__ import annotations

import re

from harvester.crawl.cover import OUTCOMES, share
from harvester.view import coverage
from harvester.view.coverage import CoverageRows, section


def _figures(done: int, of: int, dead: int, sampled: int) -> dict[str, object]:
    return {
        "completeness": share(done, of),
        "sampled": sampled,
        "listed_not_live": {n: share(dead if n == "dead" else 0, sampled) for n in OUTCOMES},
    }


def _order(html: str, by: str) -> list[str]:
    """The hosts in the copy sorted by ``by``, in page order."""
    copy = html.split(f'id="cov-by-{by}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr><td>([^<]*)</td>", copy)


def test_each_column_has_its_sorted_copy_worst_first() -> None:
    rows = CoverageRows()
    rows.add("b.example", _figures(9, 10, 0, 10))
    rows.add("a.example", _figures(5, 10, 3, 10))
    rows.add("c.example", _figures(0, 0, 1, 10))  # links found nothing: completeness n/a
    rows.add("d.example", {"skipped": "no sitemap read"})
    rows.add("e.example", None)  # the check was off
    html = section(rows, {"completeness": {"min": 0.5, "median": 0.7, "max": 0.9}})
    assert "3 hosts checked, 1 skipped" in html
    assert _order(html, "completeness") == ["a.example", "b.example", "c.example"]
    assert _order(html, "dead") == ["a.example", "c.example", "b.example"]
    assert _order(html, "host") == ["a.example", "b.example", "c.example"]
    ids = re.findall(r'class="covsort scroll" id="cov-by-([a-z_]+)"', html)
    assert ids[0] == "completeness"  # the copy shown without an anchor
    assert sorted(ids) == sorted(["host", *(key for key, _, _ in coverage.COLUMNS)])
    assert "n/a" in html
    assert "min 50%, median 70%, max 90%" in html


def test_values_are_escaped_and_rows_bounded() -> None:
    rows = CoverageRows()
    for i in range(coverage.KEEP + 5):
        rows.add(f"<b>{i}</b>.example", _figures(1, 2, 0, 2))
    html = section(rows, None)
    assert "<b>" not in html
    assert "&lt;b&gt;0&lt;/b&gt;.example" in html
    assert rows.checked == coverage.KEEP + 5
    assert len(rows.rows) == coverage.KEEP
    assert f"The first {coverage.KEEP:,} hosts are shown" in html


def test_no_section_without_the_check() -> None:
    assert section(CoverageRows(), None) == ""


def test_the_page_carries_the_section_and_its_css() -> None:
    from harvester.view.page import render_page
    from harvester.view.summary import RunSummary

    s = RunSummary({"hosts_done": 1, "coverage": {"completeness": {"median": 0.5}}}, "h.jsonl")
    s.add_host(1, {"host": "x.example", "urls": 3, "coverage": _figures(1, 2, 0, 2)}, "{}")
    page = render_page(s)
    assert '<h2 id="coverage">' in page
    assert ".covsort{display:none}" in page
    assert "median 50%" in page
    assert "<script" not in page
