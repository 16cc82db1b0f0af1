"""What the HTML run report shows, gathered from a run's report files in one pass.

In: the run report (``OUT.report.json``, a dict) and the per-host report lines
it names (``hosts_report``: ``OUT.hosts.jsonl``), read one line at a time so a
run of millions of hosts is never held in memory. Out: a ``RunSummary``: the
run's totals and failures by class (from the run report), URLs per host as a
distribution (decade buckets), lastmod over time (the hosts' ``lastmod_months``
summed), the slowest and largest hosts, and the failed hosts (no URL) and the
partly failed ones (URLs, and failures) with their line number and first failures
(for the page's anchors). ``read_summary`` raises
``InputError`` naming the file when the run report cannot be read; a bad host
line is counted (``unreadable_lines``), never fatal.

Usage::

    summary = read_summary("out.report.json")
    page = render_page(summary)  # page.py
"""

from __future__ import annotations

import heapq
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harvester.errors import InputError
from harvester.view.coverage import CoverageRows

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["KEEP_FAILED", "TOP", "FailedHost", "RunSummary", "read_summary", "size_bucket"]

TOP = 10  # slowest and largest hosts shown
KEEP_FAILED = 1_000  # failed hosts listed (with their report line); the rest are counted
_MAX_LINE = 20_000  # characters of a failed host's report line kept
_KEEP_EACH = 5  # failures shown per failed host (the hosts file has them all)
# URLs per host: decade buckets, so one chart reads a run of tiny and huge sites alike.
_BUCKETS = ("0", "1-9", "10-99", "100-999", "1k-9.9k", "10k-99k", "100k-999k", "1M+")


def size_bucket(urls: int) -> str:
    """The decade bucket of a host with ``urls`` URLs (``_BUCKETS``).

    >>> size_bucket(0), size_bucket(7), size_bucket(1234), size_bucket(10**8)
    ('0', '1-9', '1k-9.9k', '1M+')
    """
    if urls <= 0:
        return _BUCKETS[0]
    return _BUCKETS[min(len(str(urls)), len(_BUCKETS) - 1)]


@dataclass(slots=True)
class FailedHost:
    """A host that failed, wholly (no URL) or partly (URLs, and failures: a truncated
    gzip, a failed child): its line in the hosts file, and why."""

    line: int  # 1-based line number in the hosts report
    host: str
    classes: dict[str, int]
    first: str  # its first failure: "class url: message"
    text: str  # the report line itself (cut at _MAX_LINE characters)
    urls: int = 0  # URLs it gave all the same (partly failed hosts)
    # Its first failures (_KEEP_EACH): (class, url, message, HTTP status or "").
    failures: list[tuple[str, str, str, str]] = field(default_factory=list)


@dataclass(slots=True)
class RunSummary:
    """Everything the page shows (see the module docstring)."""

    run: dict[str, Any]
    hosts_report: str | None = None
    hosts_read: int = 0
    unreadable_lines: int = 0
    sizes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_BUCKETS, 0))
    lastmod_months: dict[str, int] = field(default_factory=dict)
    slowest: list[tuple[float, str]] = field(default_factory=list)  # (seconds, host)
    largest: list[tuple[int, int, str]] = field(default_factory=list)  # (urls, bytes, host)
    failed: list[FailedHost] = field(default_factory=list)
    failed_total: int = 0
    partial: list[FailedHost] = field(default_factory=list)  # URLs, but failures too
    partial_total: int = 0
    coverage: CoverageRows = field(default_factory=CoverageRows)  # issue 49 (view/coverage.py)

    def add_host(self, line: int, host: dict[str, Any], text: str) -> None:
        """Fold in one host report (``text`` is its line as read)."""
        self.hosts_read += 1
        name = str(host.get("host", "?"))
        urls = _int(host.get("urls"))
        self.sizes[size_bucket(urls)] += 1
        for month, count in (host.get("lastmod_months") or {}).items():
            self.lastmod_months[str(month)] = self.lastmod_months.get(str(month), 0) + _int(count)
        # Bounded heaps: the TOP largest so far, the smallest of them first.
        _push(self.slowest, (_float(host.get("seconds")), name))
        _push(self.largest, (urls, _int(host.get("bytes")), name))
        self.coverage.add(name, host.get("coverage"))
        classes = host.get("failures_by_class") or {}
        if sum(_int(n) for n in classes.values()) <= 0:
            return
        if urls == 0:
            self.failed_total += 1
            kept = self.failed
        else:
            self.partial_total += 1
            kept = self.partial
        if len(kept) < KEEP_FAILED:
            failures = [f for f in host.get("failures") or () if isinstance(f, dict)] or [{}]
            f = failures[0]
            first = f"{f.get('class', '?')} {f.get('url', '')}: {f.get('message', '')}"
            each = [_failure(f) for f in failures[:_KEEP_EACH]]
            classes = {str(k): _int(v) for k, v in classes.items()}
            kept.append(FailedHost(line, name, classes, first, text[:_MAX_LINE], urls, each))

    def months(self) -> list[tuple[str, int]]:
        """lastmod counts in time order: by month, or by year when months and years mix
        (hosts with long ranges report years) or when they span more than 120 months.
        Every month (or year) between the first and the last is there, an empty one
        with 0, so the axis is time: a gap of years shows as a gap."""
        dated = {k: v for k, v in self.lastmod_months.items() if k not in ("<1995", "future")}
        if any(len(k) == 4 for k in dated) or _span_months(dated) > 120:
            years: dict[str, int] = {}
            for key, count in dated.items():
                years[key[:4]] = years.get(key[:4], 0) + count
            dated = years
        out = _filled(dated)
        if "<1995" in self.lastmod_months:
            out.insert(0, ("<1995", self.lastmod_months["<1995"]))
        if "future" in self.lastmod_months:
            out.append(("future", self.lastmod_months["future"]))
        return out


