"""Verdicts on a whole run (issue 48's cost target): the lab web's `harvester run`, verdicts off/on.

The issue asks for at most 5 % of the run's CPU on the lab benchmark with every host's
robots.txt holding 20 rules. This measures that run, not the per-URL path alone
(``bench_verdicts``): the lab web (``benchmarks.webgen``, profile ``many``) with
``robots_rules=20`` (each host's robots.txt: 20 rules for ``*``, 18 Disallow and 2 Allow,
about a sixth of the URLs disallowed), served on loopback by ``benchmarks.server``, and
``harvester run`` with bench_pipeline's config, once with ``policy.verdicts`` off and
once on (every record gets ``robots``).

Figure: the CPU seconds of the whole run (the parent and every worker: ``RUSAGE_CHILDREN``
around the process; the server's own CPU is not in it). Runs go in alternated pairs
(off/on, then on/off, ...) so both sides see the same drift of the machine's load; the
cost is the median of the pairs' ratios, with the smallest and largest, and the load
average at each run's start. Each run's output is checked against the ground truth (every
URL, once) and the ``on`` runs' records against the count of disallowed URLs.

Usage::

    python -m benchmarks.bench_verdicts_run                      # 400 hosts, 3 pairs
    python -m benchmarks.bench_verdicts_run --hosts 2000 --pairs 5
    python -m benchmarks.bench_verdicts_run --harvester \
        "env PYTHONPATH=CHECKOUT .venv/bin/python -P -m harvester"

(``-P``: the runs' working directory is this checkout, which ``-m`` would put first.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any, Final

from benchmarks.bench_pipeline import OUT_ROOT, ServerProcess, StepError, run_harvester
from benchmarks.webgen import DEFAULT_PORT, GroundTruth, default_out_dir, describe, generate

VARIANTS: Final = {"off": "", "on": "[policy]\nverdicts = true\n"}


def one_run(
    name: str, truth: GroundTruth, seeds: Path, out: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """One ``harvester run`` of variant ``name``; its CPU s, wall s, records and labels."""
    out.mkdir(parents=True, exist_ok=True)
    ns = argparse.Namespace(**vars(args), config_extra=VARIANTS[name])
    load = os.getloadavg()[0]
    result = run_harvester(truth, seeds, out, ns)
    if result["url_problem_count"]:
        raise StepError(f"{name}: the output is not the ground truth: {result['url_problems']}")
    body = (out / "urls.jsonl").read_bytes()
    proc = result["process"]
    return {
        "variant": name,
        "cpu_s": round(proc.cpu_s, 2),
        "wall_s": round(proc.wall_s, 2),
        "load": round(load, 1),
        "records": result["records"],
        "disallowed": body.count(b'"robots":"disallowed"'),
        "allowed": body.count(b'"robots":"allowed"'),
    }


def pairs(args: argparse.Namespace, truth: GroundTruth, seeds: Path) -> list[dict[str, Any]]:
    """``args.pairs`` alternated pairs; one dict per run, in the order run."""
    runs: list[dict[str, Any]] = []
    out_root = args.out or OUT_ROOT / f"verdicts-run-h{truth.hosts}-w{args.workers}"
    for number in range(args.pairs):
        order = ("off", "on") if number % 2 == 0 else ("on", "off")
        for name in order:
            run = one_run(name, truth, seeds, out_root / name, args)
            run["pair"] = number + 1
            runs.append(run)
            print(f"# pair {number + 1} {name}: {json.dumps(run)}", file=sys.stderr, flush=True)
    return runs


def table(runs: list[dict[str, Any]]) -> str:
    """The pairs side by side, then the median cost and its spread."""
    lines = [
        "| pair | off CPU s | on CPU s | on vs off | load at start (off / on)"
        " | wall s (off / on) |",
        "| ---: | ---: | ---: | ---: | --- | --- |",
    ]
    ratios: list[float] = []
    for number in sorted({r["pair"] for r in runs}):
        off, on = (
            next(r for r in runs if r["pair"] == number and r["variant"] == v) for v in VARIANTS
        )
        ratio = on["cpu_s"] / off["cpu_s"] - 1.0
        ratios.append(ratio)
        lines.append(
            f"| {number} | {off['cpu_s']:.2f} | {on['cpu_s']:.2f} | {100 * ratio:+.1f} % |"
            f" {off['load']} / {on['load']} | {off['wall_s']:.0f} / {on['wall_s']:.0f} |"
        )
    off_cpu = statistics.median(r["cpu_s"] for r in runs if r["variant"] == "off")
    on_cpu = statistics.median(r["cpu_s"] for r in runs if r["variant"] == "on")
    lines.append(
        f"| median | {off_cpu:.2f} | {on_cpu:.2f} | {100 * statistics.median(ratios):+.1f} %"
        f" (pairs {100 * min(ratios):+.1f} .. {100 * max(ratios):+.1f} %) | | |"
    )
    on_runs = [r for r in runs if r["variant"] == "on"]
    lines.append("")
    lines.append(
        f"records per run: {runs[0]['records']:,}; with verdicts: {on_runs[0]['allowed']:,}"
        f" allowed, {on_runs[0]['disallowed']:,} disallowed"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=400, help="hosts of the many profile")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=DEFAULT_PORT)
    ap.add_argument("--pairs", type=int, default=3, help="alternated off/on pairs (>= 1)")
    ap.add_argument("--workers", type=int, default=2, help="harvester --workers")
    ap.add_argument("--concurrency", type=int, default=4, help="connections per host")
    ap.add_argument("--rate", type=float, default=1000.0, help="requests/s per host")
    ap.add_argument("--hosts-in-flight", type=int, default=0, help="0: the harvester's auto")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    ap.add_argument("--harvester", help="command to run instead of .venv/bin/harvester")
    ap.add_argument("--out", type=Path, help="output directory (default benchmarks/out/..)")
    args = ap.parse_args(argv)
    corpus = default_out_dir("many", args.hosts, args.seed, args.port, 20)
    truth = generate(
        "many", corpus, seed=args.seed, hosts=args.hosts, port=args.port, robots_rules=20
    )
    print(f"# corpus: {describe(truth)}", file=sys.stderr)
    log = corpus / "server.log"
    try:
        with ServerProcess(corpus, 0.0, log) as server:
            assert server.seeds is not None
            runs = pairs(args, truth, server.seeds)
    except StepError as exc:
        print(f"bench_verdicts_run: {exc}", file=sys.stderr)
        return 1
    print(table(runs))
    print(json.dumps({"bench": "verdicts_run", "hosts": truth.hosts, "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
