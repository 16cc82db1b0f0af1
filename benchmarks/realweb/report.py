"""Figures of a realweb run: URLs vs the truth, failure classes vs the truth, the limits, a table.

In: the web (``list[Site]``, its locs are the truth), each tool's output (harvester: JSON
Lines records and ``OUT.hosts.jsonl``; Scrapy: URLs one a line) and its measured process
(``result.json`` of ``benchmarks.realweb.netns``). Out: one ``Row`` per tool, its JSON
record, and the markdown tables printed and written to ``benchmarks/realweb/RESULTS.md``.

Columns:

* **wall s**: the tool's process from start to exit (imports included), in its namespace;
* **CPU s**: user + sys of the tool's process tree (its reaped children included);
  the DNS and HTTP servers' CPU is printed apart (``servers``);
* **peak RSS MB**: the largest sum of ``VmRSS`` over the tool's process tree at one
  50 ms sample (``bench_pipeline.TreeSampler``);
* **domains/s**: domains in the list / wall s;
* **URLs found / truth**: distinct locs reported, mapped to their domain by host
  (``www.`` removed), against the web's locs; **missing**: truth locs not reported;
  **extra**: reported locs that are not in the truth; **exact domains**: domains
  expected ``ok`` whose reported set equals the truth, over those expected ``ok``;
* **classes right**: domains whose class (harvester's per-host report: ``ok`` when it
  emitted URLs, else ``blocked`` when its discovery says so, else its most frequent
  failure class, else ``none``) is the expected one; the confusion table counts every
  (expected, got) pair. For Scrapy, which has no per-domain report, the class is ``ok``
  (URLs found) or ``-`` (none);
* **CPU limit s**: the tool's CPU seconds over the machine's cores: no run on these cores
  can be faster than that with this much work;
* **chain limit s**: the longest single host's chain from the run's start
  (``limits.chain``: its politeness, robots.txt Crawl-delay included, or its answers'
  latency one after another), with the tool's own politeness settings;
* **end limit s**, **wall / limit**: max(CPU limit, chain limit) and the wall over it
  (issue 51's target: <= 1.15);
* **by kind**: per kind of site, the URLs missing and the domains in a wrong class
  (expected -> got), for the kinds that have either.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from benchmarks.realweb.limits import TARGET, end_limit
from benchmarks.realweb.web import Site, domain_of

if TYPE_CHECKING:
    from pathlib import Path


@dataclass(slots=True)
class Row:
    """One tool's figures."""

    tool: str
    wall_s: float
    cpu_s: float
    rss_mb: float
    domains: int
    urls_found: int
    urls_truth: int
    missing: int
    extra: int
    exact: int
    healthy: int
    classes_right: int | None
    timed_out: bool
    returncode: int
    confusion: dict[str, int] = field(default_factory=dict)  # "expected -> got": n
    servers: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # kind -> {"hosts", "median_s", "max_s", "sum_s"}: seconds a host held its slot
    slots: dict[str, dict[str, float]] = field(default_factory=dict)
    # kind -> {"domains", "expect", "urls_truth", "missing", "wrong": {got: domains}}
    by_kind: dict[str, dict[str, Any]] = field(default_factory=dict)
    chain_s: float = 0.0  # the longest single host's chain (limits.longest_chain)
    chain_host: str = ""  # ...its domain, kind and place in the list
    cores: int = field(default_factory=lambda: os.cpu_count() or 1)

    @property
    def domains_per_s(self) -> float:
        """Domains in the list over wall seconds."""
        return self.domains / self.wall_s if self.wall_s else 0.0

    @property
    def cpu_limit_s(self) -> float:
        """CPU seconds over the cores."""
        return self.cpu_s / max(1, self.cores)

    @property
    def end_limit_s(self) -> float:
        """max(CPU limit, the longest chain)."""
        return end_limit(self.cpu_s, self.cores, self.chain_s)[0]

    @property
    def wall_over_limit(self) -> float:
        """Wall seconds over the end limit (issue 51's target: at most ``TARGET``)."""
        return self.wall_s / self.end_limit_s if self.end_limit_s else 0.0

    @property
    def wrong_classes(self) -> int:
        """Domains in a wrong class (0 for a tool without classes)."""
        return sum(sum(k["wrong"].values()) for k in self.by_kind.values())

    def record(self) -> dict[str, Any]:
        """The JSON line of this row."""
        return {
            "bench": "realweb",
            "tool": self.tool,
            "wall_s": round(self.wall_s, 2),
            "cpu_s": round(self.cpu_s, 2),
            "peak_rss_mb": round(self.rss_mb, 1),
            "domains": self.domains,
            "domains_per_s": round(self.domains_per_s, 2),
            "urls_found": self.urls_found,
            "urls_truth": self.urls_truth,
            "missing": self.missing,
            "extra": self.extra,
            "exact_domains": self.exact,
            "healthy_domains": self.healthy,
            "classes_right": self.classes_right,
            "timed_out": self.timed_out,
            "returncode": self.returncode,
            "confusion": self.confusion,
            "servers": self.servers,
            "notes": self.notes,
            "slot_seconds_by_kind": self.slots,
            "by_kind": self.by_kind,
            "cpu_limit_s": round(self.cpu_limit_s, 2),
            "chain_limit_s": round(self.chain_s, 2),
            "chain_host": self.chain_host,
            "end_limit_s": round(self.end_limit_s, 2),
            "end_limit_is": end_limit(self.cpu_s, self.cores, self.chain_s)[1],
            "wall_over_limit": round(self.wall_over_limit, 3),
        }


