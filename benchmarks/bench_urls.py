"""URL benchmark: normalize + dedupe of synthetic sitemap URLs, ours against a plain set().

Generates ``--count`` URLs (seeded) for one host, in chunks of 100,000 so the
corpus is never held whole, shaped like sitemap locs: 60-120 characters,
``--canonical`` (default 85 %) already canonical (half of them with a sorted,
content-bearing query), the rest variants that take the general route (upper-case host,
default port, tracking parameters, unsorted query, fragments, percent-encoding),
and ``--dup`` (default 10 %) repeats of earlier URLs. Per chunk, on the same URLs:

* ``ours``: ``Normalizer().canonical`` → ``fingerprint`` → ``SeenSet.add``;
* ``baseline``: the same ``canonical`` → ``set.add(hash(url))`` (what
  ``HostWorker`` did before): the speed and memory a plain ``set`` costs.

Prints one JSON line per variant, then a markdown table: URLs/s (one core),
µs/URL, distinct URLs, seen-set bytes and bytes/URL (``SeenSet.memory_bytes``;
for the set, ``sys.getsizeof`` of the set plus its int objects). Also times
``canonical`` alone on already-canonical and on variant URLs.

``--compare`` instead checks the candidate libraries (w3lib, url-normalize,
yarl, ours) against our rules on a table of cases and times them on typical
URLs; the candidates that are not installed are skipped.

``--spill N`` sets ``spill_threshold`` so the spill path is measured too (its
bytes/URL then count only what stays in memory).

Targets (issue 5): ≥ 200,000 URLs/s for normalize + dedupe, ≤ 24 bytes/URL at
10 million URLs.

Usage::

    python -m benchmarks.bench_urls                  # 10 million URLs
    python -m benchmarks.bench_urls --count 1000000
    python -m benchmarks.bench_urls --compare
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from typing import TYPE_CHECKING

from harvester.config import DedupeConfig
from harvester.urls.dedupe import SeenSet
from harvester.urls.fingerprint import fingerprint
from harvester.urls.normalize import Normalizer

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

CHUNK = 100_000
HOST = "www.shop-example.com"
WORDS = [
    "product",
    "category",
    "blog",
    "news",
    "item",
    "article",
    "shoes",
    "red",
    "sale",
    "winter",
    "collection",
    "detail",
    "archive",
    "2024",
    "guide",
    "review",
]


def synthetic(count: int, seed: int, canonical_share: float, dup: float) -> Iterator[list[str]]:
    """Yield chunks of URLs (see the module docstring)."""
    rng = random.Random(seed)
    recent: list[str] = []
    made = 0
    while made < count:
        chunk = []
        for _ in range(min(CHUNK, count - made)):
            if recent and rng.random() < dup:
                chunk.append(rng.choice(recent))
                continue
            n = made + len(chunk)
            path = (
                "/"
                + "/".join(rng.choices(WORDS, k=rng.randint(2, 5)))
                + f"/{n}-{rng.choice(WORDS)}"
            )
            path += rng.choice([".html", "/", "", ".htm"])
            url = f"https://{HOST}{path}"
            if rng.random() < 0.5:
                url += f"?color={rng.choice(WORDS)}&id={n}&page={rng.randint(1, 9)}"
            if rng.random() >= canonical_share:
                url = _variant(url, rng)
            chunk.append(url)
            if len(recent) < 10_000:
                recent.append(url)
            else:
                recent[rng.randrange(10_000)] = url
        made += len(chunk)
        yield chunk


def _variant(url: str, rng: random.Random) -> str:
    kind = rng.randrange(6)
    if kind == 0:
        return url.replace(HOST, HOST.upper())
    if kind == 1:
        return url.replace(HOST, HOST + ":443")
    if kind == 2:
        return url + ("&" if "?" in url else "?") + "utm_source=news&utm_medium=email"
    if kind == 3 and "?" in url:
        base, _, query = url.partition("?")
        return base + "?" + "&".join(reversed(query.split("&")))
    if kind == 4:
        return url + "#reviews"
    return url.replace("-", "%2D", 1)


def _set_bytes(seen: set[int]) -> int:
    return sys.getsizeof(seen) + sum(sys.getsizeof(x) for x in seen)


def run(args: argparse.Namespace) -> None:
    canon = Normalizer().canonical
    cfg = DedupeConfig(spill_threshold=args.spill) if args.spill else DedupeConfig()
    seen = SeenSet(cfg, spill_dir=tempfile.gettempdir())
    base: set[int] = set()
    t_ours = t_base = 0.0
    total = new = 0
    for chunk in synthetic(args.count, args.seed, args.canonical, args.dup):
        add = seen.add
        t = time.perf_counter()
        for loc in chunk:
            if add(fingerprint(canon(loc))):
                new += 1
        t_ours += time.perf_counter() - t
        if not args.no_baseline:
            badd = base.add
            t = time.perf_counter()
            for loc in chunk:
                badd(hash(canon(loc)))
            t_base += time.perf_counter() - t
        total += len(chunk)
    name = f"ours (SeenSet, {seen.spilled:,} spilled)" if args.spill else "ours (SeenSet)"
    rows = [(name, t_ours, len(seen), seen.memory_bytes)]
    seen.close()
    if not args.no_baseline:
        rows.append(("baseline (set of hash)", t_base, len(base), _set_bytes(base)))
    for name, secs, distinct, size in rows:
        print(
            json.dumps(
                {
                    "variant": name,
                    "urls": total,
                    "distinct": distinct,
                    "seconds": round(secs, 2),
                    "urls_per_s": round(total / secs),
                    "us_per_url": round(secs / total * 1e6, 3),
                    "seen_bytes": size,
                    "bytes_per_url": round(size / max(distinct, 1), 2),
                }
            )
        )
    fast, slow = _canonical_alone(args.seed)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    print(json.dumps({"canonical_us_fast": fast, "canonical_us_general": slow, "peak_rss_mb": rss}))
    print("\n| variant | URLs | distinct | URLs/s | µs/URL | seen-set MB | bytes/URL |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, secs, distinct, size in rows:
        print(
            f"| {name} | {total:,} | {distinct:,} | {total / secs:,.0f} | "
            f"{secs / total * 1e6:.2f} | {size / 1e6:,.1f} | {size / max(distinct, 1):.1f} |"
        )
    print(f"\ncanonical alone: {fast:.2f} µs/URL already canonical, {slow:.2f} µs/URL variants")


def _canonical_alone(seed: int) -> tuple[float, float]:
    canon = Normalizer().canonical
    urls = next(synthetic(CHUNK, seed, 1.0, 0.0))
    variants = next(synthetic(CHUNK, seed, 0.0, 0.0))
    out = []
    for batch in (urls, variants):
        t = time.perf_counter()
        for loc in batch:
            canon(loc)
        out.append(round((time.perf_counter() - t) / len(batch) * 1e6, 3))
    return out[0], out[1]


# (input, what our rules say) — the correctness table of --compare
CASES = [
    ("https://Example.COM:443/a", "https://example.com/a"),
    ("https://bücher.example/a", "https://xn--bcher-kva.example/a"),
    ("https://e.com/a/./b/../c", "https://e.com/a/c"),
    ("https://e.com/%7euser/%2fx", "https://e.com/~user/%2Fx"),
    ("https://e.com/p?b=2&a=1&a=0", "https://e.com/p?a=1&a=0&b=2"),
    ("https://e.com/p?", "https://e.com/p"),
    ("https://e.com/p?utm_source=x&fbclid=1&gclid=2&msclkid=3&id=5", "https://e.com/p?id=5"),
    ("https://e.com/p?jsessionid=1&page=2", "https://e.com/p?page=2"),
    ("https://e.com/p#top", "https://e.com/p"),
    ("https://e.com/#!/product/5", "https://e.com/#!/product/5"),
    ("https://e.com/p?q=a+b", "https://e.com/p?q=a+b"),
    ("https://e.com/a/", "https://e.com/a/"),
]


def _candidates() -> dict[str, Callable[[str], str]]:
    found: dict[str, Callable[[str], str]] = {"ours": Normalizer().canonical}
    try:
        from w3lib.url import canonicalize_url  # type: ignore[import-not-found,unused-ignore]

        found["w3lib.canonicalize_url"] = canonicalize_url
    except ImportError:
        pass
    try:
        from url_normalize import url_normalize  # type: ignore[import-not-found,unused-ignore]

        found["url-normalize"] = lambda u: url_normalize(u) or ""
    except ImportError:
        pass
    try:
        import yarl

        found["yarl.URL"] = lambda u: str(yarl.URL(u))
    except ImportError:
        pass
    return found


def compare(args: argparse.Namespace) -> None:
    urls = next(synthetic(20_000, args.seed, args.canonical, 0.0))
    print("| candidate | rules met | µs/URL (typical sitemap URLs) | misses |")
    print("| --- | ---: | ---: | --- |")
    for name, fn in _candidates().items():
        misses = []
        for loc, want in CASES:
            try:
                got = fn(loc)
            except Exception as exc:
                got = f"error {type(exc).__name__}"
            if got != want:
                misses.append(f"`{loc}` → `{got}`")
        t = time.perf_counter()
        for loc in urls:
            fn(loc)
        us = (time.perf_counter() - t) / len(urls) * 1e6
        print(
            f"| {name} | {len(CASES) - len(misses)}/{len(CASES)} | {us:.2f} | "
            f"{'<br>'.join(misses)} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=10_000_000, help="URLs to process")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--canonical", type=float, default=0.85, help="share already canonical")
    parser.add_argument("--dup", type=float, default=0.10, help="share of repeated URLs")
    parser.add_argument("--spill", type=int, default=0, help="spill_threshold (0: default)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the set() baseline")
    parser.add_argument("--compare", action="store_true", help="compare candidate libraries")
    args = parser.parse_args()
    if args.compare:
        compare(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
