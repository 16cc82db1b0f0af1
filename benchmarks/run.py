"""One command, one table (issue 8): harvester, the raw limits and the peers on one corpus.

::

    python -m benchmarks run --profile many --hosts 200                 # quick
    python -m benchmarks run --profile many                             # 2,000 hosts
    python -m benchmarks run --profile many --latency 0.05 --timeout 900
    python -m benchmarks run --profile big                              # + parse stage
    python -m benchmarks run --profile scale --hosts 2000               # then --hosts 20000
    python -m benchmarks run --hosts 200 --tools harvester,scrapy --write-results

Generates (or reuses) the ``benchmarks.webgen`` corpus, serves it with ``benchmarks.server``
in a subprocess (``bench_pipeline.ServerProcess``, stopped by its pid; ``ServerGroup`` starts
several ``--shard K/N`` processes when one cannot hold a listening socket per host under
``RLIMIT_NOFILE``), then runs each tool in its own process, one after the other, and prints
one markdown table: tool, profile, wall s, CPU s, peak RSS MB, largest process MB, URLs
found, URLs expected, URLs/s, notes.

* ``harvester``: ``harvester run --workers N`` (once per value of ``--workers``, a comma
  list) with bench_pipeline's config (``fetch.allow_private = true``;
  ``bench_pipeline.run_harvester``; ``--no-state`` adds ``[state] enabled = false``).
* ``net-limit`` and ``cpu-limit``: bench_pipeline's two limits (a plain concurrent aiohttp
  download of every file; zlib + lxml pull parse of every file from disk, one core; its wall
  time is shown as measured, on one core, not divided by the workers).
* ``parse-stage`` (default on ``big`` only): bench_parse's ``ours`` (``SitemapReader``) and
  ``raw`` loops on each urlset file, fresh interpreters, best of 3: the parse stage alone.
* the peers (``benchmarks.peers``): ultimate-sitemap-parser, advertools, Scrapy, trafilatura
  (not on ``scale``).

Wall s is the tool's process from start to exit (interpreter start and imports included);
CPU s is user + system of the process tree (``RUSAGE_CHILDREN``). Memory is sampled every
50 ms over the process tree (``bench_pipeline.TreeSampler``): largest process = the largest
``VmHWM`` of one process (exact for that process); peak RSS = the larger of the largest
sampled ``VmRSS`` sum and that; the notes list every process's own peak and the largest
sampled ``Pss`` sum (shared pages counted once). MB = 10**6 bytes. URLs found = distinct
URLs over all hosts in the tool's output, checked host by host (count and digest) against
webgen's ``truth.json``; URLs/s = found / wall s. A tool past ``--timeout`` is killed (by
pid) and reported as timed out with what it had written. ``--write-results`` also writes
``benchmarks/RESULTS.md`` (table, targets, machine, commit, command).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from benchmarks.bench_pipeline import (
    OUT_ROOT,
    ROOT,
    ProcResult,
    ServerProcess,
    StepError,
    _machine,
    _spawn_limit,
    prepare_corpus,
    run_harvester,
    run_measured,
)
from benchmarks.peers import PEERS, PROXY_VARS
from benchmarks.server import FD_MARGIN, raise_nofile
from benchmarks.webgen import (
    DEFAULT_PORT,
    GroundTruth,
    UrlTally,
    load_manifest,
)

TOOLS: Final = ("harvester", "net-limit", "cpu-limit", "parse-stage", *PEERS)
DEFAULT_TOOLS: Final = {  # per profile; others: TOOLS without parse-stage
    "big": TOOLS,
    "scale": ("harvester",),
}
DEFAULT_WORKERS: Final = {"big": "2,1"}  # harvester --workers values per profile (else "2")
PARSE_REPEAT: Final = 3
TARGET_PARSE_RATIO: Final = 0.6
TARGET_LARGEST_MB: Final = 80.0
PEER_LABELS: Final = {
    "usp": "ultimate-sitemap-parser",
    "advertools": "advertools",
    "scrapy": "scrapy (SitemapSpider)",
    "trafilatura": "trafilatura",
    "trafilatura-ip": "trafilatura (patched for IP hosts)",
}
RESULTS_MD: Final = Path(__file__).resolve().parent / "RESULTS.md"


@dataclass(slots=True)
class Result:
    """One row of the table."""

    tool: str
    profile: str
    wall_s: float | None
    cpu_s: float | None
    rss_mb: float | None
    found: int | None
    expected: int
    notes: list[str] = field(default_factory=list)
    timed_out: bool = False
    exact: bool = False  # every host's URL set equals the truth
    rss_max_mb: float | None = None  # the largest single process's own peak (VmHWM)
    pss_mb: float | None = None  # largest sampled Pss sum over the tree (multi-process only)
    per_process: list[tuple[int, str, float]] = field(default_factory=list)

    @property
    def urls_per_s(self) -> float | None:
        if self.wall_s is None or self.found is None or self.wall_s <= 0:
            return None
        return self.found / self.wall_s

    def record(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "profile": self.profile,
            "wall_s": None if self.wall_s is None else round(self.wall_s, 2),
            "cpu_s": None if self.cpu_s is None else round(self.cpu_s, 2),
            "peak_rss_mb": None if self.rss_mb is None else round(self.rss_mb, 1),
            "largest_process_mb": None if self.rss_max_mb is None else round(self.rss_max_mb, 1),
            "peak_pss_sum_mb": None if self.pss_mb is None else round(self.pss_mb, 1),
            "processes": [
                {"pid": pid, "cmd": cmd, "peak_mb": round(mb, 1)}
                for pid, cmd, mb in self.per_process
            ],
            "urls_found": self.found,
            "urls_expected": self.expected,
            "urls_per_s": None if self.urls_per_s is None else round(self.urls_per_s),
            "timed_out": self.timed_out,
            "exact": self.exact,
            "notes": "; ".join(self.notes),
        }


def _fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def markdown(results: list[Result]) -> str:
    lines = [
        "| tool | profile | wall s | CPU s | peak RSS MB | largest process MB | URLs found"
        " | URLs expected | URLs/s | notes |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in results:
        wall = _fmt(r.wall_s, ".2f") + (" (timed out)" if r.timed_out else "")
        notes = "; ".join(r.notes).replace("|", "\\|")
        lines.append(
            f"| {r.tool} | {r.profile} | {wall} | {_fmt(r.cpu_s, '.1f')}"
            f" | {_fmt(r.rss_mb, '.0f')} | {_fmt(r.rss_max_mb, '.0f')}"
            f" | {_fmt(r.found, ',')} | {r.expected:,}"
            f" | {_fmt(r.urls_per_s, ',.0f')} | {notes} |"
        )
    return "\n".join(lines)


def _is_peer(r: Result) -> bool:
    return not r.tool.startswith(("harvester", "limit"))


def _harvester_runs(results: list[Result]) -> list[Result]:
    return [r for r in results if r.tool.startswith("harvester (")]


def ratios(results: list[Result], latency_ms: int) -> list[str]:
    """harvester's speed (wall) and peak RSS against each peer's, in this run."""
    runs = _harvester_runs(results)
    out = big_targets(results) if results and results[0].profile == "big" else []
    ours = runs[0] if runs else None
    if ours is None or not ours.wall_s or ours.timed_out:
        return out
    out += targets(results, ours, latency_ms)
    out += default_politeness_target(results)
    for r in results:
        if not _is_peer(r) or not r.wall_s or not r.found:
            continue
        speed = (ours.urls_per_s or 0.0) / (r.urls_per_s or 1.0)
        rss = (r.rss_mb or 0.0) / (ours.rss_mb or 1.0)
        out.append(
            f"{ours.tool} vs {r.tool}: {speed:.1f}x the URLs/s"
            f"{' (peer timed out: a lower bound on its time)' if r.timed_out else ''},"
            f" peak RSS (all processes) {r.rss_mb or 0:.0f} MB vs harvester's"
            f" {ours.rss_mb or 0:.0f} MB ({rss:.2f}x)"
        )
    return out


def default_politeness_target(results: list[Result]) -> list[str]:
    """Issue 29's lab target: harvester with its default politeness at >= 4x Scrapy's
    wall time (the Scrapy row as configured here: no delay)."""
    scrapy = next((r for r in results if r.tool.startswith("scrapy") and r.wall_s), None)
    out = []
    for ours in _harvester_runs(results):
        if "default politeness" not in ours.tool or not ours.wall_s or scrapy is None:
            continue
        assert scrapy.wall_s is not None
        speed = scrapy.wall_s / ours.wall_s
        out.append(
            f"{'PASS' if speed >= 4 else 'MISS'}: {ours.tool} >= 4x {scrapy.tool}'s wall"
            f" ({scrapy.wall_s:.1f} s / {ours.wall_s:.1f} s): {speed:.1f}x"
        )
    return out


def big_targets(results: list[Result]) -> list[str]:
    """Issue 8's ``big`` targets: peak RSS below every peer's, the largest process
    under 80 MB, the parse stage >= 0.6 of the raw zlib + lxml loop."""
    out = []
    peers = [r for r in results if _is_peer(r) and r.found and r.rss_mb]
    partial = [r.tool for r in peers if r.found != r.expected]
    for ours in _harvester_runs(results):
        if ours.rss_mb is None or ours.rss_max_mb is None:
            continue
        if peers:
            lowest = min(peers, key=lambda r: r.rss_mb or 0.0)
            ok = ours.rss_mb < (lowest.rss_mb or 0.0)
            out.append(
                f"{'PASS' if ok else 'MISS'}: {ours.tool} peak RSS (all processes)"
                f" {ours.rss_mb:.0f} MB < every peer's (lowest: {lowest.tool},"
                f" {lowest.rss_mb or 0:.0f} MB)"
                + (f"; peers that found fewer URLs than expected: {partial}" if partial else "")
            )
        ok = ours.rss_max_mb < TARGET_LARGEST_MB
        out.append(
            f"{'PASS' if ok else 'MISS'}: {ours.tool} largest process {ours.rss_max_mb:.0f} MB"
            f" < {TARGET_LARGEST_MB:.0f} MB"
        )
    stage = next((r for r in results if r.tool.startswith("harvester parse stage")), None)
    raw = next((r for r in results if r.tool.startswith("limit: zlib + lxml (bench_parse")), None)
    if stage and raw and stage.urls_per_s and raw.urls_per_s:
        ratio = stage.urls_per_s / raw.urls_per_s
        out.append(
            f"{'PASS' if ratio >= TARGET_PARSE_RATIO else 'MISS'}: harvester parse stage /"
            f" raw zlib + lxml limit = {ratio:.2f} in URLs/s (target >= {TARGET_PARSE_RATIO})"
        )
    return out


def scale_targets(
    results: list[Result], hosts: int, latency_ms: int, suffix: str = ""
) -> list[str]:
    """Issue 8's ``scale`` target: harvester's peak RSS at 20,000 hosts within 25 % of its
    peak RSS at 2,000 hosts (same per-host content), from the other run's results.json."""
    other = 2_000 if hosts != 2_000 else 20_000
    path = OUT_ROOT / f"run-scale-h{other}-l{latency_ms}{suffix}" / "results.json"
    if not path.exists():
        return [f"scale: no {path.relative_to(ROOT)} to compare with (run --hosts {other})"]
    other_run = json.loads(path.read_text())
    then = {r["tool"]: r for r in other_run["results"]}
    here = f"{_git_head()} ({_tree_state()})"
    there = other_run.get("git", "unknown")
    out = [] if there == here else [f"CAUTION: harvester differs: {here} here, {there} there"]
    for ours in _harvester_runs(results):
        now, prev = ours.record(), then.get(ours.tool)
        if prev is None or not prev.get("peak_rss_mb") or not now["peak_rss_mb"]:
            continue
        small, large = (prev, now) if hosts > other else (now, prev)
        ratio = large["peak_rss_mb"] / small["peak_rss_mb"]
        out.append(
            f"{'PASS' if ratio <= 1.25 else 'MISS'}: {ours.tool} peak RSS (all processes) at"
            f" {max(hosts, other):,} hosts {large['peak_rss_mb']:.0f} MB vs"
            f" {small['peak_rss_mb']:.0f} MB at {min(hosts, other):,} hosts: {ratio:.2f}x"
            f" (target <= 1.25x); largest process {large['largest_process_mb'] or 0:.0f} MB vs"
            f" {small['largest_process_mb'] or 0:.0f} MB; other run: {path.relative_to(ROOT)}"
        )
    return out


