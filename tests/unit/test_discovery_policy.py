from __future__ import annotations

import pytest

from harvester.crawl.discovery import child_allowed, registrable_domain


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
    declared = frozenset({"https://other.org/s.xml"})
    assert child_allowed("https://www.example.com/a.xml", host, "same-host", declared)
    assert not child_allowed("https://cdn.example.com/a.xml", host, "same-host", declared)
    assert child_allowed("https://cdn.example.com/a.xml", host, "same-site", declared)
    assert child_allowed("https://other.org/s.xml", host, "same-site", declared)
    assert not child_allowed("https://other.org/t.xml", host, "same-site", declared)
    assert child_allowed("https://other.org/t.xml", host, "any", declared)
