"""harvester.config.loader: load_config layers defaults < TOML < overrides, names bad keys."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType

import pytest

from harvester.config import Config, HostPolicy, load_config
from harvester.errors import ConfigError

ROOT = Path(__file__).parent.parent.parent


def test_example_config_equals_defaults() -> None:
    """config.example.toml documents every default: loading it must give Config()."""
    assert load_config(ROOT / "config.example.toml") == Config()


def test_example_config_lists_every_key() -> None:
    text = (ROOT / "config.example.toml").read_text()
    for section in dataclasses.fields(Config):
        for f in dataclasses.fields(getattr(Config(), section.name)):
            if f.name in ("hosts", "default"):
                continue
            assert f"{f.name} =" in text, (
                f"{section.name}.{f.name} missing from config.example.toml"
            )


def test_overrides_beat_file(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[fetch]\nuser_agent = "a"\nretries = 1\n')
    cfg = load_config(path, {"fetch.user_agent": "b"})
    assert cfg.fetch.user_agent == "b"
    assert cfg.fetch.retries == 1


def test_per_host_policy(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[politeness.hosts."example.com"]\nrate = 5\nconcurrency = 4\n')
    cfg = load_config(path)
    assert isinstance(cfg.politeness.hosts, MappingProxyType)
    assert cfg.politeness.policy_for("example.com") == HostPolicy(rate=5.0, concurrency=4)
    assert cfg.politeness.policy_for("other.org") == HostPolicy()


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ("[fetch]\nuser_agnet = 'x'\n", "fetch.user_agnet"),
        ("[nope]\n", "nope"),
        ("[fetch]\nretries = 'three'\n", "fetch.retries"),
        ("[fetch]\nretries = -1\n", "fetch.retries"),
        ("[reader]\nmax_decompressed_bytes = true\n", "reader.max_decompressed_bytes"),
        ("[discovery]\ncross_host = 'sometimes'\n", "discovery.cross_host"),
        ("[politeness.hosts.'a.com']\nrate = -2\n", "politeness.hosts.'a.com'.rate"),
        ("[politeness.default]\nconcurrency = 0\n", "politeness.default.concurrency"),
        ("[fetch]\nfirst_byte_timeout = 0\n", "fetch.first_byte_timeout"),
        ("[fetch]\nmin_speed_window = 0\n", "fetch.min_speed_window"),
        ("[fetch]\nmin_speed = -1\n", "fetch.min_speed"),
        ("[fetch]\nresolver = 'magic'\n", "fetch.resolver"),
        ("[fetch]\nnameservers = ['dns.example']\n", "fetch.nameservers[0]"),
        ("[fetch]\nnameservers = ['127.0.0.1', '10.0.0.1:99999']\n", "fetch.nameservers[1]"),
        ("[fetch]\ndns_cache_size = 0\n", "fetch.dns_cache_size"),
        ("[fetch]\ndns_timeout = 0\n", "fetch.dns_timeout"),
        ("[dedupe]\nmode = 'fuzzy'\n", "dedupe.mode"),
        ("[dedupe]\nspill_threshold = 0\n", "dedupe.spill_threshold"),
        ("[dedupe]\nbloom_error_rate = 1.5\n", "dedupe.bloom_error_rate"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, toml: str, key: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert key in str(info.value)


def test_invalid_toml_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[fetch\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(path)