def targets(results: list[Result], ours: Result, latency_ms: int) -> list[str]:
    """Issue 8's speed targets that this run can judge, as PASS/MISS lines."""
    peers = [r for r in results if _is_peer(r) and r.found and r.urls_per_s]
    out = []
    if not ours.exact:
        out.append(f"MISS: {ours.tool}'s URLs found differ from the ground truth")
    if not peers or not ours.urls_per_s or ours.profile != "many":
        return out
    speed = {r.tool: ours.urls_per_s / (r.urls_per_s or 1.0) for r in peers}
    if latency_ms == 0:
        fastest = min(speed, key=lambda t: speed[t])
        out.append(
            f"{'PASS' if speed[fastest] >= 4 else 'MISS'}: harvester >= 4x the fastest peer"
            f" ({fastest}): {speed[fastest]:.1f}x"
        )
        others = {t: v for t, v in speed.items() if t != fastest}
        if others:
            worst = min(others, key=lambda t: others[t])
            out.append(
                f"{'PASS' if others[worst] >= 6 else 'MISS'}: harvester >= 6x the others"
                f" (closest: {worst}): {others[worst]:.1f}x"
            )
    else:
        slow = {t: v for t, v in speed.items() if not t.startswith("scrapy")}
        if slow:
            worst = min(slow, key=lambda t: slow[t])
            out.append(
                f"{'PASS' if slow[worst] >= 20 else 'MISS'}: harvester >= 20x usp, trafilatura,"
                f" advertools with latency (closest: {worst}): {slow[worst]:.1f}x"
            )
    return out


