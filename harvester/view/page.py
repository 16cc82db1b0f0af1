"""The HTML run report: one self-contained page from a ``RunSummary`` (summary.py).

In: a ``RunSummary``. Out: the page as text: inline CSS, HTML bars and inline SVG
charts (charts.py), no script, no font, no external asset (it opens offline and
from a mail attachment), laid out to read at a phone's width too. Sections: the
run's totals, failures by class (bars), URLs per host (a distribution), lastmod
over time (a histogram on a time axis, empty months kept), the slowest and
largest hosts, and the failed and partly failed hosts, each linked to why it
failed further down (anchor ``#line-N``, N its line in the hosts file): its
first failures, as text, never its raw JSON line.

Host names, URLs, failure messages and classes come from the web (a sitemap
can name anything), so every value goes through ``charts.escape``.

Usage::

    Path("report.html").write_text(render_page(read_summary("out.report.json")))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvester.view import coverage
from harvester.view.charts import bars, columns, escape
from harvester.view.tree import human_bytes

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvester.view.summary import FailedHost, RunSummary

__all__ = ["render_page"]

_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1000px;color:#222;
padding:0 1em;overflow-wrap:anywhere}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
h3{font-size:1em;margin:1.2em 0 .3em}
.scroll{overflow-x:auto}table{border-collapse:collapse}
td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td,th{overflow-wrap:normal}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.totals td:first-child{font-weight:600;white-space:nowrap}
svg.chart{display:block;width:100%;max-width:640px;height:auto;margin:.5em 0;font-size:13px}
svg .bar,.bars .bar{fill:#3b6fb6;background:#3b6fb6}svg .grid{stroke:#ddd}svg .axis{stroke:#888}
.brow{display:flex;flex-wrap:wrap;align-items:center;margin:3px 0;max-width:720px}
.blabel{flex:0 0 14em;max-width:100%;overflow-wrap:anywhere;padding-right:.5em}
.btrack{flex:1 1 10em;display:flex;align-items:center;min-width:8em}
.bars .bar{display:inline-block;height:1em;min-width:2px}.bval{padding-left:.4em;white-space:nowrap}
.why li{margin:.3em 0}.url{color:#555}
:target{outline:2px solid #c33}.empty{color:#777}.bad{color:#b22}
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
    return f'<h2>{escape(title)}</h2><div class="scroll"><table><tr>{ths}</tr>{body}</table></div>'


def _classes(classes: dict[str, int]) -> str:
    return ", ".join(f"{k} {n:,}" for k, n in sorted(classes.items()))


def _host_details(hosts: Sequence[FailedHost]) -> str:
    """Each host's failures (class, HTTP status, URL, message: one item each, stacked so a
    phone's width takes them), anchored ``#line-N`` (N its line in the hosts file, where
    the whole report is)."""
    out = []
    for f in hosts:
        items = "".join(
            f'<li><span class="bad">{escape(c)}</span>{" " + escape(st) if st else ""}'
            f'<br><span class="url">{escape(u)}</span><br>{escape(m)}</li>'
            for c, u, m, st in f.failures
        )
        urls = f", {f.urls:,} URLs" if f.urls else ""
        out.append(
            f'<section id="line-{f.line}"><h3>{escape(f.host)}'
            f' <small>(line {f.line}{urls})</small></h3><ul class="why">{items}</ul></section>'
        )
    return "".join(out)


def _failed_list(title: str, anchor: str, hosts: Sequence[FailedHost], total: int) -> str:
    if not total:
        return f'<h2 id="{anchor}">{escape(title)}</h2><p class="empty">None.</p>'
    items = "".join(
        f'<li><a href="#line-{f.line}">{escape(f.host)}</a> '
        f'<span class="bad">{escape(_classes(f.classes))}</span>'
        + (f" ({f.urls:,} URLs)" if f.urls else "")
        + "</li>"
        for f in hosts
    )
    more = ""
    if total > len(hosts):
        more = f"<p>… and {total - len(hosts):,} more (see the hosts file).</p>"
    return f'<h2 id="{anchor}">{escape(title)} ({total:,})</h2><ul>{items}</ul>{more}'


def _failed(s: RunSummary) -> str:
    where = escape(s.hosts_report or "?")
    details = _host_details([*s.failed, *s.partial])
    return (
        _failed_list("Failed hosts (no URL)", "failed", s.failed, s.failed_total)
        + _failed_list(
            "Partly failed hosts (URLs, and failures)", "partial", s.partial, s.partial_total
        )
        + (f"<h2>Why, host by host</h2><p>From {where}.</p>{details}" if details else "")
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
    period = "year" if months and all(len(k) == 4 for k, _ in months if k[0].isdigit()) else "month"
    sizes = [(k, float(v)) for k, v in s.sizes.items()]
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
        f"<style>{_CSS}{coverage.CSS}</style></head><body><h1>{escape(title)}</h1>"
        f"<h2>Totals</h2>{_totals(s)}{notes}"
        f"<h2>Failures by class</h2>{bars(by_class, label='failures by class')}"
        f"<h2>URLs per host ({s.hosts_read:,} hosts)</h2><p>Hosts by their URL count.</p>"
        f"{columns(sizes, label='hosts by URL count', y_title='hosts')}"
        f"<h2>lastmod over time</h2><p>URLs per lastmod {period} of each host's audit sample"
        " (every URL up to 500 per host, then 1 in 8); empty ones included.</p>"
        f"{columns([(k, float(v)) for k, v in months], label='lastmod histogram', y_title='URLs')}"
        f"{_hosts_table('Slowest hosts', ('host', 'seconds'), slowest)}"
        f"{_hosts_table('Largest hosts', ('host', 'URLs', 'downloaded'), largest)}"
        f"{coverage.section(s.coverage, s.run.get('coverage'))}"
        f"{_failed(s)}</body></html>\n"
    )
