"""The distribution's name: the one in pyproject, the installed metadata and every extras hint.

``harvester`` on the package index is another project, so a hint saying
``pip install "harvester[parquet]"`` would install someone else's code.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import pytest

from harvester.config.requests import check_proxy
from harvester.errors import ConfigError
from harvester.output.formats import make_sink
from harvester.version import DISTRIBUTION, __version__, install_hint

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_and_installed_metadata_carry_the_distribution_name() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "harvester-sitemaps"
    meta = importlib.metadata.metadata(DISTRIBUTION)
    assert meta["Name"] == DISTRIBUTION
    assert meta["Version"] == __version__
    # The import package and the command keep the short name.
    scripts = importlib.metadata.distribution(DISTRIBUTION).entry_points.select(
        group="console_scripts"
    )
    assert [(ep.name, ep.value) for ep in scripts] == [("harvester", "harvester.cli:main")]
    extras = set(meta.get_all("Provides-Extra") or ())
    assert {"parquet", "dask", "socks"} <= extras


def test_install_hint_names_the_distribution() -> None:
    assert install_hint("parquet") == 'pip install "harvester-sitemaps[parquet]"'


def test_parquet_without_pyarrow_names_the_distribution(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Import of pyarrow fails as on a machine without the extra.
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.delitem(sys.modules, "harvester.output.parquetsink", raising=False)
    with pytest.raises(ConfigError) as info:
        make_sink(str(tmp_path / "x.parquet"), "parquet", resume_at=None, row_group_rows=10)
    assert install_hint("parquet") in str(info.value)


def test_socks_without_aiohttp_socks_names_the_distribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> object:
        return None if name == "aiohttp_socks" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ConfigError) as info:
        check_proxy("socks5://127.0.0.1:1080", key="fetch.proxy")
    assert install_hint("socks") in str(info.value)


def test_no_hint_names_the_other_projects_package() -> None:
    # A literal "harvester[extra]" anywhere a user reads it: the code's messages, the
    # README and the example config.
    pattern = re.compile(r"""(?<![\w-])harvester\[(?:parquet|dask|socks|bloom|bench|test|dev|s3)""")
    files = [*sorted((ROOT / "harvester").rglob("*.py")), ROOT / "README.md"]
    files += [ROOT / "config.example.toml", *sorted((ROOT / "docs").glob("*.md"))]
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in files
        if path.exists()
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []
