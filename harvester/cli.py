"""Command line: ``harvester <verb> ...``; argparse → config → the library.

In: argv. Out: records on stdout (or a file), diagnostics on stderr, and an
exit status cron users rely on: 0 done (per-item failures are in the report),
1 the job itself failed, 2 usage or config error.

Verbs:
  run [DOMAIN ...] [-i FILE|-]   harvest every URL the hosts' sitemaps publish
  parse FILE|-                   read one local sitemap file and print its entries as JSON Lines
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sqlite3
import sys
from typing import TYPE_CHECKING

from harvester import __version__
from harvester.config import load_config
from harvester.errors import ConfigError, StateError
from harvester.normalize import host_of

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from types import FrameType
    from typing import Any, BinaryIO

    from harvester.config import Config, ReaderConfig
    from harvester.models import Entry
    from harvester.shutdown import Stop

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process killed by it
EXIT_LOCKED = 75  # EX_TEMPFAIL: another run holds the state file; cron may simply retry later
_READ_SIZE = 1 << 16


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="harvester",
        description="Find every URL a site publishes in its XML sitemaps.",
    )
    ap.add_argument(
        "--version",
        action="version",
        version=f"harvester {__version__}",
        help="show the version and whether the compiled modules are in use, then exit",
    )
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _run_parser(sub)
    _audit_parser(sub)
    _ledger_parser(sub)

    p = sub.add_parser(
        "parse",
        help="print the entries of one local sitemap file as JSON Lines",
        description=(
            "Read one local sitemap file (urlset, sitemap index, RSS, Atom or text; gzip or"
            " not, detected from the bytes) and print one JSON record per entry on stdout."
            ' Index children are printed with "is_sitemap": true. A stats line (JSON) goes'
            " to stderr. Exit status: 0 read fully, 1 the document is broken (entries before"
            " the fault are still printed), 2 usage or config error."
        ),
    )
    p.add_argument("file", help="path of the sitemap file, or - for standard input")
    p.add_argument(
        "--url",
        help="the URL the file was served at (fills the 'sitemap' and 'host' fields)",
    )
    p.add_argument("--config", help="TOML config file (see config.example.toml)")
    p.add_argument(
        "--max-decompressed-bytes",
        type=int,
        dest="reader.max_decompressed_bytes",
        help="cap on decompressed size (default 52428800, the protocol limit)",
    )
    p.add_argument(
        "--max-entries",
        type=int,
        dest="reader.max_entries_per_file",
        help="stop after this many entries in one file",
    )
    p.add_argument("-o", "--output", default="-", help="write records here instead of stdout")
    return ap


def _run_parser(sub: Any) -> None:
    r = sub.add_parser(
        "run",
        help="harvest the sitemaps of a list of hosts",
        description=(
            "Harvest every URL the given hosts publish in their sitemaps. Each input entry is a"
            " bare domain, an origin (https://example.com), a robots.txt URL, or a sitemap URL"
            " (discovery is then skipped). robots.txt Sitemap: lines are used first, then"
            " /sitemap.xml and the other discovery.fallback_paths. Records (JSON Lines) go to"
            " --output; a per-host report and a run report go beside it. Exit status: 0 all"
            " hosts processed (per-host failures are in the report), 1 the run itself failed,"
            " 2 usage or config error, 75 the state file is locked by another run still going,"
            " 130 interrupted (SIGINT), 143 terminated (SIGTERM)."
            " With a state file (default: OUTPUT.state.sqlite; --state PATH for cron) runs are"
            " incremental: --emit new|changed|delta writes only what changed since the last run"
            " and sends conditional GETs, and an unfinished run (crash, kill -9, Ctrl-C) is"
            " resumed by the next one, every URL emitted exactly once."
            " On SIGINT/SIGTERM no new host is started, hosts in flight get"
            " run.shutdown_grace seconds to finish, then the output is flushed and left as"
            " OUTPUT.part and the report is marked interrupted; a second signal stops at once."
        ),
    )
    r.add_argument("domains", nargs="*", metavar="DOMAIN", help="hosts or URLs to harvest")
    r.add_argument("-i", "--input", help="file with one entry a line ('-' = stdin); read lazily")
    r.add_argument(
        "-o", "--output", default="-", help="JSON Lines output file ('-' = stdout, the default)"
    )
    r.add_argument("--config", help="TOML config file (see config.example.toml)")
    r.add_argument(
        "--report",
        help="run report path (default: OUTPUT.report.json; per-host lines in OUTPUT.hosts.jsonl)",
    )
    progress = r.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress", action="store_true", default=None, help="always show progress on stderr"
    )
    progress.add_argument(
        "--no-progress", dest="progress", action="store_false", help="never show progress"
    )
    flags: list[tuple[str, str, type, str]] = [
        ("--workers", "run.workers", int, "worker processes (default: one per CPU)"),
        ("--hosts-in-flight", "run.hosts_in_flight", int, "hosts harvested at once per worker"),
        ("--user-agent", "fetch.user_agent", str, "User-Agent header"),
        ("--proxy", "fetch.proxy", str, "HTTP proxy URL"),
        ("--connections", "fetch.max_connections", int, "open connections per worker"),
        ("--timeout", "fetch.total_timeout", float, "seconds per file, retries included"),
        ("--retries", "fetch.retries", int, "retries on connection errors, 5xx and 429"),
        ("--rate", "politeness.default.rate", float, "requests per second per host"),
        ("--concurrency", "politeness.default.concurrency", int, "requests at once per host"),
        ("--max-depth", "limits.max_depth", int, "deepest sitemap-index nesting followed"),
        ("--max-sitemaps", "limits.max_sitemaps_per_host", int, "sitemap files per host"),
        ("--max-urls", "limits.max_urls_per_host", int, "URLs emitted per host"),
        ("--host-timeout", "limits.max_host_seconds", float, "seconds spent on one host"),
        ("--cross-host", "discovery.cross_host", str, "same-host | same-site | any"),
    ]
    metavars = {int: "N", float: "NUM", str: "TEXT"}
    for flag, dest, typ, text in flags:
        r.add_argument(
            flag, dest=dest, type=typ, metavar=metavars[typ], help=f"{text} (config: {dest})"
        )
    incremental = r.add_argument_group("incremental runs (state file)")
    incremental.add_argument(
        "--state",
        dest="state.path",
        metavar="PATH",
        help="SQLite state file (default: OUTPUT.state.sqlite; none for stdout)"
        " (config: state.path)",
    )
    incremental.add_argument(
        "--no-state",
        dest="state.enabled",
        action="store_const",
        const=False,
        help="keep no state: download and emit everything (config: state.enabled)",
    )
    incremental.add_argument(
        "--emit",
        dest="output.emit",
        choices=("all", "new", "changed", "delta"),
        help="which URLs to write: all listed (default), new, changed (lastmod advanced), or"
        " delta = new + changed + removed; each record says its event (config: output.emit)",
    )
    incremental.add_argument(
        "--since",
        dest="output.since",
        metavar="DATE",
        help="only URLs whose lastmod is after DATE, plus undated ones labelled"
        ' "since": "undated" (config: output.since)',
    )
    incremental.add_argument(
        "--verify-lastmod",
        dest="audit.sample",
        type=int,
        metavar="K",
        help="after the run, verify lastmod against K sampled pages per host (see"
        " `harvester audit`); reports in OUTPUT.audit.json and OUTPUT.audit.html"
        " (config: audit.sample)",
    )
    incremental.add_argument(
        "--no-resume",
        dest="state.resume",
        action="store_const",
        const=False,
        help="start a new run even if the last one did not finish (config: state.resume)",
    )
    _allow_argument(r)
    r.add_argument(
        "--allow-private",
        dest="fetch.allow_private",
        action="store_const",
        const=True,
        help="allow private and loopback addresses (config: fetch.allow_private)",
    )


def _overrides(ns: argparse.Namespace) -> dict[str, object]:
    """Flags whose dest is a dotted config key and that the user actually set."""
    return {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in vars(ns).items()
        if "." in k and v is not None
    }


def _version() -> str:
    """``--version``: ours, lxml's, and whether the compiled modules loaded (and if not,
    why: a slow reader is otherwise hard to tell from a slow network)."""
    from lxml import etree

    from harvester import compiled

    lxml_version = ".".join(map(str, etree.LXML_VERSION[:3]))
    return f"harvester {__version__} (lxml {lxml_version}; compiled: {compiled.status()})"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        print(_version())
        return EXIT_OK
    ns = _parser().parse_args(args)
    try:
        cfg = load_config(ns.config, _overrides(ns))
    except ConfigError as exc:
        print(f"harvester: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if ns.command == "parse":
        return _parse_command(ns.file, ns.url, ns.output, cfg.reader)
    if ns.command == "run":
        return _run_command(ns, cfg)
    if ns.command == "audit":
        return _audit_command(ns, cfg)
    if ns.command == "ledger":
        return _ledger_command(ns)
    return EXIT_USAGE  # pragma: no cover - argparse enforces the choices


def _run_command(ns: argparse.Namespace, cfg: Config) -> int:
    from harvester.report import summary_table
    from harvester.seeds import open_lines
    from harvester.shards import RunFailed, run_job, tune_gc, tune_malloc
    from harvester.shutdown import Stop
    from harvester.state import StateLocked

    if not ns.domains and not ns.input:
        print(
            "harvester run: give DOMAIN arguments or -i FILE (or -i - for stdin)", file=sys.stderr
        )
        return EXIT_USAGE
    tune_gc()  # this process is ours: parse with fewer garbage collections
    tune_malloc()  # ...and one malloc arena for its threads
    report = ns.report
    if report is None and ns.output != "-":
        report = f"{ns.output}.report.json"
    stop = Stop()
    with _graceful_signals(stop):
        try:
            run = run_job(
                cfg,
                open_lines(ns.domains, ns.input),
                ns.output,
                report_path=report,
                progress=ns.progress,
                stop=stop,
            )
        except KeyboardInterrupt:
            run = None
        except ConfigError as exc:
            print(f"harvester: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except StateLocked as exc:
            print(f"harvester: {exc}", file=sys.stderr)
            return EXIT_LOCKED
        except (RunFailed, StateError, OSError) as exc:
            print(f"harvester: run failed: {exc}", file=sys.stderr)
            return EXIT_FAILED
        except sqlite3.Error as exc:  # the state file broke mid-run (disk full, corruption)
            print(f"harvester: run failed: state file: {exc}", file=sys.stderr)
            return EXIT_FAILED
    if run is None or run.interrupted:
        if run is not None:
            print(summary_table(run), file=sys.stderr)
        print(
            "harvester: interrupted; output left as .part, report marked interrupted",
            file=sys.stderr,
        )
        return EXIT_TERMINATED if stop.signum == signal.SIGTERM else EXIT_INTERRUPTED
    print(summary_table(run), file=sys.stderr)
    if cfg.audit.sample > 0 and run.state is not None:
        return _audit_after_run(cfg, run.state, run.run_id, ns.output)
    return EXIT_OK


def _audit_after_run(cfg: Config, state: str, run_id: int | None, output: str) -> int:
    from harvester.auditreport import render_text
    from harvester.state import StateLocked
    from harvester.verify import run_audit

    base = None if output == "-" else output
    try:
        audits = run_audit(
            cfg,
            state,
            cfg.audit.sample,
            run_id=run_id,
            json_path=base and f"{base}.audit.json",
            html_path=base and f"{base}.audit.html",
        )
    except StateLocked as exc:
        print(f"harvester: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except StateError as exc:
        print(f"harvester: audit failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(render_text(audits), file=sys.stderr)
    return EXIT_OK


def _allow_argument(parser: argparse.ArgumentParser) -> None:
    """``--allow``, for every command that fetches (``run``, ``audit``)."""
    parser.add_argument(
        "--allow",
        dest="fetch.allow",
        action="append",
        metavar="NET_OR_HOST",
        help="a network (CIDR) or host name the SSRF guard lets through although private;"
        " repeatable (config: fetch.allow)",
    )


def _audit_parser(sub: Any) -> None:
    a = sub.add_parser(
        "audit",
        help="verify each host's sitemap lastmod against its pages; score its trust",
        description=(
            "Per host of a state file: the lastmod distribution verdict of its last run"
            " (absent, generation_time, constant, future, plausible), then K pages sampled"
            " over its sitemaps are fetched (robots.txt and politeness honoured, bodies"
            " capped) and their own dates (JSON-LD dateModified, article:modified_time,"
            " og:updated_time, itemprop dateModified, Last-Modified) compared with the"
            " sitemap lastmod; content fingerprints are compared with the last audit's."
            " The trust level (trusted, untrusted, unknown) is stored in the state: the"
            " next runs let lastmod filter URLs only where it is trusted. Prints a table;"
            " --json and --html write the report. Exit status: 0 done, 1 the state file is"
            " unusable, 2 usage error, 75 a run holds the state file."
        ),
    )
    a.add_argument(
        "hosts",
        nargs="*",
        metavar="DOMAIN",
        help="hosts to audit, as in a domains file (default: all)",
    )
    a.add_argument("-i", "--input", help="a domains file ('-' = stdin): audit its hosts")
    a.add_argument("--state", required=True, metavar="PATH", help="the state file of the runs")
    a.add_argument("--sample", type=int, default=20, metavar="K", help="pages per host (20)")
    a.add_argument("--json", metavar="PATH", help="write the JSON report here")
    a.add_argument("--html", metavar="PATH", help="write the HTML report (with charts) here")
    a.add_argument("--config", help="TOML config file (fetch and politeness settings)")
    _allow_argument(a)


def _ledger_parser(sub: Any) -> None:
    g = sub.add_parser(
        "ledger",
        help="print the URLs a state file's ledger lists, as JSON lines",
        description=(
            "One JSON line per URL the state file's ledger lists (what the next run"
            " compares against): url, host, sitemap, lastmod, run (the last run that"
            " listed it). The ledger stores URLs as compressed chunks, not readable in"
            " SQL; this reads them. Exit status: 0 done, 1 the state file is unusable,"
            " 2 usage error."
        ),
    )
    g.add_argument("hosts", nargs="*", metavar="DOMAIN", help="hosts to print (default: all)")
    g.add_argument("--state", required=True, metavar="PATH", help="the state file of the runs")
    g.add_argument("-o", "--output", default="-", help="where to write (default: stdout)")
    g.set_defaults(config=None)


def _ledger_command(ns: argparse.Namespace) -> int:
    from harvester.ledger import LedgerReader
    from harvester.scheduler import host_key
    from harvester.sink import encode_records

    if not os.path.exists(ns.state):
        print(f"harvester ledger: no state file at {ns.state}", file=sys.stderr)
        return EXIT_USAGE
    # Hosts as the state names them (a domain, an origin or a URL each: its host).
    hosts = [host_key(h if "://" in h else f"https://{h}/") for h in ns.hosts] or None
    try:
        out = sys.stdout.buffer if ns.output == "-" else open(ns.output, "wb")  # noqa: SIM115
    except OSError as exc:
        print(f"harvester ledger: cannot write {ns.output}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    try:
        reader = LedgerReader(ns.state, run_id=0)
        try:
            batch: list[dict[str, Any]] = []
            for record in reader.listed(hosts):
                batch.append(record)
                if len(batch) >= 10_000:
                    out.write(encode_records(batch))
                    batch.clear()
            out.write(encode_records(batch))
        finally:
            reader.close()
    except (StateError, sqlite3.Error) as exc:
        print(f"harvester ledger: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if out is not sys.stdout.buffer:
            out.close()
    return EXIT_OK


def _audit_command(ns: argparse.Namespace, cfg: Config) -> int:
    import os

    from harvester.auditreport import render_text
    from harvester.state import StateLocked
    from harvester.verify import run_audit

    if not os.path.exists(ns.state):
        print(f"harvester audit: no state file at {ns.state}", file=sys.stderr)
        return EXIT_USAGE
    if ns.sample < 1:
        print("harvester audit: --sample must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    hosts: list[str] | None = None
    if ns.hosts or ns.input:
        from harvester.seeds import Seed, SeedReader, open_lines

        hosts = [s.host for s in SeedReader(open_lines(ns.hosts, ns.input)) if isinstance(s, Seed)]
    try:
        audits = run_audit(cfg, ns.state, ns.sample, hosts, json_path=ns.json, html_path=ns.html)
    except StateLocked as exc:
        print(f"harvester: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except StateError as exc:
        print(f"harvester audit: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(render_text(audits))
    return EXIT_OK


@contextlib.contextmanager
def _graceful_signals(stop: Stop) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop`` (a graceful stop); a second one interrupts at once."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt  # the user insists: stop now (output still .part)
        stop.set(signum)
        # os.write, not print: the handler may interrupt a print to stderr (reentrancy).
        os.write(
            2,
            f"\nharvester: {signal.Signals(signum).name}: finishing the hosts in flight;"
            " send it again to stop at once\n".encode(),
        )

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _parse_command(path: str, url: str | None, output: str, cfg: ReaderConfig) -> int:
    from harvester.reader import SitemapReader

    try:
        src: BinaryIO = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        print(f"harvester: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    sitemap = url or (None if path == "-" else path)
    # With --url the records belong to that sitemap's host; without, to each URL's own host.
    host = host_of(url) if url else None
    reader = SitemapReader(sitemap, cfg)
    out: BinaryIO = sys.stdout.buffer if output == "-" else open(output, "wb")  # noqa: SIM115
    try:
        with src:
            while chunk := src.read(_READ_SIZE):
                _write(out, reader.feed(chunk), sitemap, host)
                if reader.failed:
                    break
            _write(out, reader.finish(), sitemap, host)
    finally:
        if out is sys.stdout.buffer:
            out.flush()
        else:
            out.close()
    result = reader.result()
    summary = {
        "file": path,
        "kind": result.kind,
        "status": result.status,
        "error": result.error.as_dict() if result.error else None,
        **result.stats.as_dict(),
    }
    print(json.dumps(summary), file=sys.stderr)
    return EXIT_OK if result.status == "ok" else EXIT_FAILED


def _write(out: BinaryIO, entries: list[Entry], sitemap: str | None, host: str | None) -> None:
    from harvester.records import record
    from harvester.sink import encode_records

    if entries:
        # The same encoder as `harvester run`, so both verbs print identical records.
        out.write(encode_records(record(e, sitemap, host) for e in entries))
