"""crawl/filters.py and the [filters] config, --include/--exclude/--follow/--skip-sitemap flags."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from harvester.cli import build_parser
from harvester.cli.options import overrides
from harvester.config import FiltersConfig, load_config
from harvester.crawl.filters import compile_filters, compile_patterns
from harvester.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path


def test_no_filter_compiles_to_none() -> None:
    assert compile_filters(FiltersConfig()) is None
    assert compile_patterns(()) is None


def test_include_and_exclude_on_page_locs() -> None:
    filters = compile_filters(FiltersConfig(include=(r"/blog/", r"/news/"), exclude=(r"\?",)))
    assert filters is not None
    assert filters.pages
    assert not filters.sitemaps
    assert filters.keep("https://e.com/blog/a")
    assert filters.keep("https://e.com/news/b")
    assert not filters.keep("https://e.com/shop/c")  # matches no include
    assert not filters.keep("https://e.com/blog/a?page=2")  # matches an exclude
    assert filters.follow("https://e.com/anything.xml")  # no sitemap filter: all followed


def test_follow_and_skip_sitemap_on_children() -> None:
    filters = compile_filters(FiltersConfig(follow=(r"post",), skip_sitemap=(r"2019",)))
    assert filters is not None
    assert filters.sitemaps
    assert not filters.pages
    assert filters.follow("https://e.com/post-sitemap.xml")
    assert not filters.follow("https://e.com/page-sitemap.xml")
    assert not filters.follow("https://e.com/post-sitemap-2019.xml")
    assert filters.keep("https://e.com/any")


def test_exclude_alone_keeps_everything_else() -> None:
    filters = compile_filters(FiltersConfig(exclude=(r"\.pdf$", r"/tag/")))
    assert filters is not None
    assert filters.keep("https://e.com/a.html")
    assert not filters.keep("https://e.com/a.pdf")
    assert not filters.keep("https://e.com/tag/x")


def test_patterns_with_global_flags_still_work_together() -> None:
    # "(?i)" cannot be joined into one alternation: kept as separate regexes.
    search = compile_patterns([r"(?i)/BLOG/", r"/news/"])
    assert search is not None
    assert search("https://e.com/blog/a")
    assert search("https://e.com/news/a")
    assert not search("https://e.com/shop/a")


def test_compiled_once_per_config() -> None:
    cfg = FiltersConfig(include=("a",))
    assert compile_filters(cfg) is compile_filters(FiltersConfig(include=("a",)))


@pytest.mark.parametrize("key", ["include", "exclude", "follow", "skip_sitemap"])
def test_a_bad_regex_names_the_key(tmp_path: Path, key: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f"[filters]\n{key} = ['ok', '(unclosed']\n")
    with pytest.raises(ConfigError, match=rf"filters\.{key}\[1\].*'\(unclosed'"):
        load_config(path)


def test_flags_are_repeatable_and_reach_the_config() -> None:
    ns = build_parser().parse_args(
        [
            "run",
            "e.com",
            "--include",
            "/blog/",
            "--include",
            "/news/",
            "--exclude",
            r"\?",
            "--follow",
            "post",
            "--skip-sitemap",
            "2019",
        ]
    )
    cfg = load_config(None, overrides(ns))
    assert cfg.filters == FiltersConfig(
        include=("/blog/", "/news/"), exclude=(r"\?",), follow=("post",), skip_sitemap=("2019",)
    )


@pytest.mark.parametrize(
    "cfg",
    [
        FiltersConfig(include=("/blog/",)),
        FiltersConfig(exclude=(r"\?", r"\.pdf$")),
        FiltersConfig(include=("/blog/", "(?i)/NEWS/"), exclude=("draft",)),
    ],
)
def test_select_is_keep_applied_in_order(cfg: FiltersConfig) -> None:
    filters = compile_filters(cfg)
    assert filters is not None
    locs = [
        f"https://e.com/{section}/{name}{tail}"
        for section in ("blog", "news", "shop")
        for name in ("a", "draft-b")
        for tail in ("", "?p=1", ".pdf")
    ]
    items = [(loc, i) for i, loc in enumerate(locs)]
    expected = [item for item in items if filters.keep(item[0])]
    assert filters.select(items, lambda item: item[0]) == expected
    assert 0 < len(expected) < len(items)


def test_a_batch_filters_page_urls_and_passes_children() -> None:
    from harvester.config import Config
    from harvester.crawl.batch import UrlBatch
    from harvester.crawl.report import HostReport
    from harvester.crawl.settings import BatchSettings
    from harvester.models import Entry, SitemapChild, UrlEntry
    from harvester.urls.normalize import Normalizer

    cfg = Config(filters=FiltersConfig(exclude=("/tag/",)))
    report = HostReport("e.com")
    rules = Normalizer(cfg.normalize).rules_for("e.com")
    batch = UrlBatch("e.com", BatchSettings.of(cfg), rules, report)
    urls: list[Entry] = [UrlEntry("https://e.com/a"), UrlEntry("https://e.com/tag/x")]
    assert batch.take(urls, "https://e.com/s.xml") == []
    child = SitemapChild("https://e.com/tag/s.xml")
    mixed: list[Entry] = [UrlEntry("https://e.com/tag/y"), child, UrlEntry("https://e.com/b")]
    assert batch.take(mixed, "https://e.com/s.xml") == [child]  # children are not page URLs
    out = batch.flush()
    assert out is not None
    assert [r["loc"] for r in out.records] == ["https://e.com/a", "https://e.com/b"]
    assert report.filtered == 2
    assert report.urls == 2


def test_the_run_report_totals_filters_and_unverified_hosts() -> None:
    from harvester.output.display import summary_table
    from harvester.output.report import RunReport

    run = RunReport()
    run.add_host({"host": "a", "urls": 3, "filtered": 4, "sitemaps_filtered": 2})
    run.add_host({"host": "b", "urls": 1, "filtered": 1, "tls_unverified": True})
    run.add_host({"host": "c", "urls": 1})  # a report from before issue 32
    assert (run.filtered, run.sitemaps_filtered, run.hosts_tls_unverified) == (5, 2, 1)
    table = summary_table(run)
    assert "5 URLs, 2 child sitemaps" in table
    assert "1 hosts (verify_tls = false)" in table
