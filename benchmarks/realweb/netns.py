"""One measured run of one tool on the realweb, inside a network namespace of its own.

In (from ``benchmarks.realweb.__main__`` through ``in_namespace``): the web's
``(domains, seed, mix)``, a run directory holding ``certs/`` (``ca.pem`` and the domains'
PEMs), the tool (``harvester`` or ``scrapy``) and its command, a time limit. Out:
``RUN_DIR/<tool>/result.json`` (the tool's wall and CPU seconds, peak RSS, exit status,
the DNS and HTTP servers' own CPU lines) beside the tool's own output, and
``RUN_DIR/<tool>/hosts-served.json``: the server's requests and connections per domain.

``in_namespace(args)`` runs ``unshare -rnm python -m benchmarks.realweb.netns ...``: a new
user, network and mount namespace, fresh for each tool, so no DNS cache, connection or
socket carries over from one tool's run to the next. Inside (``main``):

1. ``ip link set lo up``: the namespace has ``lo`` only, so nothing can leave it;
2. nftables (``nft -f``; input hook of table ``inet realweb``): ``refused`` addresses
   answer a TCP reset (``reject with tcp reset``), ``dropped`` addresses drop every
   packet, ``http_only`` addresses reset on :443, ``https_dropped`` addresses drop every
   packet to :443 (issue 51: a firewall that blackholes https). Without ``nft``
   (``apt-get install -y nftables``) it says so and the server stands in: ``refused``
   addresses accept and reset, ``dropped`` ones are listeners whose accept queue is full
   (SYNs dropped);
3. ``/etc/resolv.conf`` bind-mounted (mount namespace: the host's file is untouched) to
   a file naming ``127.0.0.53``, the DNS server (``benchmarks.realweb.dns``);
4. the DNS server and the HTTP(S) server (``benchmarks.realweb.serve``) started as
   children; each prints ``ready``;
5. the tool run under ``bench_pipeline.run_measured`` (wall, user+sys CPU of the tool's
   process tree, RSS sampled every 50 ms), ``SSL_CERT_FILE`` = ``certs/bundle.pem``,
   proxy variables removed;
6. both servers stopped by their pids (SIGTERM): they print their counters and CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import IO, Final

from benchmarks.bench_pipeline import ROOT, run_measured
from benchmarks.realweb.mix import MIXES, mix_for
from benchmarks.realweb.web import build

DNS_LISTEN: Final = "127.0.0.53:53"
PROXY_VARS: Final = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")


class SetupError(Exception):
    """The namespace could not be set up (the message says what and why)."""


def can_unshare() -> str | None:
    """None when ``unshare -rnm`` works here, else why not."""
    if shutil.which("unshare") is None:
        return "no unshare(1) on PATH"
    try:
        proc = subprocess.run(
            ["unshare", "-rnm", "true"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare -rnm: {exc}"
    if proc.returncode != 0:
        return f"unshare -rnm is not permitted here: {proc.stderr.strip()}"
    return None


def in_namespace(argv: list[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``python -m benchmarks.realweb.netns ARGV`` in a fresh namespace."""
    cmd = ["unshare", "-rnm", sys.executable, "-m", "benchmarks.realweb.netns", *argv]
    return subprocess.run(cmd, cwd=ROOT, text=True, timeout=timeout, check=False)


