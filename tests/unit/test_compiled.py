"""Every compiled module is built, fresh, and ``--version`` says which are in use."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from harvester import compiled


@pytest.mark.skipif(compiled.pure_python(), reason="the pure-Python path was asked for")
@pytest.mark.parametrize("name", compiled.NAMES)
def test_each_compiled_module_is_built_and_fresh(name: str) -> None:
    # The install builds them wherever a C compiler is (every machine of this project);
    # if this fails, `pip install -e .` printed why the build of the module failed.
    assert compiled.load(name) is not None, f"{name} not in use: {compiled.MISSING.get(name)}"
    module = importlib.import_module(compiled.module_path(name))
    built = Path(module.__file__ or "").stat().st_mtime
    pyx = Path(module.__file__ or "").with_name(f"{name}.pyx")
    package = compiled.PACKAGES[name] or "harvester"  # ("": the ground floor)
    assert pyx.parent.name == package  # beside its Python half
    source = pyx.stat().st_mtime
    assert built >= source, f"{pyx} changed since the build: run scripts/setup"


def test_every_pyx_is_listed() -> None:
    sources = {p.stem for p in Path(compiled.__file__).parent.rglob("_c*.pyx")}
    assert sources == set(compiled.NAMES)


def test_version_says_whether_the_compiled_modules_are_in_use(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from harvester.cli import main

    monkeypatch.setattr(compiled, "MISSING", {})
    monkeypatch.setattr(compiled, "load", lambda name: None)  # as if each one loaded
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("harvester ")
    assert "compiled: yes" in out
    monkeypatch.setattr(
        compiled, "MISSING", {"_cparse": "ImportError: no module named harvester.reader._cparse"}
    )
    main(["--version"])
    assert "compiled: no: _cparse (ImportError: no module named harvester.reader._cparse)" in (
        capsys.readouterr().out
    )


def test_an_untested_lxml_turns_cpush_off(monkeypatch: pytest.MonkeyPatch) -> None:
    # _cpush drives libxml2 through fields that are no public API: outside the tested
    # releases it is not even imported, and urlsets go through lxml's XMLPullParser.
    from lxml import etree

    from harvester.config import ReaderConfig
    from harvester.models import Entry, Kind, ReadStats
    from harvester.reader import parse

    monkeypatch.delenv("HARVESTER_PURE_PYTHON", raising=False)  # (the gate is checked after it)
    monkeypatch.setattr(compiled, "MISSING", {})
    monkeypatch.setattr(etree, "LXML_VERSION", (6, 2, 0, 0))
    assert compiled.load("_cpush") is None
    assert compiled.MISSING["_cpush"] == "lxml 6.2.0.0 is not a tested release (6.1.x)"
    assert compiled.load("_clibxml") is None  # its libxml2 lookup, the same
    assert compiled.load("_ckept") is None  # its fast path, on the same parser context
    assert compiled.load("_cfast") is None
    monkeypatch.setattr(parse, "_urlset_push", parse._urlset_reader())
    assert parse._urlset_push is None
    parser = parse.XmlSitemapParser(Kind.URLSET, parse.EntrySink(ReadStats(), ReaderConfig()))
    assert parser._push is None
    out: list[Entry] = []
    parser.feed(b"<urlset><url><loc>https://e.com/a</loc></url></urlset>", out)
    parser.close(out)
    assert [e.loc for e in out] == ["https://e.com/a"]


def test_an_untested_libxml2_turns_cpush_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from lxml import etree

    monkeypatch.delenv("HARVESTER_PURE_PYTHON", raising=False)
    monkeypatch.setattr(compiled, "MISSING", {})
    monkeypatch.setattr(etree, "LIBXML_VERSION", (2, 15, 1))
    assert compiled.load("_cpush") is None
    assert compiled.MISSING["_cpush"] == "libxml2 2.15.1 is not a tested release (2.14.x)"


def test_pyproject_allows_the_tested_lxml_releases_only() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    low = min(compiled.LXML_TESTED)
    high = max(compiled.LXML_TESTED)
    wanted = f"lxml>={low[0]}.{low[1]},<{high[0]}.{high[1] + 1}"
    assert wanted in pyproject["project"]["dependencies"]
    assert wanted in pyproject["build-system"]["requires"]


def test_compiled_off_names_the_modules_to_leave_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARVESTER_PURE_PYTHON", raising=False)
    monkeypatch.setattr(compiled, "MISSING", {})
    monkeypatch.setenv("HARVESTER_COMPILED_OFF", "_cpush,_cdates")
    assert compiled.load("_cpush") is None
    assert compiled.load("_cdates") is None
    assert compiled.MISSING == {
        "_cpush": "HARVESTER_COMPILED_OFF names it",
        "_cdates": "HARVESTER_COMPILED_OFF names it",
    }


@pytest.mark.parametrize("value", ["", "0", "false", "False", "NO", "off", " 0 "])
def test_pure_python_off_values_keep_the_compiled_path(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """Issue 50: ``HARVESTER_PURE_PYTHON=0`` selected the Python path (any non-empty value did)."""
    monkeypatch.setattr(compiled, "MISSING", {})
    monkeypatch.setenv("HARVESTER_PURE_PYTHON", value)
    assert compiled.pure_python() is False
    assert compiled.load("_cdates") is not None, compiled.MISSING


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "On"])
def test_pure_python_on_values_select_the_python_path(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setattr(compiled, "MISSING", {})
    monkeypatch.setenv("HARVESTER_PURE_PYTHON", value)
    assert compiled.pure_python() is True
    assert compiled.load("_cdates") is None
    assert compiled.MISSING["_cdates"] == f"HARVESTER_PURE_PYTHON={value} asks for the Python path"


def test_pure_python_with_another_value_warns_and_takes_the_python_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(compiled, "MISSING", {})
    monkeypatch.setenv("HARVESTER_PURE_PYTHON", "maybe")
    with pytest.warns(RuntimeWarning, match=r"HARVESTER_PURE_PYTHON='maybe' is neither"):
        assert compiled.load("_cdates") is None


@pytest.mark.parametrize(("value", "in_use"), [("0", True), ("false", True), ("1", False)])
def test_version_of_a_real_process_follows_the_variable(value: str, in_use: bool) -> None:
    """What a user runs: ``HARVESTER_PURE_PYTHON=0 harvester --version`` says compiled: yes."""
    env = {**os.environ, "HARVESTER_PURE_PYTHON": value}
    proc = subprocess.run(
        [sys.executable, "-m", "harvester", "--version"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    assert proc.stderr == ""
    if in_use:
        assert "compiled: yes" in proc.stdout
    else:
        assert f"(HARVESTER_PURE_PYTHON={value} asks for the Python path)" in proc.stdout
