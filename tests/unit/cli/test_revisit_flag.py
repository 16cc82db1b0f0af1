"""``--revisit due|all`` sets ``state.revisit`` (issue 53 item 4); its keys load from TOML."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from harvester.cli import build_parser
from harvester.cli.options import overrides
from harvester.config import load_config
from harvester.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path


def test_the_flag_sets_the_key() -> None:
    ns = build_parser().parse_args(["run", "-i", "seeds.txt", "--revisit", "all"])
    assert overrides(ns)["state.revisit"] == "all"
    ns = build_parser().parse_args(["run", "-i", "seeds.txt"])
    assert "state.revisit" not in overrides(ns)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "-i", "seeds.txt", "--revisit", "sometimes"])


def test_defaults_and_toml(tmp_path: Path) -> None:
    cfg = load_config(None)
    assert (cfg.state.revisit, cfg.state.max_revisit_interval) == ("due", 604800.0)
    path = tmp_path / "c.toml"
    path.write_text('[state]\nrevisit = "all"\nmax_revisit_interval = 3600.0\n')
    cfg = load_config(str(path))
    assert (cfg.state.revisit, cfg.state.max_revisit_interval) == ("all", 3600.0)
    path.write_text("[state]\nmax_revisit_interval = -1.0\n")
    with pytest.raises(ConfigError):
        load_config(str(path))
