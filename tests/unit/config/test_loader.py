"""harvester.config.loader: load_config layers defaults < TOML < overrides, names bad keys."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import pytest

from harvester.config import Config, HostPolicy, load_config
from harvester.errors import ConfigError
from tests.paths import REPO

ROOT = REPO


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


# Every setting, found from the dataclasses (a setting added later is covered without
# touching this file): (TOML table header, error key prefix, field name, annotated type).
# Per-host tables (politeness.hosts, normalize.hosts) get one host, "a.com".
def _settings(cls: type[Any] = Config, table: str = "", key: str = "") -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        sub_table = f"{table}.{f.name}" if table else f.name
        sub_key = f"{key}.{f.name}" if key else f.name
        if dataclasses.is_dataclass(tp):
            out += _settings(tp, sub_table, sub_key)  # type: ignore[arg-type]
        elif typing.get_origin(tp) is MappingProxyType and dataclasses.is_dataclass(
            typing.get_args(tp)[1]
        ):
            out += _settings(typing.get_args(tp)[1], f'{sub_table}."a.com"', f"{sub_key}.'a.com'")
        else:
            out.append((table, key, f.name, tp))
    return out


def _kinds(tp: Any) -> set[str]:
    """What a value of annotated type ``tp`` is: number kinds, text, list, table, ..."""
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        return set().union(*(_kinds(a) for a in typing.get_args(tp) if a is not type(None)))
    if typing.get_origin(tp) is Literal:
        return {"choice"}
    if typing.get_origin(tp) is tuple:
        return {"list"}
    if typing.get_origin(tp) is MappingProxyType:
        return {"table"}
    return {{int: "int", float: "float", str: "str", bool: "bool"}[tp]}


# TOML text of wrong values, by the kind of setting they are wrong for.
_WRONG: dict[str, list[str]] = {
    "float": ["nan", "inf", "-inf", "-1.0", "'1.5'", "true", "{ a = 1 }", "[1.0]"],
    "int": ["9223372036854775808", "-1", "1.5", "nan", "'3'", "true", "{ a = 1 }", "[1]"],
    "bool": ["1", "'true'", "{ a = 1 }"],
    "str": ["3", "true", "{ a = 1 }", "['a']", '"a\\u0000b"'],
    "list": ["'a'", "[1]", "[['a']]", "[{ a = 1 }]", '["a\\u0000b"]', "{ a = 1 }"],
    "choice": ["'no-such-choice'", "3", "['any']"],
    "table": ["3", "'a'", "{ a = 1 }", "{ a = { b = 1 } }"],
}
_CASES = [
    pytest.param(table, f"{key}.{name}", f"{name} = {wrong}", id=f"{key}.{name}={wrong}")
    for table, key, name, tp in _settings()
    for kind in sorted(_kinds(tp))
    for wrong in _WRONG[kind]
]


@pytest.mark.parametrize(("table", "key", "line"), _CASES)
def test_every_setting_refuses_a_wrong_value_naming_its_key(
    tmp_path: Path, table: str, key: str, line: str
) -> None:
    """A value of the wrong type, a non-finite or negative number, an integer past 64
    bits, a NUL in text: each is a ConfigError naming the setting, never a value a
    worker meets later (issue 50: ``rate = nan`` passed and crashed the worker)."""
    path = tmp_path / "c.toml"
    path.write_text(f"[{table}]\n{line}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert key in str(info.value)


_NUMBERS = [
    pytest.param(f"{key}.{name}", tp, id=f"{key}.{name}")
    for _table, key, name, tp in _settings()
    if _kinds(tp) & {"int", "float"} and "'" not in key  # (no flag sets a per-host key)
]


@pytest.mark.parametrize(("key", "tp"), _NUMBERS)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 2**63, -1])
def test_a_flag_with_a_bad_number_names_its_key(key: str, tp: Any, value: float) -> None:
    """What the CLI passes (``--rate nan`` is float("nan")): the same rules as TOML."""
    if tp is int and isinstance(value, float):
        return  # argparse's int() gives no nan
    with pytest.raises(ConfigError) as info:
        load_config(None, {key: value})
    assert key in str(info.value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0])
@pytest.mark.parametrize(
    ("section", "name"),
    [
        (type(getattr(Config(), table.split(".")[0])), name)
        for table, _key, name, tp in _settings()
        if "." not in table and _kinds(tp) == {"float"}
    ]
    + [(HostPolicy, "rate")],
)
def test_a_section_built_in_python_refuses_a_bad_float(
    section: type[Any], name: str, value: float
) -> None:
    """``harvest(cfg)`` callers build sections themselves: their __post_init__ checks too."""
    with pytest.raises(ConfigError, match=name):
        section(**{name: value})


def test_a_scalar_where_a_section_belongs_names_it_beside_a_flag(tmp_path: Path) -> None:
    """``fetch = 3`` in the file and a fetch flag: the flag's merge met an int (issue 50)."""
    path = tmp_path / "c.toml"
    path.write_text("fetch = 3\n")
    with pytest.raises(ConfigError, match=r"^config: fetch: must be a table$"):
        load_config(path, {"fetch.allow_private": True})
    path.write_text("[politeness]\ndefault = 'fast'\n")
    with pytest.raises(ConfigError, match=r"^config: politeness\.default: must be a table$"):
        load_config(path, {"politeness.default.rate": 5.0})


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        (b'[fetch]\nuser_agent = "bot\xff"\n', "config: fetch.user_agent: c.toml line 2: "),
        (b'[fetch]\nallow = ["a", "\xfe"]\n', "config: fetch.allow[1]: c.toml line 2: "),
        (
            b'[politeness.hosts."\xfe.com"]\nrate = 1\n',
            r"config: politeness.hosts.\xfe.com: c.toml line 1: ",
        ),
        (b"[fetch]\n# caf\xe9\nretries = 1\n", "config: c.toml line 2: "),  # a comment: no key
    ],
)
def test_a_file_that_is_not_utf8_names_the_key_or_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raw: bytes, where: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("c.toml").write_bytes(raw)
    with pytest.raises(ConfigError) as info:
        load_config("c.toml")
    assert str(info.value).startswith(where)
    assert "is not UTF-8" in str(info.value)