# --------------------------------------------------------------------------- tools


def tally_lines(path: Path) -> UrlTally:
    """Distinct URLs per host of a one-URL-a-line file."""
    tally = UrlTally()
    if not path.exists():
        return tally
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            url = line.strip()
            if url:
                tally.add(urlsplit(url).hostname or "", url)
    return tally


def _check(result: Result, tally: UrlTally, truth: GroundTruth) -> None:
    problems = tally.compare_salvaged(truth)
    if problems and problems[-1].startswith("SALVAGED"):
        result.notes.append(problems.pop())
    result.found = tally.distinct
    result.exact = not problems
    if problems:
        result.notes.append(f"{len(problems)} hosts differ from the truth (e.g. {problems[0]})")
    if tally.records != tally.distinct:
        result.notes.append(f"{tally.records:,} URLs reported")


def _proc_fields(result: Result, p: ProcResult) -> None:
    result.wall_s = p.wall_s
    result.cpu_s = p.cpu_s
    # The tree's peak is at least its largest process's own peak (VmHWM, exact) and at
    # least the largest sampled sum: the larger of the two (both are lower bounds).
    result.rss_mb = max(p.peak_rss_sum_mb, p.peak_rss_max_mb)
    result.timed_out = p.timed_out
    result.rss_max_mb = p.peak_rss_max_mb
    result.pss_mb = p.peak_pss_sum_mb or None
    result.per_process = p.per_process
    if p.processes > 1:
        parts = ", ".join(f"{_role(cmd)} {mb:.0f}" for _, cmd, mb in p.per_process)
        result.notes.append(
            f"{p.processes} processes, own peaks (VmHWM) MB: {parts}; their sum"
            f" {p.peak_rss_hwm_sum_mb:.0f} MB bounds the peak RSS column from above;"
            f" peak Pss sum (shared pages counted once) {p.peak_pss_sum_mb:.0f} MB"
        )


