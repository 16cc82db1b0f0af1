"""Several realweb webs side by side: one column per web (the fixed one, random seeds).

In: ``(Mix, Row)`` pairs, one per web, of one tool (``report.Row``: its figures, by kind).
Out: ``markdown(webs)``: the run's figures, then the URLs missing and the domains in a
wrong class per kind, then the drawn parameters of each web (``Mix.describe``).
Printed by ``python -m benchmarks.realweb --seeds 1,2,3`` (or ``--webs``) after the runs,
and written to RESULTS.md with ``--write-results``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmarks.realweb.limits import TARGET

if TYPE_CHECKING:
    from benchmarks.realweb.mix import Mix
    from benchmarks.realweb.report import Row


def _line(name: str, cells: list[str]) -> str:
    return f"| {name} | {' | '.join(cells)} |"


def _head(webs: list[tuple[Mix, Row]], first: str) -> list[str]:
    labels = [f"{mix.label} ({row.tool})" for mix, row in webs]
    return [_line(first, labels), "| --- |" + " ---: |" * len(webs)]


def figures(webs: list[tuple[Mix, Row]]) -> list[str]:
    """The run's figures, a row each."""
    rows = [r for _, r in webs]
    out = _head(webs, "figure")
    table: list[tuple[str, list[str]]] = [
        ("domains", [f"{r.domains:,}" for r in rows]),
        ("URLs truth", [f"{r.urls_truth:,}" for r in rows]),
        ("wall s", [f"{r.wall_s:.1f}" for r in rows]),
        ("CPU s", [f"{r.cpu_s:.1f}" for r in rows]),
        ("peak RSS MB (summed)", [f"{r.rss_mb:.0f}" for r in rows]),
        ("domains/s", [f"{r.domains_per_s:.1f}" for r in rows]),
        ("URLs missing", [f"{r.missing:,}" for r in rows]),
        ("URLs extra", [f"{r.extra:,}" for r in rows]),
        ("domains in a wrong class", [f"{r.wrong_classes:,}" for r in rows]),
        ("CPU limit s", [f"{r.cpu_limit_s:.1f}" for r in rows]),
        ("chain limit s", [f"{r.chain_s:.1f}" for r in rows]),
        ("chain host", [r.chain_host for r in rows]),
        ("end limit s", [f"{r.end_limit_s:.1f}" for r in rows]),
        (f"wall / limit (target <= {TARGET})", [f"**{r.wall_over_limit:.2f}**" for r in rows]),
    ]
    out.extend(_line(name, cells) for name, cells in table)
    return out


def _kinds(webs: list[tuple[Mix, Row]]) -> list[str]:
    seen: dict[str, str] = {}
    for _, row in webs:
        for kind, k in row.by_kind.items():
            if k["missing"] or k["wrong"]:
                seen.setdefault(kind, k["expect"])
    return list(seen)


def by_kind(webs: list[tuple[Mix, Row]]) -> list[str]:
    """Per kind that lost anything on some web: domains, URLs missing, wrong classes."""
    out = _head(webs, "kind (expected): missing URLs / truth; wrong class")
    for kind in _kinds(webs):
        cells = []
        expect = ""
        for _, row in webs:
            k = row.by_kind.get(kind)
            if k is None:
                cells.append("-")
                continue
            expect = k["expect"]
            wrong = sum(k["wrong"].values())
            got = ", ".join(f"{g} {n}" for g, n in sorted(k["wrong"].items()))
            cells.append(
                f"{k['missing']:,} / {k['urls_truth']:,}; {wrong}/{k['domains']}"
                + (f" ({got})" if got else "")
            )
        out.append(_line(f"{kind} ({expect})", cells))
    if not _kinds(webs):
        out.append(_line("(every kind exact)", ["" for _ in webs]))
    return out


def parameters(webs: list[tuple[Mix, Row]]) -> list[str]:
    """The drawn parameters of each web, a row each (shares: the kinds of issue 51)."""
    described = [mix.describe() for mix, _ in webs]
    out = _head(webs, "parameter")
    keys = [k for k in described[0] if k not in ("mix", "shares_pct")]
    for kind in ("small", "slow", "https_dropped", "wall_403", "delay", "bigindex"):
        out.append(_line(f"share % {kind}", [f"{m.shares.get(kind, 0):.2f}" for m, _ in webs]))
    out.extend(_line(key, [str(d[key]) for d in described]) for key in keys)
    return out


def markdown(webs: list[tuple[Mix, Row]]) -> str:
    """The three tables, with a line before each."""
    out = ["Figures of each web:", "", *figures(webs), ""]
    out += ["URLs missing and domains in a wrong class, by kind:", "", *by_kind(webs), ""]
    out += ["The webs' parameters (`benchmarks/realweb/mix.py`):", "", *parameters(webs)]
    return "\n".join(out)
