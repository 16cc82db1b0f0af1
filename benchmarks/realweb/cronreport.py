"""Figures of a cron sequence (``benchmarks.realweb.cron``): each run against its truth.

In: the sequence directory (per run: ``out.jsonl``, ``serve.json``, ``result.json``), the
web (generation 0) and the generation of each run. Out: one ``CronRow`` per run and the
markdown table with issue 53's targets beside it.

Columns: **wall s**, **CPU s** (harvester's process tree); **requests** (the HTTP
server's count, every host and status), **304** (of them); **sitemap bodies** (sent with
200) and **with validators** (those whose response carried an ETag or Last-Modified: a
conditional GET could have saved them), **sitemap MB** (their bytes); **records** by
event; **truth** (``generations.delta``: `new`, `changed`, `removed`); **missing** and
**extra** per event (a record of another event, `unverified` or `unchanged`, is extra
under issue 53's `--emit delta`). Targets (issue 53): an unchanged run downloads 0
bodies where validators exist and writes 0 records, with at most 50 % of the first run's
requests; from the third run on at most 15 % of its requests and 20 % of its wall.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchmarks.realweb.crondue import truths
from benchmarks.realweb.generations import delta, snapshots

if TYPE_CHECKING:
    from pathlib import Path

    from benchmarks.realweb.web import Site

EVENTS = ("new", "changed", "removed")


@dataclass(slots=True)
class CronRow:
    """One run of the sequence."""

    run: int
    generation: int
    ops: dict[str, int]
    wall_s: float
    cpu_s: float
    rss_mb: float
    returncode: int
    server: dict[str, Any]
    records: Counter[str] = field(default_factory=Counter)
    truth: dict[str, int] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    extra: dict[str, int] = field(default_factory=dict)
    # From harvester's run report: sitemaps adaptive revisit did not ask, unverified URLs.
    not_due: int = 0
    unverified: int = 0
    late_not_due: int = 0  # hosts whose late attempt waited (a failed one before)
    # Against what a correct tool reports asking what this run asked (crondue.py).
    asked_missing: dict[str, int] = field(default_factory=dict)
    asked_extra: dict[str, int] = field(default_factory=dict)

    @property
    def exact_asked(self) -> bool:
        """No record missing, none extra, against the truth of what was asked."""
        return not any(self.asked_missing.values()) and not any(self.asked_extra.values())

    @property
    def exact(self) -> bool:
        """No record missing, none extra."""
        return not any(self.missing.values()) and not any(self.extra.values())

    def record(self) -> dict[str, Any]:
        """The JSON line of this run."""
        return {
            "bench": "realweb-cron",
            "run": self.run,
            "generation": self.generation,
            "ops": self.ops,
            "wall_s": round(self.wall_s, 2),
            "cpu_s": round(self.cpu_s, 2),
            "peak_rss_mb": round(self.rss_mb, 1),
            "returncode": self.returncode,
            "server": self.server,
            "records": dict(self.records),
            "truth": self.truth,
            "missing": self.missing,
            "extra": self.extra,
            "exact": self.exact,
            "asked_missing": self.asked_missing,
            "asked_extra": self.asked_extra,
            "exact_asked": self.exact_asked,
            "sitemaps_not_due": self.not_due,
            "unverified": self.unverified,
            "hosts_late_not_due": self.late_not_due,
        }


def emitted(out: Path) -> dict[str, set[str]]:
    """Event -> locs of a run's output (``out`` or its ``.part``)."""
    path = out if out.exists() else out.with_name(out.name + ".part")
    found: dict[str, set[str]] = {}
    if path.exists():
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    rec = json.loads(line)
                    if not rec.get("is_sitemap"):
                        found.setdefault(str(rec.get("event")), set()).add(rec["loc"])
    return found


def check(
    got: dict[str, set[str]], truth: dict[str, frozenset[str]]
) -> tuple[dict[str, int], dict[str, int]]:
    """(missing, extra) per event; events outside the truth's are all extra."""
    missing = {e: len(truth[e] - got.get(e, set())) for e in EVENTS}
    extra = {e: len(got.get(e, set()) - truth[e]) for e in EVENTS}
    for event, locs in got.items():
        if event not in EVENTS:
            extra[event] = len(locs)
    return missing, extra


def rows(run_dir: Path, sites: list[Site], seed: int, gens: list[int]) -> list[CronRow]:
    """One row per run, from what the sequence left in ``run_dir``."""
    snaps, ops = snapshots(sites, seed, max(gens))
    asked = truths(run_dir, sites, seed, gens)
    out = []
    for r, g in enumerate(gens, start=1):
        one = run_dir / f"run{r}"
        result = json.loads((one / "result.json").read_text())
        proc = result["process"]
        serve = one / "serve.json"
        server = json.loads(serve.read_text()) if serve.exists() else {}
        before = snaps[gens[r - 2]] if r > 1 else None
        truth = delta(before, snaps[g]).events()
        got = emitted(one / "out.jsonl")
        report_file = one / "out.jsonl.report.json"
        report = json.loads(report_file.read_text()) if report_file.exists() else {}
        missing, extra = check(got, truth)
        asked_missing, asked_extra = check(got, asked[r - 1])
        changed_web = r > 1 and g != gens[r - 2]
        out.append(
            CronRow(
                run=r,
                generation=g,
                ops=ops[g] if changed_web else {},
                wall_s=float(proc["wall_s"]),
                cpu_s=float(proc["cpu_s"]),
                rss_mb=float(proc["peak_rss_sum_mb"]),
                returncode=int(proc["returncode"]),
                server=server,
                records=Counter({e: len(v) for e, v in got.items()}),
                truth={e: len(v) for e, v in truth.items()},
                missing=missing,
                extra=extra,
                not_due=int(report.get("sitemaps_not_due", 0)),
                unverified=int(report.get("unverified", 0)),
                late_not_due=int(report.get("hosts_late_not_due", 0)),
                asked_missing=asked_missing,
                asked_extra=asked_extra,
            )
        )
    return out


