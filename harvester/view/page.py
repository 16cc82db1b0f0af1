"""The HTML run report: one self-contained page from a ``RunSummary`` (summary.py).

In: a ``RunSummary``. Out: the page as text: inline CSS and inline SVG charts
(charts.py), no script, no font, no external asset (it opens offline and from
a mail attachment). Sections: the run's totals, failures by class (bars), URLs
per host (a distribution), lastmod over time (a histogram), the slowest and
largest hosts, and the failed hosts, each linked to its own report line shown
further down (anchor ``#line-N``, N its line in the hosts file).

Host names, URLs, failure messages and classes come from the web (a sitemap
can name anything), so every value goes through ``charts.escape``.

Usage::

    Path("report.html").write_text(render_page(read_summary("out.report.json")))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvester.view.charts import bars, columns, escape
from harvester.view.tree import human_bytes

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvester.view.summary import RunSummary

__all__ = ["render_page"]

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1000px;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse}td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.totals td:first-child{font-weight:600}
svg{display:block;margin:.5em 0;font-size:12px}svg .bar{fill:#3b6fb6}
pre{white-space:pre-wrap;word-break:break-all;background:#f6f6f6;padding:.5em;font-size:12px}
pre:target{outline:2px solid #c33}.empty{color:#777}.bad{color:#b22}
"""


def _row(*cells: str, numeric: tuple[int, ...] = ()) -> str:
    tds = "".join(
        f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(cells)
    )
    return f"<tr>{tds}</tr>"


def _totals(s: RunSummary) -> str:
    run = s.run
    total = run.get("hosts_total")
    status = (
        "complete"
        if run.get("complete")
        else "interrupted"
        if run.get("interrupted")
        else "incomplete"
    )
    rows = [
        ("status", status),
        ("started", str(run.get("started") or "?")),
        ("finished", str(run.get("finished") or "?")),
        (
            "hosts",
            f"{run.get('hosts_done', 0):,} done" + ("" if total is None else f" of {total:,}"),
        ),
        ("hosts failed", f"{run.get('hosts_failed', 0):,}"),
        ("hosts deferred", f"{run.get('hosts_deferred', 0):,}"),
        ("URLs", f"{run.get('urls', 0):,}"),
        (
            "sitemaps",
            f"{run.get('sitemaps_fetched', 0):,} fetched, {run.get('sitemaps_failed', 0):,} failed",
        ),
        ("downloaded", human_bytes(int(run.get("bytes") or 0))),
        ("seconds", f"{float(run.get('seconds') or 0):,.1f}"),
        ("workers", str(run.get("workers", ""))),
    ]
    body = "".join(
        _row(escape(k), f'<span id="total-{k.replace(" ", "-")}">{escape(v)}</span>')
        for k, v in rows
    )
    return f'<table class="totals">{body}</table>'


def _hosts_table(title: str, head: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    if not rows:
        return f'<h2>{escape(title)}</h2><p class="empty">No hosts.</p>'
    ths = "".join(f'<th class="n">{h}</th>' if i else f"<th>{h}</th>" for i, h in enumerate(head))
    body = "".join(_row(*r, numeric=tuple(range(1, len(r)))) for r in rows)
    return f"<h2>{escape(title)}</h2><table><tr>{ths}</tr>{body}</table>"


def _classes(classes: dict[str, int]) -> str:
    return ", ".join(f"{k} {n:,}" for k, n in sorted(classes.items()))


def _failed(s: RunSummary) -> str:
    if not s.failed:
        return '<h2 id="failed">Failed hosts</h2><p class="empty">No host failed.</p>'
    items = "".join(
        f'<li><a href="#line-{f.line}">{escape(f.host)}</a> '
        f'<span class="bad">{escape(_classes(f.classes))}</span>'
        f" {escape(f.first)}</li>"
        for f in s.failed
    )
    more = ""
    if s.failed_total > len(s.failed):
        more = f"<p>… and {s.failed_total - len(s.failed):,} more (see the hosts file).</p>"
    lines = "".join(
        f'<h3>{escape(f.host)} (line {f.line})</h3><pre id="line-{f.line}">{escape(f.text)}</pre>'
        for f in s.failed
    )
    where = escape(s.hosts_report or "?")
    return (
        f'<h2 id="failed">Failed hosts ({s.failed_total:,})</h2><ul>{items}</ul>{more}'
        f"<h2>Their report lines ({where})</h2>{lines}"
    )


def render_page(s: RunSummary, *, title: str = "harvester run report") -> str:
    """The whole page (see the module docstring)."""
    by_class = sorted(
        ((str(k), float(v)) for k, v in (s.run.get("failures_by_class") or {}).items()),
        key=lambda kv: (-kv[1], kv[0]),
    )
    slowest = [
        (escape(host), f"{seconds:,.2f}") for seconds, host in sorted(s.slowest, reverse=True)
    ]
    largest = [
        (escape(host), f"{urls:,}", escape(human_bytes(size)))
        for urls, size, host in sorted(s.largest, reverse=True)
    ]
    months = s.months()
    notes = ""
    if s.unreadable_lines:
        notes = f'<p class="bad">{s.unreadable_lines:,} unreadable lines in the hosts file.</p>'
    if s.hosts_report is None:
        notes += '<p class="empty">No per-host report: only the totals are shown.</p>'
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        # An empty icon: the browser asks for no /favicon.ico (an error in its console).
        f'<link rel="icon" href="data:,"><title>{escape(title)}</title>'
        f"<style>{_CSS}</style></head><body><h1>{escape(title)}</h1>"
        f"<h2>Totals</h2>{_totals(s)}{notes}"
        f"<h2>Failures by class</h2>{bars(by_class, label='failures by class')}"
        f"<h2>URLs per host ({s.hosts_read:,} hosts)</h2>"
        f"{columns([(k, float(v)) for k, v in s.sizes.items()], label='hosts by URL count')}"
        "<h2>lastmod over time</h2><p>URLs per lastmod month of each host's audit sample"
        " (every URL up to 500 per host, then 1 in 8).</p>"
        f"{columns([(k, float(v)) for k, v in months], label='lastmod histogram')}"
        f"{_hosts_table('Slowest hosts', ('host', 'seconds'), slowest)}"
        f"{_hosts_table('Largest hosts', ('host', 'URLs', 'downloaded'), largest)}"
        f"{_failed(s)}</body></html>\n"
    )