def nft_rules(domains: int, seed: int, mix: str = "fixed") -> str:
    """The nftables ruleset of the web (``nft -f`` input)."""
    sets: dict[str, list[str]] = {"refused": [], "refused443": [], "dropped": [], "dropped443": []}
    kinds = {"refused": "refused", "dropped": "dropped", "http_only": "refused443"}
    kinds["https_dropped"] = "dropped443"
    for site in build(domains, seed, mix_for(mix, seed), content=False):
        if site.kind in kinds:
            sets[kinds[site.kind]].append(site.address)
    lines = ["table inet realweb {"]
    for name, addresses in sets.items():
        lines.append(f"  set {name} {{ type ipv4_addr;")
        if addresses:
            lines.append(f"    elements = {{ {', '.join(addresses)} }}")
        lines.append("  }")
    lines += [
        "  chain input {",
        "    type filter hook input priority 0; policy accept;",
        "    ip daddr @dropped drop",
        "    ip daddr @dropped443 tcp dport 443 drop",
        "    ip daddr @refused meta l4proto tcp reject with tcp reset",
        "    ip daddr @refused443 tcp dport 443 reject with tcp reset",
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def start(cmd: list[str], log: IO[str]) -> subprocess.Popen[str]:
    """Start a server (``cmd``, stderr to ``log``) and wait for its ``ready`` line."""
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise SetupError(f"{' '.join(cmd[:4])} did not start (see {log.name})")
    return proc


def stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM a server (by its pid) and wait for it, then SIGKILL after 15 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def set_up(run_dir: Path, domains: int, seed: int, mix: str = "fixed") -> bool:
    """Steps 1-3 of the module docstring; False when ``nft`` is missing (no rules)."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    rules = run_dir / "realweb.nft"
    rules.write_text(nft_rules(domains, seed, mix))
    # REALWEB_NO_NFT=1 tries the stand-ins where nft is installed
    nft = shutil.which("nft") is not None and not os.environ.get("REALWEB_NO_NFT")
    if nft:
        subprocess.run(["nft", "-f", str(rules)], check=True)
    else:
        print(
            "netns: no nft (apt-get install -y nftables): refused sites accept and reset,"
            " dropped sites are listeners with a full accept queue",
            file=sys.stderr,
        )
    resolv = run_dir / "resolv.conf"
    resolv.write_text(f"nameserver {DNS_LISTEN.split(':')[0]}\n")
    subprocess.run(["mount", "--bind", str(resolv), "/etc/resolv.conf"], check=True)
    return nft


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.realweb.netns", description=__doc__)
    ap.add_argument("--domains", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mix", choices=MIXES, default="fixed")
    ap.add_argument("--run-dir", type=Path, required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--timeout", type=float, required=True)
    ap.add_argument("--server-processes", type=int, default=1, help="serve's --processes")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="the tool's command, after --")
    args = ap.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    run_dir: Path = args.run_dir.resolve()
    tool_dir = run_dir / args.tool
    tool_dir.mkdir(parents=True, exist_ok=True)
    if os.getuid() != 0 or not Path("/proc/self/ns/net").exists():
        print("netns: run me through in_namespace (unshare -rnm)", file=sys.stderr)
        return 2
    nft = set_up(run_dir, args.domains, args.seed, args.mix)
    for var in PROXY_VARS:
        os.environ.pop(var, None)
    os.environ["SSL_CERT_FILE"] = str(run_dir / "certs" / "bundle.pem")
    web = ["--domains", str(args.domains), "--seed", str(args.seed), "--mix", args.mix]
    py = sys.executable
    with (
        (tool_dir / "dns.stderr").open("w") as dns_log,
        (tool_dir / "serve.stderr").open("w") as serve_log,
    ):
        dns = start([py, "-m", "benchmarks.realweb.dns", *web, "--listen", DNS_LISTEN], dns_log)
        try:
            serve = start(
                [
                    *(py, "-m", "benchmarks.realweb.serve", *web),
                    *("--certs", str(run_dir / "certs"), *(() if nft else ("--no-nft",))),
                    *("--hosts", str(tool_dir / "hosts-served.json")),
                    *("--processes", str(args.server_processes)),
                ],
                serve_log,
            )
            try:
                with (tool_dir / "tool.stderr").open("w") as err:
                    res = run_measured(cmd, timeout=args.timeout, stderr=err)
            finally:
                stop(serve)
        finally:
            stop(dns)
    servers = {
        name: [ln for ln in (tool_dir / f"{name}.stderr").read_text().splitlines() if ln]
        for name in ("dns", "serve")
    }
    result = {
        "tool": args.tool,
        "cmd": cmd,
        "process": asdict(res),
        "servers": servers,
        "nft": nft,
    }
    (tool_dir / "result.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
