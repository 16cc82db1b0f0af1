from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from harvester.normalize import _ALREADY_CANONICAL, canonical, host_of

CASES = Path(__file__).parent.parent / "data" / "conformance"


@pytest.mark.parametrize(
    ("loc", "expected"),
    [
        ("HTTPS://Example.COM:443/a?b=1#top", "https://example.com/a?b=1"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com:80/x", "http://example.com/x"),
        ("http://example.com:8080/x", "http://example.com:8080/x"),
        ("https://example.com:80/x", "https://example.com:80/x"),
        ("https://example.com/#!/product/5", "https://example.com/#!/product/5"),
        ("https://example.com./a", "https://example.com/a"),
        ("https://user:pw@Example.com/a", "https://user:pw@example.com/a"),
        ("http://[::1]:8080/a", "http://[::1]:8080/a"),
        ("https://example.com/a?b=2&a=1", "https://example.com/a?b=2&a=1"),
    ],
)
def test_canonical(loc: str, expected: str) -> None:
    assert canonical(loc) == expected
    assert canonical(expected) == expected  # idempotent


def test_fast_path_agrees_with_the_general_route_on_the_corpus() -> None:
    entries = json.loads((CASES / "expected.json").read_text())
    locs = {u for e in entries for u in e["urls"]} | {c for e in entries for c in e["children"]}
    fast = [loc for loc in locs if _ALREADY_CANONICAL(loc)]
    assert len(fast) > 100
    for loc in fast:
        parts = urlsplit(loc)
        general = urlunsplit(
            (
                parts.scheme.lower(),
                (parts.hostname or "") + (f":{parts.port}" if parts.port else ""),
                parts.path or "/",
                parts.query,
                "",
            )
        )
        assert general == loc


def test_host_of() -> None:
    assert host_of("https://Example.COM:8080/a") == "example.com"
    assert host_of("http://[bad") == ""