def _failure(f: dict[str, Any]) -> tuple[str, str, str, str]:
    """A failure dict as (class, url, message, HTTP status), each a string ("" if absent)."""
    return (
        str(f.get("class", "?")),
        str(f.get("url") or ""),
        str(f.get("message") or ""),
        str(f.get("status") or ""),
    )


def _month_number(key: str) -> int | None:
    """``"2024-03"`` → months since year 0; None for what is no month."""
    try:
        return int(key[:4]) * 12 + int(key[5:7]) - 1 if len(key) == 7 else None
    except ValueError:
        return None


def _span_months(dated: dict[str, int]) -> int:
    numbers = [n for n in map(_month_number, dated) if n is not None]
    return max(numbers) - min(numbers) + 1 if numbers else 0


def _filled(dated: dict[str, int]) -> list[tuple[str, int]]:
    """``dated`` (all "YYYY-MM" or all "YYYY") in time order, empty periods as 0."""
    if not dated:
        return []
    if all(len(k) == 4 and k.isdigit() for k in dated):
        years = [int(k) for k in dated]
        return [(str(y), dated.get(str(y), 0)) for y in range(min(years), max(years) + 1)]
    numbers = {n: k for k in dated if (n := _month_number(k)) is not None}
    if len(numbers) != len(dated):
        return sorted(dated.items())  # something that is no month: shown as it is
    first, last = min(numbers), max(numbers)
    return [
        (f"{n // 12:04d}-{n % 12 + 1:02d}", dated.get(f"{n // 12:04d}-{n % 12 + 1:02d}", 0))
        for n in range(first, last + 1)
    ]


def _push(heap: list[Any], item: Any) -> None:
    if len(heap) < TOP:
        heapq.heappush(heap, item)
    elif item > heap[0]:
        heapq.heapreplace(heap, item)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def read_summary(report_path: str) -> RunSummary:
    """Read ``report_path`` (a run report) and the hosts file it names, into a summary.

    A relative ``hosts_report`` is looked up beside the run report when it is not
    found from the working directory.
    """
    try:
        with open(report_path, encoding="utf-8") as fh:
            run = json.load(fh)
    except OSError as exc:
        raise InputError(f"cannot read the run report {report_path}: {exc.strerror}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{report_path} is not a run report (not JSON: {exc})") from None
    if not isinstance(run, dict) or "hosts_done" not in run:
        raise InputError(f"{report_path} is not a run report (no hosts_done)")
    hosts = run.get("hosts_report")
    if isinstance(hosts, str) and not os.path.exists(hosts):
        beside = os.path.join(os.path.dirname(report_path), os.path.basename(hosts))
        hosts = beside if os.path.exists(beside) else hosts
    summary = RunSummary(run, hosts if isinstance(hosts, str) else None)
    if summary.hosts_report is not None and os.path.exists(summary.hosts_report):
        with open(summary.hosts_report, encoding="utf-8", errors="replace") as fh:
            _read_hosts(summary, fh)
    return summary


def _read_hosts(summary: RunSummary, lines: Iterable[str]) -> None:
    for number, text in enumerate(lines, 1):
        try:
            host = json.loads(text)
        except ValueError:
            summary.unreadable_lines += 1
            continue
        if isinstance(host, dict):
            summary.add_host(number, host, text.rstrip("\n"))
        else:
            summary.unreadable_lines += 1
