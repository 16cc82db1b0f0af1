"""Inline SVG charts for the HTML run report: no script, no external asset, no library.

In: ``(label, value)`` pairs. Out: an ``<svg>`` element as text, every label
HTML-escaped (labels come from the web: failure classes, host names, months).
Two shapes: ``bars`` (horizontal HTML bars, one labelled row per pair with its
value: failure classes, hosts) and ``columns`` (an SVG of vertical columns on a
linear axis, with a value axis and gridlines: distributions, histograms). Each
value is also in a tooltip, and an empty series is a sentence, not an empty box.

Usage::

    svg = bars([("http_status", 12), ("dns", 3)], label="failures by class")
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["bars", "columns", "escape", "number"]

_LABEL_CHARS = 40  # longer labels are cut (the full text is in the tooltip)


def escape(value: object) -> str:
    """``value`` as HTML text, quotes included (safe in attributes too)."""
    return html.escape(str(value), quote=True)


def number(value: float) -> str:
    """``12345.0`` → ``12,345``; fractions keep two decimals (``0.5`` → ``0.50``)."""
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"


def _cut(label: str) -> str:
    return label if len(label) <= _LABEL_CHARS else label[: _LABEL_CHARS - 1] + "…"


def bars(pairs: Sequence[tuple[str, float]], *, label: str) -> str:
    """Horizontal bars, one row per pair, longest = the largest value; values printed.

    HTML, not SVG: each row is its label, then a bar as wide as its share of the
    largest value and the value, so it reflows to any screen width (a phone's too).
    """
    if not pairs or max(v for _, v in pairs) <= 0:
        return f'<p class="empty">No data for {escape(label)}.</p>'
    top = max(v for _, v in pairs)
    rows = []
    for name, value in pairs:
        share = max(value / top * 100, 0.5) if value > 0 else 0.0
        tip = f"{escape(name)}: {number(value)}"
        rows.append(
            f'<div class="brow"><span class="blabel" title="{tip}">{escape(_cut(name))}</span>'
            f'<span class="btrack"><span class="bar" style="width:{share:.1f}%"></span>'
            f'<span class="bval">{number(value)}</span></span></div>'
        )
    return f'<div class="bars" role="img" aria-label="{escape(label)}">{"".join(rows)}</div>'


def _ticks(top: float) -> list[float]:
    """Axis values 0 .. a round number at or above ``top``: 0, half and full."""
    step = 10 ** max(len(str(int(top))) - 1, 0)
    nice = step
    for mult in (1, 2, 5, 10):
        nice = mult * step
        if nice >= top:
            break
    return [0.0, nice / 2, float(nice)]


def columns(
    pairs: Sequence[tuple[str, float]],
    *,
    label: str,
    y_title: str = "",
    width: int = 480,
    height: int = 220,
) -> str:
    """Vertical columns in the order given (a linear axis), with a value axis (0, half,
    a round top) and gridlines, and labels under the columns (every k-th when many)."""
    if not pairs or max(v for _, v in pairs) <= 0:
        return f'<p class="empty">No data for {escape(label)}.</p>'
    ticks = _ticks(max(v for _, v in pairs))
    top = ticks[-1]
    left, bottom, head = 44, 34, 18  # value axis labels; column labels; the axis title
    plot_w, plot_h = width - left - 4, height - bottom - head
    step = plot_w / len(pairs)
    parts = []
    for t in ticks:
        y = head + plot_h - t / top * plot_h
        parts.append(
            f'<line x1="{left}" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{number(t)}</text>'
        )
    for i, (name, value) in enumerate(pairs):
        h = value / top * plot_h
        parts.append(
            f'<rect x="{left + i * step:.2f}" y="{head + plot_h - h:.2f}"'
            f' width="{max(step - 1, 0.5):.2f}" height="{h:.2f}" class="bar">'
            f"<title>{escape(name)}: {number(value)}</title></rect>"
        )
    every = max(1, -(-len(pairs) * 60 // plot_w))  # labels ~60 px apart at most
    for i, (name, _) in enumerate(pairs):
        if i % every == 0 or (i == len(pairs) - 1 and every == 1):
            x = left + (i + 0.5) * step
            parts.append(
                f'<text x="{x:.1f}" y="{height - bottom + 16}" text-anchor="middle">'
                f"{escape(_cut(name))}</text>"
            )
    axis = f'<line x1="{left}" x2="{left}" y1="{head}" y2="{head + plot_h}" class="axis"/>'
    title = f'<text x="0" y="12">{escape(y_title)}</text>' if y_title else ""
    return (
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
        f' role="img" aria-label="{escape(label)}">{title}{"".join(parts)}{axis}</svg>'
    )