def _role(cmd: str) -> str:
    """What a process of a measured tree is, from its command line."""
    if "resource_tracker" in cmd:
        return "resource tracker"
    if "harvester-worker" in cmd or "spawn_main" in cmd or "multiprocessing" in cmd:
        return "worker"
    if "forkserver" in cmd:
        return "forkserver"
    return "main"


def run_peer(
    name: str, truth: GroundTruth, seeds: Path, out_dir: Path, args: argparse.Namespace
) -> Result:
    result = Result(PEER_LABELS[name], truth.profile, None, None, None, None, truth.total_urls)
    output = out_dir / f"{name}.urls"
    output.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "benchmarks.peers", name, "--seeds", str(seeds)]
    cmd += ["--out", str(output), "--concurrency", str(args.concurrency)]
    with (out_dir / f"{name}.stderr").open("w") as err:
        p = run_measured(cmd, timeout=args.timeout, stderr=err)
    _proc_fields(result, p)
    info: dict[str, Any] = {}
    with contextlib.suppress(ValueError, IndexError):
        info = json.loads(p.stdout.strip().splitlines()[-1])
    if p.timed_out:
        result.notes.append(f"TIMED OUT at {args.timeout:.0f} s: URLs are what it had written")
    elif p.returncode != 0:
        result.notes.append(f"exit {p.returncode} (see {name}.stderr)")
    if info.get("errors"):
        result.notes.append(f"errors by host: {info['errors']}")
    result.notes.append(PEER_NOTES[name])
    _check(result, tally_lines(output), truth)
    if name == "trafilatura" and not result.found and not p.timed_out:
        result.notes.append(
            "NOT MEASURABLE here: sitemap_search returns [] for IP-address hosts"
            " (courlan.get_hostinfo finds no domain in http://127.1.0.1:8765: 'invalid URL',"
            " and its same-domain filter drops IP links), and it wants HEAD / = 200 (no"
            " homepage in the corpus); see the patched row"
        )
    return result


