"""harvester.crawl.robots: Sitemap lines, decoding, Crawl-delay and can_fetch.

The conformance corpus' robots cases run in tests/conformance/test_conformance.py.
"""

from __future__ import annotations

import pytest

from harvester.crawl.robots import RobotsTxt, parse_robots
from tests.paths import DATA

ROBOTS_URL = "https://example.com/robots.txt"
UA = "harvester"
CONFORMANCE = DATA / "conformance"


def sitemaps(body: bytes, robots_url: str = ROBOTS_URL) -> tuple[str, ...]:
    return parse_robots(body, robots_url, UA).sitemaps


# --- Sitemap lines -------------------------------------------------------------------


def test_sitemap_values_resolve_and_only_http_urls_are_kept() -> None:
    body = (
        b"Sitemap: //cdn.example.net/a.xml\n"  # scheme-relative: takes the robots.txt scheme
        b"Sitemap: sub/b.xml\n"  # path-relative: against the robots.txt URL
        b"Sitemap: ftp://example.com/c.xml\n"
        b"Sitemap: javascript:alert(1)\n"
        b"Sitemap: mailto:webmaster@example.com\n"
        b"Sitemap: http://[::1/broken.xml\n"  # urlsplit raises ValueError: skipped, no crash
        b"Sitemap: http:///no-host.xml\n"  # no host (another scheme, so urljoin keeps it)
        b"Sitemap: HTTPS://Example.com/D.xml\n"  # scheme lower-cased, host and path kept
    )
    assert sitemaps(body) == (
        "https://cdn.example.net/a.xml",
        "https://example.com/sub/b.xml",
        "https://Example.com/D.xml",
    )


def test_dedup_is_after_resolution_and_keeps_first_position() -> None:
    body = b"Sitemap: /a.xml\nSitemap: /b.xml\nSitemap: https://example.com/a.xml\n"
    assert sitemaps(body) == ("https://example.com/a.xml", "https://example.com/b.xml")


def test_only_sitemap_and_site_map_keys_count() -> None:
    # The conformance policy names these two spellings. protego (and Google) also
    # take "Sitemaps:" and a missing colon ("Sitemap http://…"); we do not.
    body = (
        b"Sitemaps: https://example.com/plural.xml\n"
        b"Sitemap https://example.com/no-colon.xml\n"
        b"sItE-mAp: https://example.com/ok.xml\n"
        b"User-agent: * # Sitemap: https://example.com/in-comment.xml\n"
    )
    assert sitemaps(body) == ("https://example.com/ok.xml",)


def test_hash_ends_the_value_even_without_space() -> None:
    assert sitemaps(b"Sitemap: https://example.com/s.xml#frag\n") == ("https://example.com/s.xml",)


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_line_ends(eol: bytes) -> None:
    body = eol.join([b"User-agent: *", b"Sitemap: /1.xml", b"Sitemap: /2.xml", b""])
    assert sitemaps(body) == ("https://example.com/1.xml", "https://example.com/2.xml")


def test_other_unicode_line_breaks_do_not_split_a_value() -> None:
    # RFC 9309 ends lines with CR/LF only; str.splitlines() would cut at U+2028.
    body = "Sitemap: /a\u2028b.xml\n".encode()
    assert sitemaps(body) == ("https://example.com/a\u2028b.xml",)


# --- Decoding ------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_with_bom(codec: str) -> None:
    bom = b"\xff\xfe" if codec.endswith("le") else b"\xfe\xff"
    text = "User-agent: *\nDisallow: /privé\nSitemap: /ümlaut.xml\n"
    robots = parse_robots(bom + text.encode(codec), ROBOTS_URL, UA)
    assert robots.sitemaps == ("https://example.com/ümlaut.xml",)
    assert not robots.can_fetch("https://example.com/priv%C3%A9/x")


def test_utf16_odd_length_and_unpaired_surrogate_do_not_raise() -> None:
    good = "Sitemap: /ok.xml\n".encode("utf-16-le")
    bad = "Sitemap: /".encode("utf-16-le") + b"\x00\xd8" + ".xml\n".encode("utf-16-le")
    robots = parse_robots(b"\xff\xfe" + bad + good + b"\x41", ROBOTS_URL, UA)
    assert robots.sitemaps == ("https://example.com/ok.xml",)


def test_utf8_cut_mid_character_keeps_earlier_lines() -> None:
    # A size cap can end the body inside a multi-byte character.
    body = b"Sitemap: /ok.xml\nSitemap: /caf" + "é".encode()[:1]
    assert sitemaps(body) == ("https://example.com/ok.xml",)


def test_invalid_utf8_only_skips_its_own_value() -> None:
    body = (
        b"Sitemap: https://example.com/ok-1.xml # comment with \xff\n"
        b"Sitemap: https://example.com/\xc3(.xml\n"
        b"Sitemap: https://example.com/ok-2.xml\n"
    )
    assert sitemaps(body) == ("https://example.com/ok-1.xml", "https://example.com/ok-2.xml")


def test_genuine_replacement_character_is_not_an_invalid_byte() -> None:
    body = "Sitemap: /\ufffd.xml\n".encode()
    assert sitemaps(body) == ("https://example.com/\ufffd.xml",)


