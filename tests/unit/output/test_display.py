"""Report stage, on the terminal: Progress and summary_table (harvester/output/display.py)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from rich.console import Console

from harvester.output.display import Progress, summary_table
from harvester.output.report import RunReport

if TYPE_CHECKING:
    import pytest


def test_progress_is_silent_without_a_tty(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress()  # pytest's captured stderr is not a terminal
    assert not progress.enabled
    run = RunReport()
    run.add_host({"urls": 3})
    progress.update(run)
    progress.close()
    assert capsys.readouterr() == ("", "")


def test_progress_disabled_explicitly() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True)
    progress = Progress(enabled=False, console=console)
    progress.update(RunReport())
    progress.close()
    assert buffer.getvalue() == ""


def test_progress_forced_shows_hosts_urls_and_errors() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120, color_system=None)
    progress = Progress(enabled=True, console=console, min_interval=0)
    run = RunReport(hosts_total=10)
    run.add_host({"urls": 1234, "failures_by_class": {"dns": 1}})
    progress.update(run)
    progress.close()
    out = buffer.getvalue()
    assert "hosts 1/10" in out
    assert "1,234 URLs" in out
    assert "1 errors" in out
    progress.close()  # idempotent


def test_progress_unknown_total() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120, color_system=None)
    progress = Progress(enabled=True, console=console, min_interval=0)
    run = RunReport()
    run.add_host({"urls": 1})
    progress.update(run)
    progress.close()
    assert "hosts 1/?" in buffer.getvalue()


def test_summary_table() -> None:
    run = RunReport(workers=4, hosts_total=3, input_invalid=1, input_duplicates=2)
    run.add_host({"urls": 1500, "bytes": 3 * 1024 * 1024, "sitemaps_fetched": 4})
    run.add_host({"urls": 0, "failures_by_class": {"dns": 2, "timeout": 1}})
    run.finish(complete=True)
    text = summary_table(run)
    assert "complete" in text
    assert "2 / 3 (1 failed)" in text
    assert "1,500" in text
    assert "3.0 MiB" in text
    assert "dns 2, timeout 1" in text
    assert "1 invalid, 2 duplicate" in text
    assert "\x1b[" not in text  # plain text, no colour codes


def test_summary_table_interrupted() -> None:
    run = RunReport()
    run.finish(complete=False, interrupted=True)
    text = summary_table(run)
    assert "interrupted" in text
    assert "0 / ?" in text
