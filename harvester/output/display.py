"""Report stage, on the terminal: the run's live progress line and its closing summary.

In: the ``RunReport`` (``harvester.output.report``) as the main process aggregates it.
Out: on stderr, a progress line while the run goes (``Progress``, only on a
terminal) and a short summary at the end (``summary_table``, plain text); stdout
is never touched (records may be streaming there). Its own module: drawing is
apart from the report's data and its merge, and only the main process draws.

Example::

    progress = Progress()
    for host_dict in finished_hosts:
        run.add_host(host_dict)
        progress.update(run)
    progress.close()
    run.finish(complete=True)
    print(summary_table(run), file=sys.stderr)
"""

from __future__ import annotations

import io
import time
from typing import TYPE_CHECKING, Any

# rich is imported where it is used: modules of processes that never draw import
# this one (shards.py, and the distributed tasks through it), and rich costs memory
# in every process.
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress as RichProgress

    from harvester.output.report import RunReport

__all__ = ["Progress", "summary_table"]


class Progress:
    """A live progress line on stderr: hosts done/total, URLs, URLs/s, errors.

    Shown only when stderr is a terminal (``enabled=None``) or when forced
    (``enabled=True``); otherwise every method is a no-op and nothing is
    written. ``update`` is cheap and throttled (``min_interval`` seconds), so it
    may be called for every finished host. stdout is never touched (records
    may be streaming there).
    """

    __slots__ = ("_last", "_progress", "_run", "_task", "enabled", "min_interval")

    def __init__(
        self,
        *,
        enabled: bool | None = None,
        console: Console | None = None,
        min_interval: float = 0.2,
    ) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        if console is None:
            console = Console(stderr=True, force_terminal=True if enabled else None)
        self.enabled = console.is_terminal if enabled is None else enabled
        self.min_interval = min_interval
        self._last = float("-inf")  # monotonic time of the last refresh
        self._run: RunReport | None = None  # the latest state, drawn once more on close()
        self._progress: RichProgress | None = None
        self._task = TaskID(0)
        if self.enabled:
            self._progress = RichProgress(
                SpinnerColumn(),
                TextColumn("hosts {task.completed:,.0f}/{task.fields[of]}"),
                BarColumn(),
                TextColumn("{task.fields[urls]:,} URLs  {task.fields[rate]:,.0f} URLs/s"),
                TextColumn("{task.fields[errors]:,} errors"),
                TimeElapsedColumn(),
                console=console,
                refresh_per_second=2,
                # Records may stream to stdout: never wrap or redirect it.
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._task = self._progress.add_task("harvest", total=None, **_fields(None))
            self._progress.start()

    def update(self, run: RunReport, *, force: bool = False) -> None:
        """Show the state of ``run`` (at most every ``min_interval`` seconds unless ``force``)."""
        if self._progress is None:
            return
        self._run = run
        now = time.monotonic()
        if not force and now - self._last < self.min_interval:
            return
        self._last = now
        total = None if run.hosts_total is None else float(run.hosts_total)
        self._progress.update(
            self._task, completed=run.hosts_done, total=total, **_fields(run), refresh=force
        )

    def close(self) -> None:
        """Draw the last state and stop the live display."""
        if self._progress is None:
            return
        if self._run is not None:
            self.update(self._run, force=True)
        self._progress.stop()
        self._progress = None


def _fields(run: RunReport | None) -> dict[str, Any]:
    if run is None:
        return {"of": "?", "urls": 0, "rate": 0.0, "errors": 0}
    elapsed = run.elapsed()
    return {
        "of": "?" if run.hosts_total is None else f"{run.hosts_total:,}",
        "urls": run.urls,
        "rate": run.urls / elapsed if elapsed > 0 else 0.0,
        "errors": run.errors,
    }


def summary_table(run: RunReport) -> str:
    """Render a short human summary of ``run`` as plain text (for stderr at the end of a run)."""
    seconds = run.seconds or run.elapsed()
    status = "complete" if run.complete else "interrupted" if run.interrupted else "incomplete"
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"harvester run: {status}", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    total = "?" if run.hosts_total is None else f"{run.hosts_total:,}"
    deferred = f", {run.hosts_deferred:,} deferred" if run.hosts_deferred else ""
    table.add_row("hosts", f"{run.hosts_done:,} / {total} ({run.hosts_failed:,} failed{deferred})")
    table.add_row("URLs", f"{run.urls:,}")
    table.add_row("sitemaps", f"{run.sitemaps_fetched:,} fetched, {run.sitemaps_failed:,} failed")
    table.add_row("downloaded", _human_bytes(run.bytes))
    rate = f"{run.urls / seconds:,.0f} URLs/s, " if seconds >= 1 else ""  # noise below 1 s
    table.add_row("time", f"{seconds:,.1f} s ({rate}{run.workers} workers)")
    if run.input_invalid or run.input_duplicates:
        table.add_row(
            "input", f"{run.input_invalid:,} invalid, {run.input_duplicates:,} duplicate lines"
        )
    if run.filtered or run.sitemaps_filtered:
        table.add_row(
            "filtered", f"{run.filtered:,} URLs, {run.sitemaps_filtered:,} child sitemaps"
        )
    if run.hosts_tls_unverified:
        table.add_row("TLS unverified", f"{run.hosts_tls_unverified:,} hosts (verify_tls = false)")
    if run.failures_by_class:
        ranked = sorted(run.failures_by_class.items(), key=lambda kv: (-kv[1], kv[0]))
        table.add_row("failures", ", ".join(f"{kind} {count:,}" for kind, count in ranked))
    buffer = io.StringIO()
    Console(file=buffer, width=100, color_system=None, force_terminal=False).print(table)
    return buffer.getvalue()


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover - the loop always returns
