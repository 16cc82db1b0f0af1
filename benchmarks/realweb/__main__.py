"""``python -m benchmarks.realweb``: harvester and Scrapy on a web that looks like the web.

In: ``--domains N`` (default 2000), ``--seed`` (1), ``--tools`` (``harvester,scrapy``;
also ``scrapy-tuned``), ``--timeout`` (seconds per tool), ``--with-earlier`` (add the
rows of tools run before on the same web), ``--write-results``. Out: one JSON line per tool and a
markdown table on stdout (``report.markdown``); with ``--write-results`` the section of
this (domains, seed) in ``benchmarks/realweb/RESULTS.md``; everything of the run in
``benchmarks/out/realweb-d<N>-s<seed>/`` (git-ignored): certificates, seeds, each tool's
output, logs and ``result.json``.

Steps: build the web (``web.build``: kinds, pages and the truth, seeded), make a test CA
for this run and one EC certificate per domain that speaks TLS (``trustme``; the CA alone
is ``certs/bundle.pem``), write the seeds, then for each tool a fresh network namespace
(``netns.in_namespace``: nftables, DNS and HTTP servers, the measured tool), then the
figures (``report``).

harvester runs as a user runs it, with its default settings and only what this web
needs: ``harvester run -i seeds.txt -o out.jsonl --workers 2 --allow 127.0.0.0/8``
(the web's addresses are loopback ones, which the SSRF guard refuses unless allowed),
the CA through ``SSL_CERT_FILE`` (and ``fetch.ca_bundle`` when ``FetchConfig`` has that
setting), and no other setting. Scrapy runs ``benchmarks.realweb.peer`` (SitemapSpider,
default settings; ``scrapy-tuned``: ``peer.TUNED``). The web and its mix:
``benchmarks/realweb/web.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Final

from benchmarks.bench_pipeline import ROOT, compile_bytecode, harvester_cmd
from benchmarks.realweb import netns, report
from benchmarks.realweb.web import Site, build, write_seeds

TLS_KINDS: Final = frozenset(
    {"small", "www", "big", "fallback", "soft404", "nosite", "robots_5xx", "robots_hang"}
)
TOOLS: Final = ("harvester", "scrapy", "scrapy-tuned")
RESULTS: Final = ROOT / "benchmarks" / "realweb" / "RESULTS.md"


def make_certs(sites: list[Site], certs: Path) -> float:
    """The run's CA (``ca.pem``, ``bundle.pem``) and ``<domain>.pem`` (EC key + chain)."""
    import trustme

    started = time.perf_counter()
    if certs.exists():
        shutil.rmtree(certs)
    certs.mkdir(parents=True)
    ca = trustme.CA(key_type=trustme.KeyType.ECDSA)
    ca.cert_pem.write_to_path(str(certs / "ca.pem"))
    ca.cert_pem.write_to_path(str(certs / "bundle.pem"))
    for site in sites:
        if site.kind in TLS_KINDS:
            cert = ca.issue_cert(site.name, f"www.{site.name}", key_type=trustme.KeyType.ECDSA)
            cert.private_key_and_cert_chain_pem.write_to_path(str(certs / f"{site.name}.pem"))
    return time.perf_counter() - started


def harvester_config(run_dir: Path, extra: str) -> list[str]:
    """``--config`` arguments: only settings this web needs that ``Config`` has, + ``extra``."""
    from harvester.config import FetchConfig

    text = extra
    if "ca_bundle" in {f.name for f in dataclasses.fields(FetchConfig)}:
        line = f'ca_bundle = "{run_dir / "certs" / "bundle.pem"}"\n'
        # One [fetch] table: the extra config's, when it has one (TOML refuses two).
        if "[fetch]\n" in text:
            text = text.replace("[fetch]\n", "[fetch]\n" + line, 1)
        else:
            text = f"[fetch]\n{line}\n{text}"
    if not text:
        return []
    path = run_dir / "harvester.toml"
    path.write_text(text)
    return ["--config", str(path)]


def tool_cmd(tool: str, run_dir: Path, args: argparse.Namespace) -> list[str]:
    """The measured command of ``tool`` (run in ``RUN_DIR/<tool>/``)."""
    if tool == "harvester":
        extra = args.harvester_config.read_text() if args.harvester_config else ""
        return [
            *harvester_cmd(),
            "run",
            "-i",
            str(run_dir / "seeds.txt"),
            "-o",
            str(run_dir / "harvester" / "out.jsonl"),
            "--workers",
            str(args.workers),
            "--allow",
            "127.0.0.0/8",
            *harvester_config(run_dir, extra),
        ]
    return [
        sys.executable,
        "-m",
        "benchmarks.realweb.peer",
        "--seeds",
        str(run_dir / "seeds-robots.txt"),
        "--out",
        str(run_dir / tool / "urls.txt"),
        *(["--tuned"] if tool == "scrapy-tuned" else []),
    ]


def run_tool(tool: str, sites: list[Site], run_dir: Path, args: argparse.Namespace) -> report.Row:
    """One tool in its own namespace, then its row."""
    tool_dir = run_dir / tool
    if tool_dir.exists():
        shutil.rmtree(tool_dir)
    tool_dir.mkdir(parents=True)
    cmd = tool_cmd(tool, run_dir, args)
    web = ["--domains", str(args.domains), "--seed", str(args.seed)]
    argv = [*web, "--run-dir", str(run_dir), "--tool", tool, "--timeout", str(args.timeout)]
    proc = netns.in_namespace([*argv, "--", *cmd], timeout=args.timeout + 120)
    if proc.returncode != 0 or not (tool_dir / "result.json").exists():
        raise SystemExit(f"realweb: the {tool} run failed (exit {proc.returncode}); see {tool_dir}")
    return tool_row(tool, sites, run_dir)


