"""The root ``Config`` and its loader: defaults < TOML file < CLI flags, once.

In: an optional TOML path and a flat ``{"section.key": value}`` override dict.
Out: a frozen, validated ``Config`` whose sections come from ``crawl``, ``urls``
and ``run`` (their dataclass defaults are the only defaults). Unknown keys and
ill-typed values raise ``ConfigError`` naming the dotted key. Its own module: how
a TOML table becomes the tree of sections (``_build``/``_coerce``) is one concern,
what each section holds and checks is another.
"""

from __future__ import annotations

import copyreg
import dataclasses
import tomllib
import types
import typing
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from harvester.config.checks import check_finite, check_int, check_text
from harvester.config.crawl import (
    DiscoveryConfig,
    FetchConfig,
    FiltersConfig,
    LimitsConfig,
    PolitenessConfig,
    ReaderConfig,
)
from harvester.config.policy import PolicyConfig  # issue 48
from harvester.config.run import (
    AuditConfig,
    DistributedConfig,
    OutputConfig,
    RunConfig,
    StateConfig,
)
from harvester.config.urls import DedupeConfig, NormalizeConfig
from harvester.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Config", "load_config"]


def _frozen_mapping(items: dict[str, Any]) -> MappingProxyType[str, Any]:
    """Rebuild a pickled MappingProxyType (see the copyreg registration below)."""
    return MappingProxyType(items)


