"""The checks every config section shares (used by their ``__post_init__``).

In: a section dataclass instance and its section name. Out: nothing, or a
``ConfigError`` naming the key. Its own module because the section modules
(``crawl``, ``urls``, ``run``) all call it and ``loader`` imports them all, so
it has to sit below both.
"""

from __future__ import annotations

import dataclasses

from harvester.errors import ConfigError

__all__ = ["reject_negative"]


def reject_negative(obj: object, section: str) -> None:
    """Reject negative numbers in any numeric field of a config section.

    The key names the field within ``section``; ``load_config`` replaces it
    with the full dotted path (e.g. ``politeness.hosts.'a.com'.rate``).
    """
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            raise ConfigError("must be >= 0", key=f"{section}.{f.name}")
