from __future__ import annotations

import pytest

from harvester.crawl.discovery import child_allowed, home_hosts, registrable_domain


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("cdn.example.co.uk", "example.co.uk"),
        ("www.example.com", "example.com"),
        ("example.com:8080", "example.com"),
        ("127.0.0.2:8080", "127.0.0.2"),
        ("localhost", "localhost"),
    ],
)
def test_registrable_domain_is_offline(host: str, expected: str) -> None:
    assert registrable_domain(host) == expected


def test_child_policy() -> None:
    host = "www.example.com"
    homes = frozenset({host})
    declared = frozenset({"https://other.org/s.xml"})
    assert child_allowed("https://www.example.com/a.xml", host, homes, "same-host", declared)
    assert not child_allowed("https://cdn.example.com/a.xml", host, homes, "same-host", declared)
    assert child_allowed("https://cdn.example.com/a.xml", host, homes, "same-site", declared)
    assert child_allowed("https://other.org/s.xml", host, homes, "same-site", declared)
    assert not child_allowed("https://other.org/t.xml", host, homes, "same-site", declared)
    assert child_allowed("https://other.org/t.xml", host, homes, "any", declared)


def test_where_robots_txt_was_served_counts_as_the_hosts_own() -> None:
    # .test is on no public-suffix list: each name is its own registrable domain, so only
    # the robots.txt redirect (apex → www) makes www the apex's own host.
    host = "example.test"
    homes = home_hosts(host, "https://www.example.test")
    assert homes == frozenset({"example.test", "www.example.test"})
    none: frozenset[str] = frozenset()
    www = "https://www.example.test/a.xml"
    assert not child_allowed(www, host, frozenset({host}), "same-site", none)
    assert child_allowed(www, host, homes, "same-site", none)
    assert child_allowed(www, host, homes, "any", none)
    assert not child_allowed(www, host, homes, "same-host", none)  # strict: the seed host only
    assert not child_allowed("https://other.test/a.xml", host, homes, "same-site", none)


def test_the_registrable_domain_of_where_robots_txt_was_served_is_the_sites_too() -> None:
    # An apex that sends robots.txt to another registrable domain: that domain's hosts
    # are as much the site's as the seed's own subdomains are.
    homes = home_hosts("example.com", "https://www.example.co.uk")
    none: frozenset[str] = frozenset()
    assert child_allowed("https://cdn.example.co.uk/a.xml", "example.com", homes, "same-site", none)
    assert child_allowed("https://cdn.example.com/a.xml", "example.com", homes, "same-site", none)
    assert not child_allowed("https://example.org/a.xml", "example.com", homes, "same-site", none)


def test_home_hosts_without_an_origin_is_the_host_alone() -> None:
    assert home_hosts("example.com", "") == frozenset({"example.com"})
    assert home_hosts("example.com", "http://127.0.0.2:8080") == frozenset(
        {"example.com", "127.0.0.2:8080"}
    )
