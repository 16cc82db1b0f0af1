"""Every outcome a sitemap node can have is drawn with its own mark, none as ``?``."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from harvester.view.tree import render_tree, tree_data


def node(url: str, **kw: Any) -> dict[str, Any]:
    base = {"url": url, "parent": None, "source": "robots", "depth": 0, "kind": "urlset"}
    return base | {"urls": 1, "bytes": 10, "status": 200, "outcome": "ok", "error": None} | kw


def report(*nodes: dict[str, Any]) -> dict[str, Any]:
    log = {"robots": {"url": "https://e.com/robots.txt", "status": 200}, "sitemaps": list(nodes)}
    return {"host": "e.com", "urls": 1, "failures": [], "sitemap_log": log}


# The sitemap log's outcomes (crawl/sitemaps.py) and what a read document can come to
# (ReadResult.status: "error" is an HTML page where a listed sitemap should be).
OUTCOMES = {
    "ok": "✓",
    "partial": "!",
    "failed": "✗",
    "error": "✗",
    "missed": "·",
    "not_modified": "=",
    "refused": "✗",
    "skipped": "-",
}


@pytest.mark.parametrize(("outcome", "mark"), sorted(OUTCOMES.items()))
def test_each_outcome_has_its_mark(outcome: str, mark: str) -> None:
    buf = io.StringIO()
    data = tree_data(report(node("https://e.com/s.xml", outcome=outcome)))
    Console(file=buf, width=300, color_system=None).print(render_tree(data))
    line = next(line for line in buf.getvalue().splitlines() if "s.xml" in line)
    assert line.split()[1] == mark, line


def test_an_html_page_listed_as_sitemap_is_drawn_failed_with_its_error() -> None:
    buf = io.StringIO()
    page = node(
        "https://e.com/page.xml",
        kind=None,
        outcome="error",
        error="not_a_sitemap",
        message="an HTML page, not a sitemap",
    )
    Console(file=buf, width=300, color_system=None).print(render_tree(tree_data(report(page))))
    assert "✗ [?] https://e.com/page.xml  not_a_sitemap 200: an HTML page" in buf.getvalue()
