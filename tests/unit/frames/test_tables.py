"""``config_for``: keyword options over a Config, a TOML file or the defaults."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from harvester.config import load_config
from harvester.errors import ConfigError
from harvester.frames.tables import OPTIONS, config_for

if TYPE_CHECKING:
    from pathlib import Path


def test_options_over_the_defaults() -> None:
    cfg = config_for(None, {"allow_private": True, "rate": 5, "max_urls_per_host": 10}, None)
    assert cfg.fetch.allow_private is True
    assert cfg.politeness.default.rate == 5.0
    assert cfg.limits.max_urls_per_host == 10
    assert cfg.run.uvloop is False


def test_options_over_a_config_keep_its_other_settings() -> None:
    base = load_config(overrides={"fetch.user_agent": "mine/1", "politeness.default.burst": 7})
    cfg = config_for(base, {"rate": 3.5, "timeout": 9}, {"fetch.retries": 1})
    assert (cfg.fetch.user_agent, cfg.politeness.default.burst) == ("mine/1", 7)
    assert (cfg.politeness.default.rate, cfg.fetch.total_timeout, cfg.fetch.retries) == (3.5, 9, 1)


def test_options_over_a_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "h.toml"
    path.write_text('[fetch]\nuser_agent = "file/1"\nretries = 4\n')
    cfg = config_for(path, {"retries": 0}, None)
    assert (cfg.fetch.user_agent, cfg.fetch.retries) == ("file/1", 0)


def test_bad_values_and_names_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown option 'rat'"):
        config_for(None, {"rat": 1}, None)
    with pytest.raises(ConfigError):
        config_for(None, {"rate": -1}, None)


def test_every_option_names_a_real_setting() -> None:
    cfg = load_config()
    for key in OPTIONS.values():
        obj = cfg
        for part in key.split("."):
            obj = getattr(obj, part)
