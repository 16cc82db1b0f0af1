"""``harvester run``: harvest every URL the hosts' sitemaps publish.

In: the parsed arguments and the loaded config. Out: the records, the reports
beside them, a summary table on stderr, and the exit status (``exits.py``). SIGINT
and SIGTERM stop gracefully (``_graceful_signals``); with ``--verify-lastmod`` the
lastmod audit runs after the harvest.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING

from harvester.cli import distributed
from harvester.cli.exits import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    JOB_ERRORS,
    fail,
)
from harvester.cli.options import crawl_arguments, filter_arguments, typed_flags
from harvester.version import DISTRIBUTION

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator
    from types import FrameType
    from typing import Any

    from harvester.config import Config
    from harvester.run.shutdown import Stop

__all__ = ["add_parser", "command"]


# The verb's --help text.
_DESCRIPTION = (
    "Harvest every URL the given hosts publish in their sitemaps. Each input entry is a"
    " bare domain, an origin (https://example.com), a robots.txt URL, or a sitemap URL"
    " (discovery is then skipped). robots.txt Sitemap: lines are used first, then"
    " /sitemap.xml and the other discovery.fallback_paths. Records (JSON Lines, CSV or"
    " Parquet: --format) go to --output; a per-host report and a run report go beside"
    " it. Exit status: 0 all"
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
)


def add_parser(sub: Any) -> None:
    """The ``run`` verb's arguments."""
    r = sub.add_parser(
        "run",
        help="harvest the sitemaps of a list of hosts",
        description=_DESCRIPTION,
    )
    r.add_argument("domains", nargs="*", metavar="DOMAIN", help="hosts or URLs to harvest")
    r.add_argument("-i", "--input", help="file with one entry a line ('-' = stdin); read lazily")
    r.add_argument(
        "-o",
        "--output",
        default="-",
        help="output file ('-' = stdout, the default); its extension .jsonl, .csv or .parquet"
        " sets the format unless --format does",
    )
    r.add_argument(
        "--format",
        dest="output.format",
        choices=("jsonl", "csv", "parquet"),
        help="record format: JSON Lines, CSV (nested fields as JSON text) or Parquet (needs"
        f" {DISTRIBUTION}[parquet]); default: from the --output extension, else jsonl"
        " (config: output.format)",
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
    typed_flags(
        r,
        [
            ("--workers", "run.workers", int, "worker processes (default: one per CPU)"),
            ("--hosts-in-flight", "run.hosts_in_flight", int, "hosts harvested at once per worker"),
            ("--max-depth", "limits.max_depth", int, "deepest sitemap-index nesting followed"),
            ("--max-sitemaps", "limits.max_sitemaps_per_host", int, "sitemap files per host"),
            ("--max-urls", "limits.max_urls_per_host", int, "URLs emitted per host"),
            ("--host-timeout", "limits.max_host_seconds", float, "seconds spent on one host"),
            ("--cross-host", "discovery.cross_host", str, "same-host | same-site | any"),
        ],
    )
    crawl_arguments(r)  # the fetch flags and issue 49's
    filter_arguments(r)
    _incremental_arguments(r.add_argument_group("incremental runs (state file)"))
    r.add_argument(
        "--html-report",
        dest="output.html_report",
        action="store_const",
        const=True,
        help="also write the run report as one self-contained HTML page, REPORT.html beside"
        " REPORT.json (see `harvester report`) (config: output.html_report)",
    )
    distributed.add_arguments(r.add_argument_group("shards on Dask distributed (the dask extra)"))


def _incremental_arguments(incremental: argparse._ArgumentGroup) -> None:
    """The state-file flags of ``run``: --state, --no-state, --emit, --since, ..."""
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
        choices=("all", "new", "changed", "delta", "unverified", "delta,unverified"),
        help="which URLs to write: all listed (default), new, changed (lastmod advanced),"
        " delta = new + changed + removed, unverified (listed URLs of hosts whose lastmod"
        " is not trusted), or delta,unverified; each record says its event; see"
        " docs/cron.md (config: output.emit)",
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


def command(ns: argparse.Namespace, cfg: Config) -> int:
    """``harvester run``: harvest, print the summary, return the exit status."""
    from harvester.output.display import summary_table
    from harvester.run.runtime import tune_gc, tune_malloc
    from harvester.run.seeds import open_lines
    from harvester.run.shards import run_job
    from harvester.run.shutdown import Stop

    _warn_unverified(cfg)  # first: also when the run is refused below
    if not ns.domains and not ns.input:
        print(
            "harvester run: give DOMAIN arguments or -i FILE (or -i - for stdin)", file=sys.stderr
        )
        return EXIT_USAGE
    if ns.input not in (None, "-") and not os.path.isfile(ns.input):
        print(f"harvester run: no input file at {ns.input}", file=sys.stderr)
        return EXIT_USAGE
    tune_gc()  # this process is ours: parse with fewer garbage collections
    tune_malloc()  # ...and one malloc arena for its threads
    report = ns.report
    if report is None and ns.output != "-":
        report = f"{ns.output}.report.json"
    stop = Stop()
    if distributed.wanted(cfg):
        with _graceful_signals(stop):
            return distributed.command(ns, cfg, stop)
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
        except JOB_ERRORS as exc:
            return fail("run", exc)
    if run is None or run.interrupted:
        if run is not None:
            print(summary_table(run), file=sys.stderr)
        print(
            "harvester: interrupted; output left as .part, report marked interrupted",
            file=sys.stderr,
        )
        return EXIT_TERMINATED if stop.signum == signal.SIGTERM else EXIT_INTERRUPTED
    print(summary_table(run), file=sys.stderr)
    if cfg.output.html_report and report is not None:
        _html_report(report)
    elif cfg.output.html_report:
        print(
            "harvester run: no HTML report without a report file (-o FILE or --report)",
            file=sys.stderr,
        )
    if cfg.audit.sample > 0 and run.state is not None:
        return _audit_after_run(cfg, run.state, run.run_id, ns.output)
    return EXIT_OK


def _html_report(report: str) -> None:
    """The run report as a page beside it (issue 32); a failure to write it is said, not fatal."""
    from harvester.cli.report import write_html_report
    from harvester.errors import InputError

    page = report.removesuffix(".json") + ".html"
    try:
        write_html_report(report, page)
    except (InputError, OSError) as exc:
        print(f"harvester run: no HTML report: {exc}", file=sys.stderr)


def _warn_unverified(cfg: Config) -> None:
    """Say loudly, on stderr, which hosts' certificates go unchecked (issue 32)."""
    for host, policy in cfg.politeness.hosts.items():
        if not policy.verify_tls:
            print(
                f"harvester: WARNING: TLS certificates of {host} are NOT verified"
                f" (politeness.hosts.{host!r}.verify_tls = false); its reports say"
                ' "tls_unverified": true',
                file=sys.stderr,
            )


def _audit_after_run(cfg: Config, state: str, run_id: int | None, output: str) -> int:
    from harvester.audit.report import render_text
    from harvester.run.verify import run_audit

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
    except JOB_ERRORS as exc:
        return fail("audit", exc)
    print(render_text(audits), file=sys.stderr)
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