def _bucket(loc: str) -> str:
    return domain_of(urlsplit(loc).hostname or "")


def harvester_found(out: Path) -> dict[str, set[str]]:
    """Domain -> distinct locs of harvester's output (``out`` or ``out.part``)."""
    path = out if out.exists() else out.with_name(out.name + ".part")
    found: dict[str, set[str]] = {}
    if not path.exists():
        return found
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            record = json.loads(line)
            loc = record.get("loc")
            if record.get("is_sitemap") or not isinstance(loc, str):
                continue
            found.setdefault(_bucket(loc), set()).add(loc)
    return found


def lines_found(path: Path) -> dict[str, set[str]]:
    """Domain -> distinct URLs of a one-URL-a-line file (a peer's output)."""
    found: dict[str, set[str]] = {}
    if path.exists():
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                loc = line.strip()
                if loc:
                    found.setdefault(_bucket(loc), set()).add(loc)
    return found


def host_class(line: dict[str, Any]) -> str:
    """The class of one line of ``OUT.hosts.jsonl`` (see the module docstring)."""
    if line.get("urls"):
        return "ok"
    if line.get("discovery") == "blocked":  # (issue 51: a bot wall is its own class)
        return "blocked"
    by_class: dict[str, int] = line.get("failures_by_class") or {}
    if not by_class:
        return "none"
    first = [f.get("class") for f in line.get("failures") or []]
    return max(by_class, key=lambda k: (by_class[k], k == (first[0] if first else None)))


