"""Filters: which page URLs are written and which index children are downloaded.

In: ``FiltersConfig`` (``[filters]``: ``include``/``exclude`` on a page's ``loc``,
``follow``/``skip_sitemap`` on an index child's URL, each a list of Python regular
expressions matched with ``re.search``, i.e. anywhere in the URL). Out: a
``Filters`` with two predicates, ``keep(loc)`` and ``follow(url)``, or None from
``compile_filters`` when nothing is configured, so a run without filters pays one
``is None`` test per batch and nothing per URL.

Semantics (Scrapy's ``sitemap_follow`` for children): a URL passes when it
matches at least one ``include`` (``follow``) pattern, or when there are none, and
matches no ``exclude`` (``skip_sitemap``) pattern. A page URL that does not pass is
counted as ``filtered`` in its host report (not ``dropped``, which is for invalid
locs); a child that does not pass is never requested and counted as
``sitemaps_filtered``. The filter applies to a child sitemap of an index only, not
to the sitemaps robots.txt lists (those are the site's entry points).

Compiled once per process: ``compile_filters`` is cached on the frozen config
section, and the patterns of a list are joined into one alternation so a URL costs
one regex search per list, however many patterns it has.

Example::

    filters = compile_filters(FiltersConfig(include=(r"/blog/",), exclude=(r"\\?",)))
    filters.keep("https://e.com/blog/a")      # True
    filters.keep("https://e.com/blog/a?p=2")  # False
"""

from __future__ import annotations

import functools
import operator
import re
from itertools import compress
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from harvester.config import FiltersConfig

__all__ = ["Filters", "compile_filters", "compile_patterns"]

_T = TypeVar("_T")


def compile_patterns(patterns: Sequence[str]) -> Callable[[str], object] | None:
    """One ``search`` callable for any of ``patterns`` (None for an empty list).

    Raises ``re.error`` naming the first pattern that does not compile. The
    patterns are joined as ``(?:a)|(?:b)``: one scan of the URL instead of one
    per pattern. A pattern with global inline flags (``(?i)...``) cannot be
    joined; then they are kept as separate regexes (``(?i:...)`` joins fine).
    """
    if not patterns:
        return None
    compiled = [re.compile(p) for p in patterns]  # each on its own first: errors name it
    if len(compiled) == 1:
        return compiled[0].search
    try:
        return re.compile("|".join(f"(?:{p})" for p in patterns)).search
    except re.error:
        searches = [c.search for c in compiled]
        return lambda url: any(s(url) for s in searches)


class Filters:
    """The compiled ``[filters]`` of a run: ``keep`` for page URLs, ``follow`` for children.

    Immutable and shared by every host of a process.
    """

    __slots__ = ("_exclude", "_follow", "_include", "_skip", "pages", "sitemaps")

    def __init__(self, cfg: FiltersConfig) -> None:
        self._include = compile_patterns(cfg.include)
        self._exclude = compile_patterns(cfg.exclude)
        self._follow = compile_patterns(cfg.follow)
        self._skip = compile_patterns(cfg.skip_sitemap)
        # Whether each side filters at all: the callers skip the per-URL call otherwise.
        self.pages = self._include is not None or self._exclude is not None
        self.sitemaps = self._follow is not None or self._skip is not None

    def keep(self, loc: str) -> bool:
        """Whether a page URL (a record's ``loc``) is written."""
        include, exclude = self._include, self._exclude
        if include is not None and not include(loc):
            return False
        return exclude is None or not exclude(loc)

    def select(self, items: list[_T], loc: Callable[[_T], str]) -> list[_T]:
        """The ``items`` whose ``loc(item)`` passes ``keep``, in order.

        The same answer as ``[i for i in items if keep(loc(i))]``, in C loops
        (``map``, ``compress``, the regex's own ``search``): a Python loop with a
        call per URL cost the compiled URL path a fifth of its speed
        (benchmarks/bench_filters.py), this a few percent.
        """
        include, exclude = self._include, self._exclude
        if include is not None:
            items = list(compress(items, map(include, map(loc, items))))
        if exclude is not None:
            items = list(compress(items, map(operator.not_, map(exclude, map(loc, items)))))
        return items

    def follow(self, url: str) -> bool:
        """Whether a child sitemap of an index is downloaded."""
        follow, skip = self._follow, self._skip
        if follow is not None and not follow(url):
            return False
        return skip is None or not skip(url)


@functools.lru_cache(maxsize=8)
def compile_filters(cfg: FiltersConfig) -> Filters | None:
    """The run's ``Filters`` (compiled once per process), or None when none is set."""
    if not (cfg.include or cfg.exclude or cfg.follow or cfg.skip_sitemap):
        return None
    return Filters(cfg)
