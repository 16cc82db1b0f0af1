"""crawl/probes.py: the probe plan, from probes.toml, the config and a home page."""

from __future__ import annotations

from harvester.crawl.htmlpage import HtmlPage
from harvester.crawl.probes import guess_platform, plan, probes

ORIGIN = "http://127.0.0.2"
CONFIG = ("/sitemap.xml", "/sitemap_index.xml", "/sitemap.txt")


def test_every_entry_has_a_source_and_a_unique_path() -> None:
    entries = probes()
    assert len({p.path for p in entries}) == len(entries)
    assert all(p.path.startswith("/") and p.source for p in entries)
    names = {p.path for p in entries}
    for path in ("/wp-sitemap.xml", "/sitemap_index.xml", "/sitemap.xml.gz", "/atom.xml"):
        assert path in names


def test_plan_without_home_page_is_config_then_data_file_within_budget() -> None:
    assert plan(CONFIG, ORIGIN, 6) == [
        f"{ORIGIN}{p}"
        for p in (*CONFIG, "/wp-sitemap.xml", "/sitemap.xml.gz", "/sitemap-index.xml")
    ]
    assert plan(CONFIG, ORIGIN, 2) == [f"{ORIGIN}/sitemap.xml", f"{ORIGIN}/sitemap_index.xml"]
    assert plan(CONFIG, ORIGIN, 0) == []


def test_home_page_link_and_generator_go_first() -> None:
    home = HtmlPage(
        f"{ORIGIN}/",
        generator="Blogger",
        sitemaps=(f"{ORIGIN}/m.xml", "http://127.0.0.3/other.xml"),
    )
    assert plan(CONFIG, ORIGIN, 4, home) == [
        f"{ORIGIN}/m.xml",  # its own site's <link rel="sitemap">; the other host's is not
        f"{ORIGIN}/atom.xml",
        f"{ORIGIN}/feeds/posts/default",
        f"{ORIGIN}/sitemap.xml",
    ]


def test_guess_platform() -> None:
    assert guess_platform("WordPress 6.5.2") == "wordpress"
    assert guess_platform("Hugo 0.120.0") == "hugo"
    assert guess_platform("FrontPage 4.0") is None
    assert guess_platform(None) is None