# MappingProxyType (our frozen per-host overrides) cannot be pickled by default, and
# the config travels to worker processes: pickle it as the dict it wraps.
copyreg.pickle(MappingProxyType, lambda m: (_frozen_mapping, (dict(m),)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """The whole configuration; frozen after ``load_config``."""

    reader: ReaderConfig = field(default_factory=ReaderConfig)
    fetch: FetchConfig = field(default_factory=FetchConfig)
    politeness: PolitenessConfig = field(default_factory=PolitenessConfig)
    discovery: DiscoveryConfig = field(default_factory=DiscoveryConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    normalize: NormalizeConfig = field(default_factory=NormalizeConfig)
    dedupe: DedupeConfig = field(default_factory=DedupeConfig)
    run: RunConfig = field(default_factory=RunConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    state: StateConfig = field(default_factory=StateConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    filters: FiltersConfig = field(default_factory=FiltersConfig)  # issue 32
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)  # issue 48


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Build the frozen ``Config``: defaults < TOML at ``path`` < ``overrides``.

    ``overrides`` maps dotted keys (``"fetch.user_agent"``) to already-typed
    values, as the CLI produces them. Raises ``ConfigError`` naming the key.
    """
    data = {} if path is None else _read_toml(path)
    for dotted, value in (overrides or {}).items():
        *parents, leaf = dotted.split(".")
        node = data
        for depth, part in enumerate(parents):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):  # the file's `fetch = 3` under a --rate flag
                raise ConfigError("must be a table", key=".".join(parents[: depth + 1]))
        if isinstance(value, dict) and isinstance(node.get(leaf), dict):
            value = {**node[leaf], **value}  # a table flag (--header) adds to the file's table
        node[leaf] = value
    cfg: Config = _build(Config, data, "")
    return cfg


def _read_toml(path: str | Path) -> dict[str, Any]:
    """The TOML file at ``path`` as a dict; ``ConfigError`` for any file that is not one."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
    try:
        text = raw.decode("utf-8")  # what tomllib.load does, but here we can say where
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path} line {line}: byte {raw[exc.start]:#04x} is not UTF-8 (TOML is UTF-8 text)",
            key=_key_of_bad_bytes(raw),
        ) from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {path}: {exc}") from exc
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise ConfigError(f"invalid TOML in {path}: nested too deeply") from None


def _key_of_bad_bytes(raw: bytes) -> str | None:
    """The dotted key whose value (or name) holds the first non-UTF-8 bytes, if any.

    The bytes are read as lone surrogates (``surrogateescape``), which TOML strings
    take, so the document can be parsed to find them; None when they sit in a comment
    or the document does not parse that way either (the error then names the line).
    """
    try:
        data = tomllib.loads(raw.decode("utf-8", "surrogateescape"))
    except (tomllib.TOMLDecodeError, RecursionError):
        return None

    def bad(text: str) -> bool:
        return any("\udc80" <= c <= "\udcff" for c in text)

    def walk(node: Any, key: str) -> str | None:
        if isinstance(node, str):
            return key if bad(node) else None
        if isinstance(node, list):
            children = [(f"{key}[{i}]", child) for i, child in enumerate(node)]
        elif isinstance(node, dict):
            children = [(f"{key}.{name}" if key else name, child) for name, child in node.items()]
        else:
            return None
        for child_key, child in children:
            if bad(child_key):  # a key's own name (the error shows its bytes escaped)
                return child_key.encode("utf-8", "surrogateescape").decode(
                    "utf-8", "backslashreplace"
                )
            found = walk(child, child_key)
            if found is not None:
                return found
        return None

    return walk(data, "")


def _build(cls: type[Any], data: Any, prefix: str) -> Any:
    """Instantiate dataclass ``cls`` from a TOML table, checking keys and types."""
    if not isinstance(data, dict):
        raise ConfigError("must be a table", key=prefix or "<root>")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        key = f"{prefix}.{unknown[0]}" if prefix else unknown[0]
        raise ConfigError(f"unknown key (known: {', '.join(sorted(names))})", key=key)
    kwargs: dict[str, Any] = {}
    for name, raw in data.items():
        key = f"{prefix}.{name}" if prefix else name
        kwargs[name] = _coerce(hints[name], raw, key)
    try:
        return cls(**kwargs)
    except ConfigError as exc:
        field_name = (exc.key or "").rpartition(".")[2]
        full = f"{prefix}.{field_name}" if prefix else field_name
        raise ConfigError(exc.message.partition(": ")[2] or exc.message, key=full) from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc), key=prefix or "<root>") from exc


def _coerce(tp: Any, raw: Any, key: str) -> Any:
    """Check/convert one TOML value against the annotated type ``tp``."""
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return _build(tp, raw, key)  # type: ignore[arg-type]
    if origin is MappingProxyType:
        _, value_tp = typing.get_args(tp)
        if not isinstance(raw, dict):
            raise ConfigError("must be a table", key=key)
        return MappingProxyType(
            {str(k): _coerce(value_tp, v, f"{key}.{k!r}") for k, v in raw.items()}
        )
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(tp)
        if raw is None and type(None) in args:
            return None
        non_none = [a for a in args if a is not type(None)]
        return _coerce(non_none[0], raw, key)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if raw not in allowed:
            raise ConfigError(f"must be one of {', '.join(map(repr, allowed))}", key=key)
        return raw
    if origin is tuple:
        (item_tp, *_) = typing.get_args(tp)
        if not isinstance(raw, list | tuple):
            raise ConfigError("must be a list", key=key)
        return tuple(_coerce(item_tp, v, f"{key}[{i}]") for i, v in enumerate(raw))
    if tp is bool:
        if not isinstance(raw, bool):
            raise ConfigError("must be true or false", key=key)
        return raw
    if tp is int:
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise ConfigError("must be an integer", key=key)
        check_int(raw, key)
        return raw
    if tp is float:
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise ConfigError("must be a number", key=key)
        if isinstance(raw, int):
            check_int(raw, key)  # (float() of a huge one would raise OverflowError)
        check_finite(float(raw), key)
        return float(raw)
    if tp is str:
        if not isinstance(raw, str):
            raise ConfigError("must be a string", key=key)
        check_text(raw, key)
        return raw
    raise ConfigError(f"unsupported type {tp!r}", key=key)  # pragma: no cover
