"""Every compiled module is built, fresh, and ``--version`` says which are in use."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from harvester import compiled


@pytest.mark.skipif(
    bool(os.environ.get("HARVESTER_PURE_PYTHON")), reason="the pure-Python path was asked for"
)
@pytest.mark.parametrize("name", compiled.NAMES)
def test_each_compiled_module_is_built_and_fresh(name: str) -> None:
    # The install builds them wherever a C compiler is (every machine of this project);
    # if this fails, `pip install -e .` printed why the build of the module failed.
    assert compiled.load(name) is not None, f"{name} not in use: {compiled.MISSING.get(name)}"
    module = importlib.import_module(f"harvester.{name}")
    built = Path(module.__file__ or "").stat().st_mtime
    source = Path(compiled.__file__).with_name(f"{name}.pyx").stat().st_mtime
    assert built >= source, f"harvester/{name}.pyx changed since the build: run scripts/setup"


def test_every_pyx_is_listed() -> None:
    sources = {p.stem for p in Path(compiled.__file__).parent.glob("_c*.pyx")}
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
        compiled, "MISSING", {"_cparse": "ImportError: no module named harvester._cparse"}
    )
    main(["--version"])
    assert "compiled: no: _cparse (ImportError: no module named harvester._cparse)" in (
        capsys.readouterr().out
    )
