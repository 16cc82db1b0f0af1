"""What the audit's tests share: a fetch time, lastmods as an honest CMS writes them
(fed into a distribution as the pipeline does), and a WordPress page with its dates."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from harvester.dates import format_utc, parse_lastmod

if TYPE_CHECKING:
    from collections.abc import Iterable

    from harvester.audit.distribution import LastmodDistribution

FETCHED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def feed(
    dist: LastmodDistribution,
    raws: Iterable[str | None],
    *,
    header: datetime | None = None,
    fetched_at: datetime = FETCHED,
) -> LastmodDistribution:
    """Add entries the way the pipeline will: parsed lastmod plus the raw text."""
    for raw in raws:
        lastmod = None if raw is None else parse_lastmod(raw)[0]
        dist.add(lastmod, raw, sitemap_last_modified=header, fetched_at=fetched_at)
    return dist


def honest_dates(n: int, seed: int = 7) -> list[str]:
    """Varied lastmods over five years, a few days apart, as an honest CMS writes them."""
    rng = random.Random(seed)
    start = datetime(2021, 1, 1, tzinfo=UTC)
    out: list[str] = []
    for _ in range(n):
        dt = start + timedelta(seconds=rng.randrange(0, 5 * 365 * 86400))
        out.append(format_utc(dt))
    return out


WORDPRESS = b"""<!DOCTYPE html>
<html lang="en-US">
<head>
<meta charset="UTF-8">
<title>Council approves transport budget &#8211; City News</title>
<meta property="og:type" content="article" />
<meta property="og:title" content="Council approves transport budget" />
<meta property="article:published_time" content="2024-03-01T08:00:00+00:00" />
<meta property="article:modified_time" content="2024-03-05T14:22:10+00:00" />
<meta property="og:updated_time" content="2024-03-05T15:22:10+01:00" />
<link rel="stylesheet" href="/wp-content/themes/news/style.css">
<script>window.dataLayer = window.dataLayer || [];</script>
</head>
<body class="post-template-default single single-post">
<header id="masthead"><nav><a href="/">Home</a> <a href="/city">City</a></nav></header>
<main><article>
<h1 class="entry-title">Council approves transport budget</h1>
<p>The city council voted on Tuesday to approve a new budget for public transport.</p>
<p>Residents said buses were often late &amp; crowded.</p>
<span class="views">1,234 views</span>
</article></main>
<aside class="widget"><h2>Popular</h2><ul><li>Other story</li></ul></aside>
<footer>&copy; 2024 City News</footer>
</body></html>"""