PEER_NOTES: Final = {
    "usp": "usp.tree.sitemap_tree_for_homepage per host, one host at a time, all_pages();"
    " defaults (robots.txt + its known-path probes)",
    "advertools": "sitemap_to_df(robots.txt) per host, one host at a time; children via its"
    " documented thread pool, max_workers = --concurrency; given robots.txt only, as the"
    " issue says (a host without one yields nothing)",
    "scrapy": "SitemapSpider over all robots.txt in one CrawlerProcess; documented"
    " sitemap_filter hook records urlset locs and follows no page; CONCURRENT_REQUESTS ="
    " 32 x --concurrency, CONCURRENT_REQUESTS_PER_DOMAIN = --concurrency, ROBOTSTXT_OBEY off,"
    " no delay/autothrottle/retry; sitemap_urls = robots.txt only (a host without one"
    " yields nothing)",
    "trafilatura": "sitemaps.sitemap_search per host, one host at a time; documented options"
    " SSRF_PROTECTION = off (loopback), sleep_time = 0 and MAX_FILE_SIZE = 50 MiB (the"
    " protocol cap; its default 20 MB drops big's rich child)",
    "trafilatura-ip": "as trafilatura, plus a PATCH (not a documented option):"
    " trafilatura.sitemaps.get_hostinfo/extract_domain replaced by the URL's host so IP"
    " hosts are accepted, is_live_page (HEAD /: 404 here) by True; fetching and parsing are"
    " trafilatura's own; its courlan.clean_url sorts query parameters, so hosts with"
    " multi-parameter locs differ from the truth by digest, not by count",
}


def run_limit(which: str, truth: GroundTruth, args: argparse.Namespace) -> Result:
    label = "limit: aiohttp download" if which == "net" else "limit: zlib + lxml, 1 core"
    result = Result(label, truth.profile, None, None, None, None, truth.total_urls)
    hosts_in_flight = args.workers * args.hosts_in_flight
    extra = (
        ["--net-hosts-in-flight", str(hosts_in_flight), "--concurrency", str(args.concurrency)]
        if which == "net"
        else ["--cpu-loop", "element"]
    )
    try:
        r = _spawn_limit(which, truth.out_dir, extra, args.timeout)
    except StepError as exc:
        result.notes.append(f"failed: {exc}")
        return result
    p: ProcResult = r.pop("process")
    _proc_fields(result, p)
    result.wall_s = r["seconds"]  # the loop, without interpreter start-up
    result.found = r["urls"]
    result.exact = r["urls"] == truth.total_urls
    if which == "net":
        result.notes.append(
            f"bench_pipeline net limit: {hosts_in_flight} hosts x {args.concurrency} conns,"
            f" {r['requests']} requests, {r['bytes'] / 1e6:.0f} MB, {r['errors']} errors;"
            " counts the corpus URLs (downloads, parses nothing); time of the loop"
        )
    else:
        result.notes.append(
            f"bench_pipeline CPU limit (element loop) from disk, {r['cpu_seconds']:.2f} CPU s;"
            f" / {args.workers} workers = {r['seconds'] / args.workers:.2f} s; time of the loop"
        )
    return result


def run_parse_stage(truth: GroundTruth, args: argparse.Namespace) -> list[Result]:
    """harvester's parse stage alone (``SitemapReader``) vs the raw zlib + lxml loop.

    bench_parse's ``--one ours FILE`` and ``--one raw FILE`` on every urlset of the corpus
    (for ``big``: its three children), each in a fresh interpreter, interleaved, best of
    ``PARSE_REPEAT``; times summed over the files. Peak RSS is the largest ``VmHWM``.
    """
    from benchmarks.bench_parse import spawn

    manifest = load_manifest(truth.out_dir)
    files = [
        (truth.out_dir / f["file"], int(f["urls"]))
        for h in manifest["hosts"]
        for f in h["files"]
        if f["kind"] == "urlset" and not f.get("broken")
    ]
    labels = {
        "ours": "harvester parse stage: SitemapReader, 1 core",
        "raw": "limit: zlib + lxml (bench_parse raw), 1 core",
    }
    results = {
        m: Result(lbl, truth.profile, None, None, None, None, truth.total_urls)
        for m, lbl in labels.items()
    }
    if len(files) > 20:
        for r in results.values():
            r.notes.append(f"skipped: {len(files)} files (parse-stage is for big)")
        return list(results.values())
    best: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        for _ in range(PARSE_REPEAT):
            for path, urls in files:
                for mode in ("raw", "ours"):
                    rec = spawn(mode, path, urls)
                    key = (mode, path.name)
                    if key not in best or rec["seconds"] < best[key]["seconds"]:
                        peak = max(rec["rss_peak_kib"], best.get(key, {}).get("rss_peak_kib", 0))
                        best[key] = {**rec, "rss_peak_kib": peak}
                    else:
                        best[key]["rss_peak_kib"] = max(
                            best[key]["rss_peak_kib"], rec["rss_peak_kib"]
                        )
    except SystemExit as exc:
        for r in results.values():
            r.notes.append(f"failed: {str(exc).splitlines()[0]}")
        return list(results.values())
    for mode, result in results.items():
        recs = [best[(mode, path.name)] for path, _ in files]
        result.wall_s = sum(r["seconds"] for r in recs)
        result.found = sum(r["urls"] for r in recs)
        result.exact = result.found == truth.total_urls
        result.rss_mb = result.rss_max_mb = max(r["rss_peak_kib"] for r in recs) * 1024 / 1e6
        per_file = ", ".join(f"{r['file']} {r['seconds']:.2f} s" for r in recs)
        result.notes.append(
            f"bench_parse --one {mode} per file, fresh interpreter, best of {PARSE_REPEAT}"
            f" (interleaved); time of the loop, summed: {per_file}; RSS = largest VmHWM"
        )
    return list(results.values())