@pytest.mark.parametrize(
    "body",
    [b"", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00" * 7, b"\xff" * 100, b"#" * 1000],
)
def test_degenerate_bodies(body: bytes) -> None:
    assert parse_robots(body, ROBOTS_URL, UA) == RobotsTxt()


# --- Crawl-delay ---------------------------------------------------------------------

GROUPS = b"""\
User-agent: *
Crawl-delay: 5
Disallow: /private/

User-agent: harvester
Crawl-delay: 0.5
Disallow: /only-for-others/
"""


def test_crawl_delay_of_our_group() -> None:
    assert parse_robots(GROUPS, ROBOTS_URL, "harvester").crawl_delay == 0.5
    # Product tokens match case-insensitively.
    assert parse_robots(GROUPS, ROBOTS_URL, "Harvester").crawl_delay == 0.5


def test_crawl_delay_falls_back_to_star_group() -> None:
    assert parse_robots(GROUPS, ROBOTS_URL, "otherbot").crawl_delay == 5.0


def test_our_group_without_delay_does_not_inherit_star_delay() -> None:
    # RFC 9309 §2.2.1: only the most specific matching group applies.
    body = b"User-agent: *\nCrawl-delay: 5\n\nUser-agent: harvester\nDisallow: /x\n"
    assert parse_robots(body, ROBOTS_URL, UA).crawl_delay is None


@pytest.mark.parametrize("value", ["abc", "-1", "inf", "nan", "", "1e400", "5s"])
def test_invalid_crawl_delay_is_none(value: str) -> None:
    body = f"User-agent: *\nCrawl-delay: {value}\n".encode()
    assert parse_robots(body, ROBOTS_URL, UA).crawl_delay is None


def test_no_crawl_delay_is_none() -> None:
    assert parse_robots(b"User-agent: *\nDisallow: /x\n", ROBOTS_URL, UA).crawl_delay is None


def test_full_user_agent_header_selects_by_product_token() -> None:
    body = b"User-agent: github\nDisallow: /\n\nUser-agent: harvester\nCrawl-delay: 2\n"
    header = "harvester/0.1.0 (+https://github.com/harvester/harvester)"
    robots = parse_robots(body, ROBOTS_URL, header)
    assert robots.crawl_delay == 2.0
    # "github" appears in the header's comment, but it is not our product token.
    assert robots.can_fetch("https://example.com/page")


# --- can_fetch -----------------------------------------------------------------------


def test_can_fetch_uses_our_group_rules() -> None:
    ours = parse_robots(GROUPS, ROBOTS_URL, "harvester")
    assert ours.can_fetch("https://example.com/private/x")
    assert not ours.can_fetch("https://example.com/only-for-others/x")
    other = parse_robots(GROUPS, ROBOTS_URL, "otherbot")
    assert not other.can_fetch("https://example.com/private/x")
    assert other.can_fetch("https://example.com/only-for-others/x")


def test_can_fetch_longest_match_wildcards_and_anchor() -> None:
    body = b"""\
User-agent: *
Disallow: /shop/
Allow: /shop/public/
Disallow: /*.pdf$
Disallow: /tmp*
"""
    robots = parse_robots(body, ROBOTS_URL, UA)
    assert not robots.can_fetch("https://example.com/shop/cart")
    assert robots.can_fetch("https://example.com/shop/public/sitemap.xml")
    assert not robots.can_fetch("https://example.com/docs/a.pdf")
    assert robots.can_fetch("https://example.com/docs/a.pdf?x=1")
    assert not robots.can_fetch("https://example.com/tmpfiles/s.xml")
    assert robots.can_fetch("https://example.com/robots.txt")  # always allowed


def test_disallow_all_and_empty_disallow() -> None:
    assert not parse_robots(b"User-agent: *\nDisallow: /\n", ROBOTS_URL, UA).can_fetch(
        "https://example.com/sitemap.xml"
    )
    assert parse_robots(b"User-agent: *\nDisallow:\n", ROBOTS_URL, UA).can_fetch(
        "https://example.com/sitemap.xml"
    )


def test_sitemap_lines_do_not_split_groups() -> None:
    body = (CONFORMANCE / "cases" / "robots_sitemap_in_groups.txt").read_bytes()
    robots = parse_robots(body, "http://foo.bar/robots.txt", "bingbot")
    assert robots.crawl_delay == 1.0
    assert not robots.can_fetch("http://foo.bar/assets/x.css")  # after the Sitemap line
    assert robots.can_fetch("http://foo.bar/other")
    assert not parse_robots(body, "http://foo.bar/robots.txt", UA).can_fetch("http://foo.bar/x")


def test_rules_of_a_utf16_file_apply() -> None:
    body = (CONFORMANCE / "cases" / "robots_utf16le_bom.txt").read_bytes()
    robots = parse_robots(body, "http://www.newsweek.com/robots.txt", UA)
    assert not robots.can_fetch("http://www.newsweek.com/login.aspx")
    assert not robots.can_fetch("http://www.newsweek.com/2020/output/print")
    assert robots.can_fetch("http://www.newsweek.com/sitemap_index.xml")


def test_rule_with_invalid_byte_matches_its_percent_encoding() -> None:
    # The byte cannot be decoded, but the rule still guards the URL that encodes it.
    robots = parse_robots(b"User-agent: *\nDisallow: /\xffadmin\n", ROBOTS_URL, UA)
    assert not robots.can_fetch("https://example.com/%FFadmin")
    assert robots.can_fetch("https://example.com/admin")


def test_missing_robots_txt_allows_everything() -> None:
    robots = RobotsTxt()
    assert robots.sitemaps == ()
    assert robots.crawl_delay is None
    assert robots.can_fetch("https://example.com/anything")