def _slash(values: dict[str, int], keys: tuple[str, ...]) -> str:
    return " / ".join(f"{values.get(k, 0):,}" for k in keys)


def _others(values: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(values.items()) if k not in EVENTS and v)


def table(rows_: list[CronRow]) -> list[str]:
    """The per-run table."""
    out = [
        "| run | gen | mutated | wall s | CPU s | requests | 304 | sitemap bodies (with validators)"
        " | sitemaps not due | unverified | sitemap MB | records new / changed / removed"
        " | other records | truth new / changed / removed | missing new / changed / removed"
        " | extra new / changed / removed | exact"
        " | exact against what was asked (missing / extra) |",
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
        " ---: | ---: | ---: | --- | --- |",
    ]
    for r in rows_:
        s = r.server
        ops = ", ".join(f"{k} {v}" for k, v in sorted(r.ops.items())) or "-"
        status = {int(k): v for k, v in s.get("by_status", {}).items()}
        out.append(
            f"| {r.run} | {r.generation} | {ops} | {r.wall_s:.1f} | {r.cpu_s:.1f}"
            f" | {s.get('requests', 0):,} | {status.get(304, 0):,}"
            f" | {s.get('sitemap_bodies', 0):,} ({s.get('validated_bodies', 0):,})"
            f" | {r.not_due:,} | {r.unverified:,}"
            f" | {s.get('sitemap_bytes', 0) / 1e6:.1f} | {_slash(r.records, EVENTS)}"
            f" | {_others(r.records) or '-'} | {_slash(r.truth, EVENTS)}"
            f" | {_slash(r.missing, EVENTS)} | {_slash(r.extra, EVENTS)}"
            f" | {'yes' if r.exact else '**no**'}"
            f" | {'yes' if r.exact_asked else '**no**'} ({sum(r.asked_missing.values()):,}"
            f" / {sum(r.asked_extra.values()):,}) |"
        )
    return out


def kinds(rows_: list[CronRow]) -> list[str]:
    """Each run's requests by what was asked and the answer (the server's ``by_kind``),
    and the hosts whose late attempt waited."""
    names = sorted({k for r in rows_ for k in r.server.get("by_kind", {})})
    if not names:
        return []
    out = [
        "",
        "| run | " + " | ".join(names) + " | hosts late not due |",
        "| ---: |" + " ---: |" * (len(names) + 1),
    ]
    for r in rows_:
        got = r.server.get("by_kind", {})
        cells = " | ".join(f"{got.get(n, 0):,}" for n in names)
        out.append(f"| {r.run} | {cells} | {r.late_not_due:,} |")
    return out


def targets(rows_: list[CronRow]) -> list[str]:
    """Issue 53's targets against the runs on the unchanged web (runs 2 and 3)."""
    if len(rows_) < 2:
        return []
    first = rows_[0]
    req1 = first.server.get("requests", 0) or 1
    out = ["", "| target (issue 53) | run | measured | met |", "| --- | ---: | --- | --- |"]
    unchanged = [r for r in rows_[1:] if r.generation == 0]
    for r in unchanged[:1]:
        bodies = r.server.get("validated_bodies", 0)
        records = sum(r.records.values())
        share = r.server.get("requests", 0) / req1
        met = _met(bodies == 0)
        out.append(f"| 0 sitemap bodies where validators exist | {r.run} | {bodies:,} | {met} |")
        out.append(
            f"| 0 records with --emit delta | {r.run} | {records:,} | {_met(records == 0)} |"
        )
        out.append(f"| requests <= 50 % of run 1 | {r.run} | {share:.0%} | {_met(share <= 0.5)} |")
    for r in unchanged[1:2]:
        share = r.server.get("requests", 0) / req1
        wall = r.wall_s / first.wall_s if first.wall_s else 0.0
        out.append(f"| requests <= 15 % of run 1 | {r.run} | {share:.0%} | {_met(share <= 0.15)} |")
        out.append(f"| wall <= 20 % of run 1 | {r.run} | {wall:.0%} | {_met(wall <= 0.2)} |")
    changed = [r for r in rows_ if r.ops]
    exact = sum(r.exact for r in changed)
    runs = ", ".join(str(r.run) for r in changed) or "-"
    out.append(
        f"| changed web: delta = truth on every run | {runs}"
        f" | {exact} of {len(changed)} exact | {_met(bool(changed) and exact == len(changed))} |"
    )
    asked = sum(r.exact_asked for r in rows_)
    out.append(
        f"| every run: delta = truth of the sitemaps it asked | all"
        f" | {asked} of {len(rows_)} exact | {_met(asked == len(rows_))} |"
    )
    return out


def _met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def markdown(rows_: list[CronRow], label: str) -> str:
    """The table and the targets."""
    head = f"Web {label}; each run `harvester run ... --state state.sqlite --emit delta`."
    return "\n".join([head, "", *table(rows_), *kinds(rows_), *targets(rows_)])