def run_ours(
    truth: GroundTruth,
    seeds: Path,
    out_dir: Path,
    args: argparse.Namespace,
    workers: int,
    *,
    defaults: bool = False,
) -> Result:
    """One harvester row: bench_pipeline's config, or (``defaults``) harvester's own
    politeness and admission with only ``fetch.allow_private`` set."""
    label = (", default politeness" if defaults else "") + (", state off" if args.no_state else "")
    result = Result(
        f"harvester (--workers {workers}{label})",
        truth.profile,
        None,
        None,
        None,
        None,
        truth.total_urls,
    )
    ns = argparse.Namespace(
        harvester=args.harvester,
        concurrency=args.concurrency,
        rate=0.0 if defaults else 1000.0,
        hosts_in_flight=args.hosts_in_flight,
        workers=workers,
        timeout=args.harvester_timeout,
        config_extra="[state]\nenabled = false\n" if args.no_state else "",
    )
    try:
        r = run_harvester(truth, seeds, out_dir, ns)
    except StepError as exc:
        first = str(exc).splitlines()[0]
        result.notes.append(f"failed: {first}")
        return result
    p: ProcResult = r.pop("process")
    _proc_fields(result, p)
    result.found = r["urls"]
    # bench_pipeline's check already accepts messy's salvaged prefixes (its "salvaged").
    result.exact = r["url_problem_count"] == 0
    if r.get("salvaged"):
        result.notes.append(r["salvaged"])
    if r["url_problem_count"]:
        result.notes.append(f"{r['url_problem_count']} hosts differ: {r['url_problems'][0]}")
    if defaults:
        result.notes.append(
            "harvester run with its defaults (politeness, admission) and allow_private only;"
            " output checked host by host"
        )
        return result
    result.notes.append(
        f"harvester run, bench_pipeline config (allow_private, {args.concurrency} conns/host,"
        f" {args.hosts_in_flight} hosts in flight per worker); output checked host by host"
    )
    return result


# --------------------------------------------------------------------------- server


