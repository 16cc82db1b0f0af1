"""``make demo``: harvester's main job, offline, on a small synthetic web on loopback.

Generates the ``demo`` corpus (``benchmarks.webgen``: six hosts on 127.1.0.1-6, a few
hundred URLs), serves it (``benchmarks.server``, in a background thread of this process),
runs ``harvester run -i seeds.txt -o demo-out/urls.jsonl --config demo-out/demo.toml`` as
a subprocess (its progress and summary stream to this terminal), then checks the outcome
against the generator's ground truth and prints a per-host table. The six hosts:

* full      robots.txt -> sitemap index -> a gzip child, a plain child and a child that 404s
* fallback  no robots.txt (404): the sitemap is found at /sitemap.xml
* text      robots.txt lists a plain-text sitemap
* loop      an index that lists itself and a shared child twice, and a nested index that
            lists the first one back: every sitemap fetched once, no URL twice
* html      robots.txt names a sitemap URL that serves an HTML page (not_a_sitemap)
* dead      nothing listens at the address (connect)

Exit status: 0 when every host's URLs are exactly the expected ones and each host's
failure classes are the expected ones; 1 otherwise (or when a step fails, e.g.
``harvester run`` missing); 2 on usage errors.

Usage::

    python scripts/demo.py [--out demo-out] [--port 0] [--workers 2] [--keep-going]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

ROOT: Final = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: make ``benchmarks`` importable
    sys.path.insert(0, str(ROOT))

from benchmarks.server import Running, new_event_loop, serve  # noqa: E402
from benchmarks.webgen import GroundTruth, describe, generate, host_address  # noqa: E402

DEMO_CONFIG: Final = """\
# written by scripts/demo.py: loopback opt-in and fast politeness for a local demo
[fetch]
allow_private = true
connect_timeout = 2.0
read_timeout = 5.0
total_timeout = 20.0
retries = 1
backoff_base = 0.1
backoff_max = 0.5

[politeness.default]
concurrency = 4
rate = 100.0
burst = 4