def tool_row(tool: str, sites: list[Site], run_dir: Path) -> report.Row:
    """The row of ``tool`` from what its run left in ``RUN_DIR/<tool>/``."""
    tool_dir = run_dir / tool
    result: dict[str, Any] = json.loads((tool_dir / "result.json").read_text())
    if tool == "harvester":
        found = report.harvester_found(tool_dir / "out.jsonl")
        per_host = report.harvester_classes(tool_dir / "out.jsonl.hosts.jsonl")
        row = report.compare(tool, sites, found, {k: v[0] for k, v in per_host.items()}, result)
        row.slots = report.slot_seconds(sites, per_host)
    else:
        row = report.compare(tool, sites, report.lines_found(tool_dir / "urls.txt"), None, result)
        summary = [ln for ln in result["process"]["stdout"].splitlines() if ln.startswith("{")]
        if summary:
            info = json.loads(summary[-1])
            changed = "default settings" if tool == "scrapy" else f"settings {info['settings']}"
            row.notes.append(f"Scrapy {info.get('version')}, {changed}")
            (tool_dir / "stats.json").write_text(json.dumps(info, indent=1))
    if not result.get("nft", True):
        row.notes.append("no nft: refused = accept+reset, dropped = full queue")
    return row


def write_results(text: str, args: argparse.Namespace, machine: str) -> None:
    """Replace (or add) this (domains, seed) section of ``RESULTS.md``."""
    title = f"## {args.domains} domains, seed {args.seed}"
    body = f"{title}\n\n{machine}\n\n{text}\n"
    old = (
        RESULTS.read_text()
        if RESULTS.exists()
        else (
            "# realweb results\n\n"
            "`python -m benchmarks.realweb --domains N --seed S --write-results`"
            " writes its section here; see benchmarks/README.md (realweb) for the columns.\n"
        )
    )
    pattern = re.compile(rf"^{re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    new = pattern.sub(lambda _: body + "\n", old) if pattern.search(old) else f"{old}\n{body}"
    RESULTS.write_text(new.rstrip() + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.realweb", description=__doc__)
    ap.add_argument("--domains", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--tools",
        default="harvester,scrapy",
        help="comma list of harvester, scrapy (defaults), scrapy-tuned (peer.TUNED settings)",
    )
    ap.add_argument("--workers", type=int, default=2, help="harvester's --workers")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per tool, then killed")
    ap.add_argument("--out", type=Path, help="run directory (default benchmarks/out/realweb-…)")
    ap.add_argument(
        "--harvester-config",
        type=Path,
        help="extra TOML for harvester (tests only: the bench measures the defaults)",
    )
    ap.add_argument(
        "--with-earlier",
        action="store_true",
        help="also report the tools not in --tools whose earlier run on this web is in the"
        " run directory (e.g. Scrapy re-run alone)",
    )
    ap.add_argument("--write-results", action="store_true")
    args = ap.parse_args(argv)
    tools = [t for t in args.tools.split(",") if t]
    if unknown := set(tools) - set(TOOLS):
        ap.error(f"unknown tools: {', '.join(sorted(unknown))}")
    why = netns.can_unshare()
    if why is not None:
        print(f"realweb: cannot run: {why}", file=sys.stderr)
        return 3
    run_dir: Path = (
        args.out or ROOT / "benchmarks" / "out" / f"realweb-d{args.domains}-s{args.seed}"
    ).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    sites = build(args.domains, args.seed)
    built = time.perf_counter() - started
    cert_s = make_certs(sites, run_dir / "certs")
    write_seeds(sites, run_dir / "seeds.txt")
    write_seeds(sites, run_dir / "seeds-robots.txt", scheme="http")
    truth_urls = sum(len(s.locs) for s in sites)
    print(
        f"# web: {args.domains} domains, {truth_urls:,} URLs expected; built in {built:.1f} s,"
        f" certificates in {cert_s:.1f} s; {run_dir}",
        file=sys.stderr,
        flush=True,
    )
    if "harvester" in tools:
        compile_bytecode()
    rows = []
    for tool in tools:
        print(f"# running {tool} ...", file=sys.stderr, flush=True)
        row = run_tool(tool, sites, run_dir, args)
        print(json.dumps(row.record()), flush=True)
        rows.append(row)
    if args.with_earlier:
        for tool in TOOLS:
            if tool not in tools and (run_dir / tool / "result.json").exists():
                row = tool_row(tool, sites, run_dir)
                row.notes.append("earlier run")
                print(json.dumps(row.record()), flush=True)
                rows.append(row)
        rows.sort(key=lambda r: r.tool)
    from harvester.config import Config

    rate = Config().politeness.default.rate
    politeness = report.politeness_limit(sites, rate)
    text = report.markdown(rows, politeness=politeness)
    print(text, flush=True)
    if args.write_results:
        machine = (
            f"{os.cpu_count()} cores (shared);"
            f" {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())};"
            f" harvester defaults (politeness rate {rate}/s), --workers {args.workers}"
        )
        write_results(text, args, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
