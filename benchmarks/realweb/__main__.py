"""``python -m benchmarks.realweb``: harvester and Scrapy on a web that looks like the web.

In: ``--domains N`` (default 2000), ``--mix`` (``fixed``, the default: issue 29's web with
issue 51's kinds at a small share; ``random``: the shares, latencies, TTFBs and sizes drawn
from the seed, ``benchmarks/realweb/mix.py``), ``--seed`` (1) or ``--seeds 1,2,3`` (one
web each, then a table of them side by side), ``--webs fixed:1,random:2`` (any list of
webs), ``--tools`` (``harvester,scrapy``; also ``scrapy-tuned``), ``--timeout`` (seconds
per tool), ``--with-earlier`` (add the rows of tools run before on the same web),
``--write-results``, ``--harvester CMD`` (another checkout's harvester on the same web),
``--wrap CMD`` (put before harvester's command: a sampling profiler),
``--server-processes K`` (the web served by K processes: ``group.py``). Out: one JSON line
per tool and web and markdown tables on stdout
(``report.markdown``, ``sides.markdown`` for several webs); with ``--write-results`` the
section of this (domains, webs) in ``benchmarks/realweb/RESULTS.md``; everything of a run
in ``benchmarks/out/realweb-d<N>-s<seed>/`` (``-r<seed>`` for a random web; git-ignored):
certificates, seeds, each tool's output, logs and ``result.json``.

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
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Final

from benchmarks.bench_pipeline import ROOT, compile_bytecode, harvester_cmd
from benchmarks.realweb import limits, netns, report, sides
from benchmarks.realweb.mix import MIXES, Mix, mix_for
from benchmarks.realweb.web import TLS_KINDS, Site, build, write_seeds

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
            *shlex.split(args.wrap or ""),
            *harvester_cmd(args.harvester or None),
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


def run_tool(tool: str, web: Mix, seed: int, run_dir: Path, args: argparse.Namespace) -> None:
    """One tool in its own namespace (its output and ``result.json`` in its directory)."""
    tool_dir = run_dir / tool
    if tool_dir.exists():
        shutil.rmtree(tool_dir)
    tool_dir.mkdir(parents=True)
    cmd = tool_cmd(tool, run_dir, args)
    spec = ["--domains", str(args.domains), "--seed", str(seed), "--mix", web.name]
    argv = [*spec, "--run-dir", str(run_dir), "--tool", tool, "--timeout", str(args.timeout)]
    argv += ["--server-processes", str(args.server_processes)]
    proc = netns.in_namespace([*argv, "--", *cmd], timeout=args.timeout + 120)
    if proc.returncode != 0 or not (tool_dir / "result.json").exists():
        raise SystemExit(f"realweb: the {tool} run failed (exit {proc.returncode}); see {tool_dir}")


def tool_row(tool: str, sites: list[Site], run_dir: Path, polite: limits.Politeness) -> report.Row:
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
    seconds, site = limits.longest_chain(sites, polite)
    row.chain_s = seconds
    if site is not None:
        place = f"{site.index + 1:,} of {len(sites):,} in the list"
        row.chain_host = f"{site.name} ({site.kind}, {place})"
    return row


def write_results(title: str, text: str, machine: str) -> None:
    """Replace (or add) the section ``title`` of ``RESULTS.md``."""
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


def parse_webs(args: argparse.Namespace) -> list[tuple[Mix, int]]:
    """The webs to run: ``--webs``, else ``--mix`` with ``--seeds`` (or ``--seed``)."""
    if args.webs:
        specs = [w.split(":", 1) if ":" in w else (w, "1") for w in args.webs.split(",") if w]
    else:
        seeds = args.seeds.split(",") if args.seeds else [str(args.seed)]
        specs = [(args.mix, s) for s in seeds if s]
    webs = []
    for name, seed in specs:
        if name not in MIXES or not seed.isdigit():
            raise SystemExit(f"realweb: a web is MIX:SEED with MIX in {MIXES}, not {name}:{seed}")
        webs.append((mix_for(name, int(seed)), int(seed)))
    return webs


def run_web(web: Mix, seed: int, tools: list[str], args: argparse.Namespace) -> list[report.Row]:
    """Build one web, run the tools on it; its rows (and its markdown on stdout)."""
    tag = f"s{seed}" if web.name == "fixed" else f"r{seed}"
    base = ROOT / "benchmarks" / "out"
    run_dir: Path = (
        (args.out / tag if args.out and args.multi else args.out)
        or base / f"realweb-d{args.domains}-{tag}"
    ).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    sites = build(args.domains, seed, web)
    built = time.perf_counter() - started
    cert_s = make_certs(sites, run_dir / "certs")
    write_seeds(sites, run_dir / "seeds.txt")
    write_seeds(sites, run_dir / "seeds-robots.txt", scheme="http")
    truth_urls = sum(len(s.locs) for s in sites)
    print(
        f"# web {web.label}: {args.domains} domains, {truth_urls:,} URLs expected; built in"
        f" {built:.1f} s, certificates in {cert_s:.1f} s; {run_dir}",
        file=sys.stderr,
        flush=True,
    )
    (run_dir / "web.json").write_text(json.dumps(web.describe(), indent=1))
    polite = limits.politeness(args.harvester_config)
    rows = []
    for tool in tools:
        print(f"# running {tool} on {web.label} ...", file=sys.stderr, flush=True)
        run_tool(tool, web, seed, run_dir, args)
        rows.append(tool_row(tool, sites, run_dir, polite))
    if args.with_earlier:
        for tool in TOOLS:
            if tool not in tools and (run_dir / tool / "result.json").exists():
                rows.append(tool_row(tool, sites, run_dir, polite))
                rows[-1].notes.append("earlier run")
        rows.sort(key=lambda r: r.tool)
    for row in rows:
        print(json.dumps({"web": web.label, "seed": seed, **row.record()}), flush=True)
    print(report.markdown(rows), flush=True)
    return rows


def arguments() -> argparse.ArgumentParser:
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.realweb", description=__doc__)
    ap.add_argument("--domains", type=int, default=2000)
    ap.add_argument("--mix", choices=MIXES, default="fixed")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", default="", help="comma list: one web per seed, side by side")
    ap.add_argument("--webs", default="", help="comma list of MIX:SEED (fixed:1,random:2)")
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
    ap.add_argument(
        "--harvester",
        default="",
        help="harvester's command (another checkout's .venv/bin/harvester: compare builds"
        " on the same web); default: the one beside this interpreter",
    )
    ap.add_argument(
        "--wrap",
        default="",
        help="a command put before harvester's (a profiler: 'py-spy record -o p.svg"
        " --subprocesses --'); its CPU counts in the row (profiles only, not figures)",
    )
    ap.add_argument(
        "--server-processes",
        type=int,
        default=1,
        help="processes serving the web (benchmarks/realweb/group.py): more TLS handshakes"
        " per second for the web under load",
    )
    ap.add_argument("--write-results", action="store_true")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = arguments()
    args = ap.parse_args(argv)
    tools = [t for t in args.tools.split(",") if t]
    if unknown := set(tools) - set(TOOLS):
        ap.error(f"unknown tools: {', '.join(sorted(unknown))}")
    webs = parse_webs(args)
    args.multi = len(webs) > 1
    why = netns.can_unshare()
    if why is not None:
        print(f"realweb: cannot run: {why}", file=sys.stderr)
        return 3
    if "harvester" in tools:
        compile_bytecode()
    done = [(web, seed, run_web(web, seed, tools, args)) for web, seed in webs]
    side = ""
    if args.multi:
        side = sides.markdown([(web, row) for web, _, rows in done for row in rows])
        print(side, flush=True)
    if args.write_results:
        rate = limits.politeness(args.harvester_config).rate
        machine = (
            f"{os.cpu_count()} cores (shared);"
            f" {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())};"
            f" harvester defaults (politeness rate {rate}/s), --workers {args.workers}"
        )
        if args.multi:
            labels = ", ".join(web.label for web, _ in webs)
            write_results(f"## Side by side: {args.domains} domains, {labels}", side, machine)
        else:
            web, seed, rows = done[0]
            mixed = "" if web.name == "fixed" else f", {web.name} mix"
            title = f"## {args.domains} domains{mixed}, seed {seed}"
            write_results(title, report.markdown(rows), machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