[run]
hosts_in_flight = 16
"""


class ServerThread:
    """``benchmarks.server.serve`` on its own event loop in a daemon thread."""

    def __init__(self, corpus: Path) -> None:
        self.corpus = corpus
        self.running: Running | None = None
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="demo-server", daemon=True)

    def _main(self) -> None:
        try:
            with asyncio.Runner(loop_factory=new_event_loop) as runner:
                runner.run(self._serve())
        except BaseException as exc:  # reported to the main thread by start()
            self.error = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with serve(self.corpus) as running:
            self.running = running
            self._ready.set()
            await self._stop.wait()

    def start(self) -> Running:
        """Start the thread; return once every site is bound (or raise why not)."""
        self._thread.start()
        self._ready.wait(60)
        if self.error is not None or self.running is None:
            raise RuntimeError(f"the demo server did not start: {self.error!r}")
        return self.running

    def stop(self) -> None:
        """Ask the server to stop and wait for its thread (idempotent)."""
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def free_port(address: str) -> int:
    """A port free on ``address`` right now (the corpus's URLs are written with it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        port: int = sock.getsockname()[1]
    return port


def harvester_cmd(override: str | None = None) -> list[str]:
    """``override`` split on spaces, else the ``harvester`` script beside this interpreter."""
    if override:
        return override.split()
    script = Path(sys.executable).parent / "harvester"
    return [str(script)] if script.exists() else [sys.executable, "-m", "harvester"]


def check_harvester_run(override: str | None = None) -> str | None:
    """None when ``harvester run`` exists, else why not."""
    cmd = [*harvester_cmd(override), "run", "--help"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)  # noqa: S603
    if proc.returncode == 0:
        return None
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
    return f"`{' '.join(cmd)}` exited {proc.returncode}: {tail[0]}"


# --------------------------------------------------------------------------- reading the results


def read_output(path: Path) -> dict[str, list[str]]:
    """Output records grouped by the address of their loc (index-child records skipped)."""
    found: dict[str, list[str]] = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            record = json.loads(line)
            if record.get("is_sitemap"):
                continue
            loc = record.get("loc") or record.get("url")
            if isinstance(loc, str):
                found.setdefault(urlsplit(loc).hostname or "?", []).append(loc)
    return found


def _address(value: object) -> str | None:
    """The bare address of a host-ish value: ``127.1.0.1``, ``127.1.0.1:80``, an origin."""
    if not isinstance(value, str) or not value:
        return None
    text = value if "//" in value else f"//{value}"
    try:
        return urlsplit(text).hostname
    except ValueError:
        return None


def read_host_reports(report_path: Path) -> dict[str, dict[str, Any]]:
    """Per-host report dicts keyed by address: the run report's ``hosts_report`` JSON Lines
    file (or an inline ``hosts`` list/dict, whichever the report has)."""
    run = json.loads(report_path.read_text())
    hosts: dict[str, dict[str, Any]] = {}
    inline = run.get("hosts")
    if isinstance(inline, dict):
        hosts.update(
            {a: h for k, h in inline.items() if (a := _address(k)) and isinstance(h, dict)}
        )
    elif isinstance(inline, list):
        hosts.update(
            {a: h for h in inline if isinstance(h, dict) and (a := _address(h.get("host")))}
        )
    extra = run.get("hosts_report")
    if isinstance(extra, str):
        path = Path(extra)
        if not path.is_absolute():
            path = report_path.parent / path
        if path.exists():
            with path.open(encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        host = json.loads(line)
                        if address := _address(host.get("host")):
                            hosts[address] = host
    return hosts


def failure_classes(host: dict[str, Any]) -> tuple[Counter[str], dict[str, set[str | None]]]:
    """(failures by class, URLs by class) of one host report."""
    urls: dict[str, set[str | None]] = {}
    for failure in host.get("failures") or ():
        urls.setdefault(str(failure.get("class")), set()).add(failure.get("url"))
    by_class = host.get("failures_by_class")
    if isinstance(by_class, dict):
        return Counter({str(k): int(v) for k, v in by_class.items()}), urls
    return Counter({k: len(v) for k, v in urls.items()}), urls


# --------------------------------------------------------------------------- the check


def check(
    truth: GroundTruth,
    manifest_roles: dict[str, str],
    found: dict[str, list[str]],
    reports: dict[str, dict[str, Any]],
) -> tuple[list[list[str]], list[str]]:
    """(table rows, problems) comparing the run with the ground truth."""
    assert truth.urls is not None
    rows: list[list[str]] = []
    problems: list[str] = []
    for address, expected_urls in truth.urls.items():
        role = manifest_roles.get(address, "?")
        got = found.get(address, [])
        got_set, want = set(got), set(expected_urls)
        duplicates = len(got) - len(got_set)
        if got_set != want:
            missing, extra = sorted(want - got_set), sorted(got_set - want)
            problems.append(
                f"{address} ({role}): {len(got_set)} URLs, expected {len(want)};"
                f" missing {len(missing)} {missing[:2]}, unexpected {len(extra)} {extra[:2]}"
            )
        if duplicates:
            problems.append(f"{address} ({role}): {duplicates} duplicate records")
        expected_failures = truth.failures.get(address, {})
        host = reports.get(address)
        if host is None:
            problems.append(f"{address} ({role}): no per-host report")
            by_class: Counter[str] = Counter()
            urls_by_class: dict[str, set[str | None]] = {}
        else:
            by_class, urls_by_class = failure_classes(host)
        if set(by_class) != set(expected_failures):
            problems.append(
                f"{address} ({role}): failure classes {dict(by_class) or '{}'},"
                f" expected {sorted(expected_failures) or '{}'}"
            )
        for cls, urls in expected_failures.items():
            named = {u for u in urls if u is not None}
            seen = urls_by_class.get(cls, set())
            if named - seen:
                problems.append(f"{address} ({role}): no {cls} failure for {sorted(named - seen)}")
        rows.append(
            [
                address,
                role,
                f"{len(got_set)}/{len(want)}",
                ", ".join(f"{k} {v}" for k, v in sorted(by_class.items())) or "-",
                ", ".join(sorted(expected_failures)) or "-",
                str(host.get("discovery", "")) if host else "",
            ]
        )
        if host is not None and isinstance(host.get("urls"), int) and host["urls"] != len(got):
            problems.append(
                f"{address} ({role}): the host report says {host['urls']} URLs,"
                f" the output has {len(got)} records"
            )
    stray = sorted(set(found) - set(truth.urls))
    if stray:
        problems.append(f"URLs from unexpected hosts: {stray}")
    return rows, problems


def print_table(rows: list[list[str]]) -> None:
    """Print ``rows`` as aligned columns under a header."""
    head = ["host", "role", "URLs found/expected", "failures (found)", "expected", "discovery"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for i, row in enumerate([head, *rows]):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    """Generate, serve, harvest, check; return the exit status."""
    ap = argparse.ArgumentParser(
        prog="scripts/demo.py",
        description="Run harvester on a small synthetic web on loopback and check the result.",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "demo-out", help="working directory")
    ap.add_argument("--port", type=int, default=0, help="port for every host (0: a free one)")
    ap.add_argument("--workers", type=int, help="harvester --workers (default: its own)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--harvester", help=argparse.SUPPRESS)  # another command, for testing
    args = ap.parse_args(argv)

    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    port = args.port or free_port(host_address(0))
    truth = generate("demo", out / "corpus", seed=args.seed, port=port)
    print(f"# corpus: {describe(truth)}", file=sys.stderr)
    manifest = json.loads(truth.manifest_path.read_text())
    roles = {h["address"]: h["role"] for h in manifest["hosts"]}

    why = check_harvester_run(args.harvester)
    if why is not None:
        print(f"demo: `harvester run` is not available yet ({why})", file=sys.stderr)
        return 1

    config = out / "demo.toml"
    config.write_text(DEMO_CONFIG)
    output = out / "urls.jsonl"
    report = Path(f"{output}.report.json")
    for stale in (output, report):
        stale.unlink(missing_ok=True)

    server = ServerThread(truth.out_dir)
    running = server.start()
    print(
        f"# serving {len(running.addresses)} hosts on port {running.port}"
        f" (+1 dead address); seeds: {running.seeds_path}",
        file=sys.stderr,
    )
    cmd = [*harvester_cmd(args.harvester), "run", "-i", str(running.seeds_path)]
    cmd += ["-o", str(output)]
    cmd += ["--config", str(config)]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    print(f"$ {' '.join(cmd)}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, check=False, timeout=120)  # noqa: S603
    except subprocess.TimeoutExpired:
        print("demo: harvester run took more than 120 s", file=sys.stderr)
        return 1
    finally:
        server.stop()
    seconds = time.perf_counter() - started
    print(
        f"# harvester run exited {proc.returncode} after {seconds:.1f} s;"
        f" the server answered {running.requests} requests ({running.not_found} 404)",
        file=sys.stderr,
    )
    if proc.returncode != 0:
        print(f"demo: harvester run failed with exit status {proc.returncode}", file=sys.stderr)
        return 1
    if not output.exists() or not report.exists():
        print(f"demo: expected {output} and {report}", file=sys.stderr)
        return 1

    found = read_output(output)
    reports = read_host_reports(report)
    rows, problems = check(truth, roles, found, reports)
    total = sum(len(set(v)) for v in found.values())
    records = sum(len(v) for v in found.values())
    run_urls = json.loads(report.read_text()).get("urls")
    if isinstance(run_urls, int) and run_urls != records:
        problems.append(f"the run report says {run_urls} URLs, the output has {records} records")
    print()
    print(
        f"harvested {total} URLs from {len(truth.urls_per_host)} hosts in {seconds:.1f} s"
        f" -> {output.relative_to(ROOT) if output.is_relative_to(ROOT) else output}"
    )
    print()
    print_table(rows)
    print()
    if problems:
        print("demo: the result differs from the ground truth:")
        for problem in problems:
            print(f"  - {problem}")
        return 1
    print(
        f"OK: {total} URLs = ground truth {truth.total_urls}; every expected failure"
        " reported with its class."
    )
    with output.open(encoding="utf-8") as fh:
        print(f"a record: {fh.readline().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
