"""The checks every config section shares (used by ``loader`` and the sections' ``__post_init__``).

In: one value with its dotted key, or a section dataclass instance and its section
name. Out: nothing, or a ``ConfigError`` naming the key. Its own module because the
section modules (``crawl``, ``urls``, ``run``) all call it and ``loader`` imports them
all, so it has to sit below both.

Numbers: every numeric setting is a finite number from 0 up. No setting takes
``inf`` or ``nan``: a worker turns a duration into a deadline, a rate into a wait,
a count into a size, and ``nan`` makes each of them meaningless (``int(nan)``
raises in the middle of a run) while ``inf`` overflows the same arithmetic. "No
limit" is written as a large number (``1e9`` seconds is 31 years), or as ``0``
where a key's comment says 0 turns it off. Integers fit in 64 bits, as TOML's do
(SQLite and the compiled modules store them so).
"""

from __future__ import annotations

import dataclasses
import math

from harvester.errors import ConfigError

__all__ = ["INT_MAX", "check_finite", "check_int", "check_section", "check_text"]

INT_MAX = 2**63 - 1  # a TOML integer's range (64-bit signed): the largest any setting takes


def check_finite(value: float, key: str) -> None:
    """Refuse ``nan``, ``inf`` and ``-inf`` for ``key`` (every float setting)."""
    if not math.isfinite(value):
        raise ConfigError(
            f"must be a finite number, not {value} (for no limit give a large number)", key=key
        )


def check_int(value: int, key: str) -> None:
    """Refuse an integer outside 64 bits for ``key`` (TOML's range; ``--retries 10**20``)."""
    if not -INT_MAX - 1 <= value <= INT_MAX:
        raise ConfigError(f"must be an integer of at most {INT_MAX}", key=key)


def check_text(value: str, key: str) -> None:
    """Refuse a NUL character in ``key`` (no path, URL, header or pattern holds one)."""
    if "\x00" in value:
        raise ConfigError("must not contain a NUL character", key=key)


def check_section(obj: object, section: str) -> None:
    """Check every field of a config section: numbers finite, >= 0 and within 64 bits;
    text (and lists of text) without NUL.

    The key names the field within ``section``; ``load_config`` replaces it with the
    full dotted path (e.g. ``politeness.hosts.'a.com'.rate``). The sections call it
    from ``__post_init__``, so a ``Config`` built in Python (``harvest(cfg)``) is held
    to the same rules as one loaded from TOML and flags.
    """
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        key = f"{section}.{f.name}"
        if isinstance(value, str):
            check_text(value, key)
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                if isinstance(item, str):
                    check_text(item, f"{key}[{i}]")
        elif isinstance(value, bool) or not isinstance(value, int | float):
            continue  # (bool is an int in Python; the loader checks bools as bools)
        elif isinstance(value, float):
            check_finite(value, key)
        else:
            check_int(value, key)
        if isinstance(value, int | float) and value < 0:
            raise ConfigError("must be >= 0", key=key)
