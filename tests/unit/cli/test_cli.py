"""The command line's shape: every fetching verb takes the same fetch flags, one table maps
errors to exit statuses, and a missing input file is the user's mistake (exit 2)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import pytest

from harvester.cli import build_parser, main
from harvester.cli.exits import (
    EXIT_FAILED,
    EXIT_LOCKED,
    EXIT_USAGE,
    JOB_ERRORS,
    fail,
)
from harvester.errors import ConfigError, RunFailed, StateError, StateLocked

if TYPE_CHECKING:
    from pathlib import Path

FETCH_FLAGS = ["--allow", "--allow-private", "--user-agent", "--proxy", "--timeout", "--rate"]


@pytest.mark.parametrize("verb", ["run", "audit"])
def test_every_fetching_verb_takes_the_fetch_flags(verb: str) -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    parser = sub.choices[verb]  # type: ignore[index]
    flags = {flag for action in parser._actions for flag in action.option_strings}
    assert set(FETCH_FLAGS) <= flags


def test_audit_allow_private_reaches_the_config(tmp_path: Path) -> None:
    ns = build_parser().parse_args(["audit", "--state", str(tmp_path / "s"), "--allow-private"])
    assert vars(ns)["fetch.allow_private"] is True


def test_a_missing_input_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "-i", str(tmp_path / "nonexistent.txt"), "-o", str(tmp_path / "o")])
    assert code == EXIT_USAGE
    assert "no input file at" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("error", "status", "says_failed"),
    [
        (ConfigError("bad key", key="x.y"), EXIT_USAGE, False),
        (StateLocked("held by pid 1"), EXIT_LOCKED, False),
        (StateError("corrupt"), EXIT_FAILED, True),
        (RunFailed("worker 1 exited"), EXIT_FAILED, True),
        (sqlite3.OperationalError("disk I/O error"), EXIT_FAILED, True),
        (OSError(28, "No space left on device"), EXIT_FAILED, True),
    ],
)
def test_one_table_maps_each_error_to_its_status(
    error: BaseException, status: int, says_failed: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    assert isinstance(error, JOB_ERRORS)
    assert fail("run", error) == status
    err = capsys.readouterr().err
    assert err.startswith("harvester: ")
    assert ("run failed: " in err) is says_failed


def test_an_error_outside_the_table_is_a_bug_not_a_status() -> None:
    with pytest.raises(TypeError, match="no exit status"):
        fail("run", ValueError("a bug"))
