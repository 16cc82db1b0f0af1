"""The truth of a cron run with adaptive revisit: what a correct tool reports, given
which sitemaps it asked (``benchmarks.realweb.cron``, issue 53 item 4).

In: the web (generation 0), the seed, the generation of each run, and per run the
sitemaps the state file says that run did not ask (``run<r>/sitemaps.json``: status
``not_due``). Out: per run the events (``new``, ``changed``, ``removed``: sets of locs)
a tool reports that holds, per sitemap, the list of its last read: a sitemap not
asked keeps its old list (it changes nothing this run), one asked brings the list of
the run's generation. A URL is ``new`` when no list held it, ``removed`` when no list
holds it any more, ``changed`` when its lastmod advanced on an honest host
(``generations.delta``'s rules, per host over the union of its lists).

So a change in a sitemap not due is expected at its due run, not before: the
check is "exact against what was asked". The plain per-generation truth
(``generations.delta``) is the other check of ``cronreport``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from benchmarks.realweb.generations import Sitemaps, parse, step

if TYPE_CHECKING:
    from pathlib import Path

    from benchmarks.realweb.web import Site

Lists = dict[str, dict[str, str | None]]  # listed path -> loc -> lastmod


def lists(maps: Sitemaps, paths: list[str]) -> Lists:
    """The list behind each listed path (a moved file is found behind its redirect)."""
    out: Lists = {}
    for path in paths:
        target = maps.redirects.get(path, path)
        out[path] = dict(maps.urlsets.get(target, []))
    return out


def generations(
    sites: list[Site], seed: int, last: int
) -> tuple[dict[str, list[Lists]], dict[str, bool]]:
    """Site name -> its lists in generations 0..``last`` (listed paths: generation 0's),
    and whether the site is honest (``Sitemaps.honest``: its lastmod moves)."""
    maps = {s.name: parse(s) for s in sites if s.expect == "ok" and s.pages}
    honest = {name: m.honest for name, m in maps.items()}
    paths = {name: sorted(m.urlsets) for name, m in maps.items()}
    out: dict[str, list[Lists]] = {name: [] for name in maps}
    for g in range(last + 1):
        if g:
            step(maps, seed, g)
        for name, m in maps.items():
            out[name].append(lists(m, paths[name]))
    return out, honest


def not_asked(run_dir: Path, r: int) -> set[str]:
    """The sitemap URLs run ``r`` did not ask (adaptive revisit), and where they redirected."""
    path = run_dir / f"run{r}" / "sitemaps.json"
    if not path.exists():
        return set()
    out = set()
    for _host, url, final, status, _http in json.loads(path.read_text()):
        if status == "not_due":
            out.add(url)
            if final:  # (listed as http://, found at https://: either names it)
                out.add(final)
    return out


def _union(held: Lists) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for listing in held.values():
        for loc, lastmod in listing.items():
            if loc not in out or (lastmod or "") > (out[loc] or ""):
                out[loc] = lastmod
    return out


def truths(
    run_dir: Path, sites: list[Site], seed: int, gens: list[int]
) -> list[dict[str, frozenset[str]]]:
    """Per run, the events a tool reports that asked exactly what the state says it asked."""
    by_name = {s.name: s for s in sites}
    history, honest = generations(sites, seed, max(gens))
    held: dict[str, Lists] = {}
    out = []
    for r, g in enumerate(gens, start=1):
        skipped = not_asked(run_dir, r) if r > 1 else set()
        new: set[str] = set()
        changed: set[str] = set()
        removed: set[str] = set()
        for name, per_gen in history.items():
            site = by_name[name]
            base = f"{site.scheme}://{site.content_host}"
            before = held.get(name, {})
            after = {
                path: before[path] if base + path in skipped and path in before else listing
                for path, listing in per_gen[g].items()
            }
            was, now = _union(before), _union(after)
            new.update(loc for loc in now if loc not in was)
            removed.update(loc for loc in was if loc not in now)
            if honest[name]:
                changed.update(
                    loc
                    for loc, lastmod in now.items()
                    if loc in was and lastmod and (was[loc] or "") < lastmod
                )
            held[name] = after
        out.append(
            {"new": frozenset(new), "changed": frozenset(changed), "removed": frozenset(removed)}
        )
    return out