def harvester_classes(hosts_jsonl: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    """Domain -> (class, the host's report line) from harvester's per-host report."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    if hosts_jsonl.exists():
        with hosts_jsonl.open(encoding="utf-8") as fh:
            for text in fh:
                if text.strip():
                    line = json.loads(text)
                    out[domain_of(str(line.get("host", "")))] = (host_class(line), line)
    return out


def slot_seconds(
    sites: list[Site], per_host: dict[str, tuple[str, dict[str, Any]]]
) -> dict[str, dict[str, float]]:
    """Kind -> hosts, median, max and sum of the ``seconds`` harvester spent on a host."""
    by_kind: dict[str, list[float]] = {}
    for site in sites:
        if site.name in per_host:
            seconds = float(per_host[site.name][1].get("seconds") or 0.0)
            by_kind.setdefault(site.kind, []).append(seconds)
    out = {}
    for kind, values in by_kind.items():
        values.sort()
        out[kind] = {
            "hosts": len(values),
            "median_s": round(values[len(values) // 2], 2),
            "max_s": round(values[-1], 2),
            "sum_s": round(sum(values), 1),
        }
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["sum_s"]))


def compare(
    tool: str,
    sites: list[Site],
    found: dict[str, set[str]],
    classes: dict[str, str] | None,
    result: dict[str, Any],
) -> Row:
    """The row of one tool from what it found and its measured process."""
    proc = result["process"]
    urls_truth = missing = extra = exact = healthy = right = 0
    confusion: Counter[str] = Counter()
    by_kind: dict[str, dict[str, Any]] = {}
    for site in sites:
        truth = set(site.locs)
        got = found.get(site.name, set())
        urls_truth += len(truth)
        missing += len(truth - got)
        extra += len(got - truth)
        if site.expect == "ok":
            healthy += 1
            exact += got == truth
        cls = ("ok" if got else "-") if classes is None else classes.get(site.name, "missing")
        confusion[f"{site.expect} -> {cls}"] += 1
        right += cls == site.expect
        kind = by_kind.setdefault(
            site.kind,
            {"domains": 0, "expect": site.expect, "urls_truth": 0, "missing": 0, "wrong": {}},
        )
        kind["domains"] += 1
        kind["urls_truth"] += len(truth)
        kind["missing"] += len(truth - got)
        if classes is not None and cls != site.expect:
            kind["wrong"][cls] = kind["wrong"].get(cls, 0) + 1
    return Row(
        tool=tool,
        wall_s=float(proc["wall_s"]),
        cpu_s=float(proc["cpu_s"]),
        rss_mb=float(proc["peak_rss_sum_mb"]),
        domains=len(sites),
        urls_found=sum(len(v) for v in found.values()),
        urls_truth=urls_truth,
        missing=missing,
        extra=extra,
        exact=exact,
        healthy=healthy,
        classes_right=right if classes is not None else None,
        timed_out=bool(proc["timed_out"]),
        returncode=int(proc["returncode"]),
        confusion=dict(sorted(confusion.items())),
        servers=result.get("servers", {}),
        by_kind=dict(sorted(by_kind.items())),
    )


def _f(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def kinds_table(row: Row) -> list[str]:
    """Markdown lines: the kinds with URLs missing or domains in a wrong class."""
    out = [
        "| kind | domains | expected | URLs truth | URLs missing | wrong class (got: domains) |",
        "| --- | ---: | --- | ---: | ---: | --- |",
    ]
    for kind, k in row.by_kind.items():
        if k["missing"] or k["wrong"]:
            wrong = ", ".join(f"{got}: {n}" for got, n in sorted(k["wrong"].items())) or "-"
            out.append(
                f"| {kind} | {k['domains']} | {k['expect']} | {k['urls_truth']:,}"
                f" | {k['missing']:,} | {wrong} |"
            )
    if len(out) == 2:
        out.append("| (every kind exact) | | | | | |")
    return out


def markdown(rows: list[Row]) -> str:
    """The side-by-side table, the limits, the kinds that lost, the confusion of classes."""
    out = [
        "| tool | wall s | CPU s | peak RSS MB | domains/s | URLs found | URLs truth | missing"
        " | extra | exact domains | classes right | CPU limit s | chain limit s | end limit s"
        " | wall / limit | notes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---:"
        " | ---: | ---: | --- |",
    ]
    for r in rows:
        notes = list(r.notes)
        if r.timed_out:
            notes.insert(0, "killed at the time limit")
        elif r.returncode:
            notes.insert(0, f"exit {r.returncode}")
        out.append(
            f"| {r.tool} | {r.wall_s:.1f} | {r.cpu_s:.1f} | {r.rss_mb:.0f}"
            f" | {r.domains_per_s:.2f} | {r.urls_found:,} | {r.urls_truth:,} | {r.missing:,}"
            f" | {r.extra:,} | {r.exact}/{r.healthy}"
            f" | {_f(r.classes_right, 'd')}{'' if r.classes_right is None else f'/{r.domains}'}"
            f" | {r.cpu_limit_s:.1f} | {r.chain_s:.1f} | {r.end_limit_s:.1f}"
            f" | {r.wall_over_limit:.2f} | {'; '.join(notes)} |"
        )
    out.append("")
    cores = rows[0].cores if rows else os.cpu_count()
    if rows:
        out.append(
            f"Chain limit: {rows[0].chain_host} ({cores} cores for the CPU limit;"
            f" target wall / limit <= {TARGET})."
        )
    for r in rows:
        out += ["", f"{r.tool}: by kind, the kinds that lost URLs or a class", ""]
        out += kinds_table(r)
        out += ["", f"{r.tool}: (expected -> got) domains", ""]
        out.append("| expected -> got | domains |")
        out.append("| --- | ---: |")
        out.extend(f"| {k} | {v} |" for k, v in r.confusion.items())
        if r.slots:
            out.append("")
            out.append(f"{r.tool}: seconds a host held its slot, by kind (per-host report)")
            out.append("")
            out.append("| kind | hosts | median s | max s | sum s |")
            out.append("| --- | ---: | ---: | ---: | ---: |")
            out.extend(
                f"| {k} | {v['hosts']:.0f} | {v['median_s']:.1f} | {v['max_s']:.1f}"
                f" | {v['sum_s']:.0f} |"
                for k, v in r.slots.items()
            )
        for name, lines in r.servers.items():
            if lines:
                out.append(f"\n{name} server during {r.tool}: `{lines[-1].lstrip('# ')}`")
    return "\n".join(out)