def test_toml_nested_too_deeply_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[fetch]\nallow = " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config(path)


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ("[politeness.default]\nrate = 1e-320\n", "politeness.default.rate"),
        ("[politeness.hosts.'a.com']\nrate = 1e-320\n", "politeness.hosts.'a.com'.rate"),
    ],
)
def test_a_rate_whose_period_overflows_is_refused(tmp_path: Path, toml: str, key: str) -> None:
    """1 / 1e-320 is inf: the limiter divided by zero in the worker (issue 50)."""
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert f"{key}: is too small" in str(info.value)


def test_a_bloom_filter_larger_than_the_machine_is_refused() -> None:
    """rbloom allocates the whole filter as a host starts: 1e11 URLs at 1e-6 (335 GiB)
    aborted the worker process (exit 134) instead of failing the config."""
    with pytest.raises(ConfigError, match=r"^config: dedupe\.bloom_capacity: a Bloom filter"):
        load_config(None, {"dedupe.mode": "bloom", "dedupe.bloom_capacity": 10**11})
    load_config(None, {"dedupe.mode": "exact", "dedupe.bloom_capacity": 10**11})  # unused


def test_more_worker_processes_than_one_machine_runs_are_refused() -> None:
    """run.workers = 2**63 - 1 built a pool object a worker and never ended."""
    with pytest.raises(ConfigError, match=r"^config: run\.workers: must be at most 4096"):
        load_config(None, {"run.workers": 4097})


@pytest.mark.parametrize("agent", ["bot\r\nX-Evil: 1", "bot\n", "bot\x00"])
def test_a_user_agent_that_is_no_header_value_is_refused(agent: str) -> None:
    """It is sent as a header: a line break crashed the worker's first request."""
    with pytest.raises(ConfigError, match=r"fetch\.user_agent"):
        load_config(None, {"fetch.user_agent": agent})