def server_shards(hosts: int, nofile: int) -> int:
    """Server processes needed for one listening socket per host under ``nofile`` each."""
    per_process = max(1, nofile - FD_MARGIN)
    return max(1, -(-hosts // per_process))


class ServerGroup:
    """``shards`` server processes (``--shard K/N``), each serving every N-th host.

    One process when the file-descriptor limit allows a listening socket per host (every
    profile but ``scale`` at 20,000 hosts, whose hard limit here is 20,000 and may not be
    raised: no CAP_SYS_RESOURCE); else several. Each shard reads only its hosts' files.
    Stopped by pid (``ServerProcess``), in reverse order.
    """

    def __init__(self, corpus: Path, latency: float, out_dir: Path, shards: int) -> None:
        self.procs = [
            ServerProcess(
                corpus,
                latency,
                out_dir / ("server.stderr" if shards == 1 else f"server-{k}.stderr"),
                [] if shards == 1 else ["--shard", f"{k}/{shards}"],
            )
            for k in range(shards)
        ]
        self.seeds: Path | None = None
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> ServerGroup:
        with contextlib.ExitStack() as stack:
            for proc in self.procs:
                stack.enter_context(proc)
            self._stack = stack.pop_all()
        self.seeds = self.procs[0].seeds
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def summary(self) -> str:
        if len(self.procs) == 1:
            return self.procs[0].summary()
        requests = not_found = 0
        megabytes = 0.0
        for proc in self.procs:
            # "served N requests (M 404, R redirects), X MB"
            words = proc.summary().replace("(", " ").replace(",", " ").split()
            with contextlib.suppress(ValueError, IndexError):
                requests += int(words[1])
                not_found += int(words[3])
                megabytes += float(words[-2])
        return (
            f"{len(self.procs)} processes (--shard K/{len(self.procs)}, file-descriptor limit)"
            f" served {requests} requests ({not_found} 404), {megabytes:.1f} MB"
        )


# --------------------------------------------------------------------------- main


def _git_head() -> str:
    head = ROOT / ".git" / "HEAD"
    try:
        ref = head.read_text().strip()
        if ref.startswith("ref: "):
            return (ROOT / ".git" / ref[5:]).read_text().strip()[:10]
        return ref[:10]
    except OSError:
        return "unknown"


def _tree_state() -> str:
    """``harvester/`` as measured: clean at the commit, or with uncommitted changes."""
    try:
        proc = subprocess.run(
            ["git", "status", "--porcelain", "--", "harvester"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return "harvester/ state unknown"
    changed = len(proc.stdout.splitlines())
    return "harvester/ clean" if changed == 0 else f"harvester/ with {changed} uncommitted files"


def machine() -> str:
    mem = ""
    with contextlib.suppress(OSError, StopIteration, ValueError):
        with open("/proc/meminfo") as fh:
            kib = int(next(ln for ln in fh if ln.startswith("MemTotal")).split()[1])
        mem = f", {kib * 1024 / 1e9:.1f} GB RAM"
    return (
        f"{_machine()}{mem}; {platform.system()} {platform.release()};"
        f" Python {platform.python_version()}"
    )


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for dist in (
        "harvester",
        "lxml",
        "aiohttp",
        "ultimate-sitemap-parser",
        "advertools",
        "scrapy",
        "trafilatura",
    ):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            out.append(f"{dist} (not installed)")
    return ", ".join(out)


def write_results(
    path: Path, table: str, header: str, extra: list[str], command: str, results_json: Path
) -> None:
    """Replace the section of ``path`` for this profile/hosts/latency (others are kept)."""
    key = f"<!-- run: {header} -->"
    section = "\n".join(
        [
            key,
            f"## {header}",
            "",
            f"Command: `{command}`",
            "",
            f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()};"
            f" git {_git_head()} ({_tree_state()}); {versions()}.",
            "",
            table,
            "",
            *(f"- {line}" for line in extra),
            f"- records: `{results_json.relative_to(ROOT)}`",
            "",
        ]
    )
    intro = (
        "# Benchmark results\n\n"
        "Written by `python -m benchmarks run ... --write-results` (see `benchmarks/run.py`"
        " and `benchmarks/README.md`); each section is one run, replaced when the same"
        " profile, hosts, URLs, latency and state setting run again. Wall s includes"
        " interpreter start-up and imports, except for the two limits and the parse stage"
        " (their loop only). Peak RSS = the larger of the largest sampled sum of VmRSS over"
        " the tool's process tree (every 50 ms) and its largest process's VmHWM; largest"
        " process = the largest VmHWM of one process of the tree (sections from before"
        " 02:00 UTC show the sampled sum only, and no largest-process column). MB = 10**6"
        " bytes. harvester changes while these are measured: each section names its commit"
        " (and, from 02:10 UTC, whether harvester/ had uncommitted changes); compare"
        " harvester rows across sections with care.\n\n"
    )
    text = path.read_text() if path.exists() else intro
    sections = text.split("<!-- run: ")
    kept = [s for s in sections[1:] if not s.startswith(header + " -->")]
    parts = [sections[0].rstrip() + "\n\n"] + ["<!-- run: " + s.rstrip() + "\n\n" for s in kept]
    parts.append(section)
    path.write_text("".join(parts).rstrip() + "\n")


def run(args: argparse.Namespace) -> int:
    default_tools = DEFAULT_TOOLS.get(args.profile, tuple(t for t in TOOLS if t != "parse-stage"))
    tools = args.tools.split(",") if args.tools else list(default_tools)
    unknown = set(tools) - set(TOOLS)
    if unknown:
        print(f"benchmarks run: unknown tools {sorted(unknown)}; known: {TOOLS}", file=sys.stderr)
        return 2
    for var in PROXY_VARS:  # every tool is loopback-only; no proxy is ever wanted
        os.environ.pop(var, None)
    truth = prepare_corpus(args, "benchmarks run")
    if truth is None:
        return 2
    # One listening socket per host in the server (a child: it inherits the limit; it also
    # raises its own). 20,000 hosts need more than a 20,000 limit.
    nofile, _ = raise_nofile(truth.hosts + FD_MARGIN)
    print(f"# RLIMIT_NOFILE {nofile}", file=sys.stderr)
    latency_ms = round(args.latency * 1000)
    tag = f"run-{args.profile}-h{truth.hosts}-l{latency_ms}" + ("-nostate" if args.no_state else "")
    out_dir = args.out or OUT_ROOT / tag
    out_dir.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    shards = server_shards(truth.hosts, nofile)
    with ServerGroup(truth.out_dir, args.latency, out_dir, shards) as server:
        assert server.seeds is not None
        for tool in tools:
            print(f"# {tool} ...", file=sys.stderr, flush=True)
            if tool == "harvester":
                for workers in args.worker_list:
                    sub = out_dir / f"harvester-w{workers}"
                    sub.mkdir(exist_ok=True)
                    result = run_ours(truth, server.seeds, sub, args, workers)
                    results.append(result)
                    print(json.dumps(result.record()), flush=True)
                    if args.harvester_defaults:
                        sub = out_dir / f"harvester-w{workers}-defaults"
                        sub.mkdir(exist_ok=True)
                        result = run_ours(truth, server.seeds, sub, args, workers, defaults=True)
                        results.append(result)
                        print(json.dumps(result.record()), flush=True)
                continue
            if tool == "parse-stage":
                for result in run_parse_stage(truth, args):
                    results.append(result)
                    print(json.dumps(result.record()), flush=True)
                continue
            if tool == "net-limit":
                result = run_limit("net", truth, args)
            elif tool == "cpu-limit":
                result = run_limit("cpu", truth, args)
            else:
                result = run_peer(tool, truth, server.seeds, out_dir, args)
            results.append(result)
            print(json.dumps(result.record()), flush=True)
    header = (
        f"{args.profile}, {truth.hosts:,} hosts, {truth.total_urls:,} URLs, latency {latency_ms} ms"
        + (", harvester state off" if args.no_state else "")
    )
    table = markdown(results)
    extra = ratios(results, latency_ms)
    if args.profile == "scale":
        extra += scale_targets(
            results, truth.hosts, latency_ms, "-nostate" if args.no_state else ""
        )
    extra.append(f"server: {server.summary()}")
    print()
    print(f"{header}; {machine()}")
    print()
    print(table)
    print()
    for line in extra:
        print(f"- {line}")
    results_json = out_dir / "results.json"
    results_json.write_text(
        json.dumps(
            {
                "profile": args.profile,
                "hosts": truth.hosts,
                "latency_ms": latency_ms,
                "machine": machine(),
                "git": f"{_git_head()} ({_tree_state()})",
                "results": [r.record() for r in results],
            },
            indent=1,
        )
        + "\n"
    )
    if args.write_results:
        command = "python -m benchmarks " + shlex.join(
            sys.argv[1:] if args.argv is None else args.argv
        )
        write_results(RESULTS_MD, table, header, extra, command, results_json)
        print(f"- written to {RESULTS_MD}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run harvester, the raw limits and the peer tools on one loopback corpus.",
    )
    sub = ap.add_subparsers(dest="command", required=True)
    rp = sub.add_parser("run", help="run the tools, print one markdown table")
    rp.add_argument("--profile", default="many", help="webgen profile (default many)")
    rp.add_argument("--hosts", type=int, help="hosts (many: 2,000, messy: 500, scale: 20,000)")
    rp.add_argument("--seed", type=int, default=1)
    rp.add_argument("--port", type=int, default=DEFAULT_PORT)
    rp.add_argument("--corpus", type=Path, help="corpus directory (default benchmarks/.corpus)")
    rp.add_argument("--out", type=Path, help="output directory (default benchmarks/out/run-*)")
    rp.add_argument("--latency", type=float, default=0.0, help="server latency per response, s")
    rp.add_argument("--timeout", type=float, default=600.0, help="time limit per peer/limit, s")
    rp.add_argument("--harvester-timeout", type=float, default=1800.0)
    rp.add_argument("--tools", help=f"comma list of {','.join(TOOLS)} (default all)")
    rp.add_argument(
        "--workers",
        help="harvester --workers, a comma list runs it once per value (default 2; big: 2,1)",
    )
    rp.add_argument("--concurrency", type=int, default=4, help="connections per host")
    rp.add_argument("--hosts-in-flight", type=int, default=64, help="per harvester worker")
    rp.add_argument("--harvester", help="command to run instead of .venv/bin/harvester")
    rp.add_argument(
        "--harvester-defaults",
        action="store_true",
        help="also run harvester with its default politeness and admission (a row beside)",
    )
    rp.add_argument(
        "--no-state",
        action="store_true",
        help="harvester with [state] enabled = false (no SQLite ledger in the main process)",
    )
    rp.add_argument("--write-results", action="store_true", help="update benchmarks/RESULTS.md")
    args = ap.parse_args(argv)
    args.argv = argv
    try:
        args.worker_list = [
            int(w) for w in (args.workers or DEFAULT_WORKERS.get(args.profile, "2")).split(",")
        ]
    except ValueError:
        ap.error("--workers: a comma list of integers please")
    args.workers = args.worker_list[0]
    if args.latency < 0 or args.timeout <= 0 or min(args.worker_list) < 1:
        ap.error("--latency >= 0, --timeout > 0 and --workers >= 1 please")
    return run(args)
