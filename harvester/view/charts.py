"""Inline SVG charts for the HTML run report: no script, no external asset, no library.

In: ``(label, value)`` pairs. Out: an ``<svg>`` element as text, every label
HTML-escaped (labels come from the web: failure classes, host names, months).
Two shapes: ``bars`` (horizontal, one labelled row per pair: failure classes,
hosts) and ``columns`` (vertical, a linear axis: distributions, histograms).
Each bar's exact value is also in its ``<title>`` (a tooltip), and an empty
series is a sentence, not an empty box.

Usage::

    svg = bars([("http_status", 12), ("dns", 3)], label="failures by class")
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["bars", "columns", "escape", "number"]

_ROW = 22  # pixels per row of a ``bars`` chart
_LABEL_CHARS = 40  # longer labels are cut (the full text is in the tooltip)


def escape(value: object) -> str:
    """``value`` as HTML text, quotes included (safe in attributes too)."""
    return html.escape(str(value), quote=True)


def number(value: float) -> str:
    """``12345.0`` → ``12,345``; fractions keep two decimals (``0.5`` → ``0.50``)."""
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"


def _cut(label: str) -> str:
    return label if len(label) <= _LABEL_CHARS else label[: _LABEL_CHARS - 1] + "…"


def bars(pairs: Sequence[tuple[str, float]], *, label: str, width: int = 720) -> str:
    """Horizontal bars, one row per pair, longest = the largest value; values printed."""
    if not pairs or max(v for _, v in pairs) <= 0:
        return f'<p class="empty">No data for {escape(label)}.</p>'
    top = max(v for _, v in pairs)
    left, right = 300, 90  # label column, value column
    plot = width - left - right
    height = _ROW * len(pairs) + 4
    rows = []
    for i, (name, value) in enumerate(pairs):
        y = i * _ROW + 2
        w = max(value / top * plot, 1.0) if value > 0 else 0.0
        tip = f"{escape(name)}: {number(value)}"
        rows.append(
            f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{escape(_cut(name))}</text>'
            f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{_ROW - 6}" class="bar">'
            f"<title>{tip}</title></rect>"
            f'<text x="{left + w + 6:.1f}" y="{y + 15}">{number(value)}</text>'
        )
    return (
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img"'
        f' aria-label="{escape(label)}">{"".join(rows)}</svg>'
    )


def columns(
    pairs: Sequence[tuple[str, float]], *, label: str, width: int = 720, height: int = 180
) -> str:
    """Vertical columns in the order given (a linear axis); first, last and max labelled."""
    if not pairs or max(v for _, v in pairs) <= 0:
        return f'<p class="empty">No data for {escape(label)}.</p>'
    top = max(v for _, v in pairs)
    plot_h = height - 34
    step = width / len(pairs)
    cols = []
    for i, (name, value) in enumerate(pairs):
        h = value / top * plot_h
        cols.append(
            f'<rect x="{i * step:.2f}" y="{14 + plot_h - h:.2f}" width="{max(step - 1, 0.5):.2f}"'
            f' height="{h:.2f}" class="bar"><title>{escape(name)}: {number(value)}</title></rect>'
        )
    ticks = ""
    if len(pairs) <= 12:  # few columns: each gets its label under it
        ticks = "".join(
            f'<text x="{(i + 0.5) * step:.1f}" y="{height - 4}" text-anchor="middle">'
            f"{escape(_cut(name))}</text>"
            for i, (name, _) in enumerate(pairs)
        )
    else:
        ticks = (
            f'<text x="0" y="{height - 4}">{escape(pairs[0][0])}</text>'
            f'<text x="{width}" y="{height - 4}" text-anchor="end">{escape(pairs[-1][0])}</text>'
        )
    return (
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img"'
        f' aria-label="{escape(label)}">{"".join(cols)}{ticks}'
        f'<text x="{width}" y="10" text-anchor="end">max {number(top)}</text></svg>'
    )
