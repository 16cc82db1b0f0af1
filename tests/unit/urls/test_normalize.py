from __future__ import annotations

import json
from types import MappingProxyType
from typing import TYPE_CHECKING

import pytest

from harvester.config import NormalizeConfig, NormalizeOverride, NormalizeRules, load_config
from harvester.errors import ConfigError
from harvester.urls.normalize import _FAST, Normalizer, Rules, canonical, host_of
from tests.paths import DATA

if TYPE_CHECKING:
    from pathlib import Path

CASES = DATA / "conformance"


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
        # IDNA host to ASCII (IDNA 2008 + UTS 46, as browsers do)
        ("https://Bücher.example/a", "https://xn--bcher-kva.example/a"),
        # dot segments
        ("https://e.com/a/./b/../c", "https://e.com/a/c"),
        ("https://e.com/a/..", "https://e.com/"),
        ("https://e.com/../../a", "https://e.com/a"),
        ("https://e.com/a/%2e%2E/b", "https://e.com/b"),
        # percent-encoding: unreserved decoded, hex upper-cased, the rest encoded
        ("https://e.com/%7euser/%41", "https://e.com/~user/A"),
        ("https://e.com/a%2fb?q=%e2%82%ac", "https://e.com/a%2Fb?q=%E2%82%AC"),
        ("https://e.com/ä b", "https://e.com/%C3%A4%20b"),
        ("https://e.com/100%", "https://e.com/100%25"),
        ("https://e.com/?q=a+b&r=a%20b", "https://e.com/?q=a+b&r=a%20b"),
        ("https://e.com/?a=%26&b=1", "https://e.com/?a=%26&b=1"),
        # query: sorted (stable for repeated keys), empty pairs and empty query dropped
        ("https://example.com/a?b=2&a=1", "https://example.com/a?a=1&b=2"),
        ("https://e.com/?b=1&a=2&a=1", "https://e.com/?a=2&a=1&b=1"),
        ("https://e.com/a?", "https://e.com/a"),
        ("https://e.com/a?&&", "https://e.com/a"),
        ("https://e.com/a?x&x=", "https://e.com/a?x&x="),
        # tracking and session parameters
        ("https://e.com/?utm_source=x&UTM_Medium=y&fbclid=1&gclid=2&msclkid=3", "https://e.com/"),
        ("https://e.com/p?PHPSESSID=1&page=2&jsessionid=3", "https://e.com/p?page=2"),
        ("https://e.com/p;jsessionid=ABC?id=1", "https://e.com/p?id=1"),
        ("https://e.com/p;v=1", "https://e.com/p;v=1"),
        # content-bearing parameters and hash-bang routes are kept
        ("https://e.com/list?page=2&category=7&id=5", "https://e.com/list?category=7&id=5&page=2"),
        ("https://e.com/#!/product/5?x=1", "https://e.com/#!/product/5?x=1"),
        ("https://e.com/a#section", "https://e.com/a"),
        # trailing slash kept by default
        ("https://e.com/a/", "https://e.com/a/"),
        # not http(s), or unparseable: unchanged
        ("ftp://E.com/a", "ftp://E.com/a"),
        ("http://e.com:99999/a", "http://e.com:99999/a"),
        ("http://[bad/a", "http://[bad/a"),
    ],
)
def test_canonical(loc: str, expected: str) -> None:
    assert canonical(loc) == expected
    assert canonical(expected) == expected  # idempotent


def test_issue_example_collapses_with_trailing_slash_removal() -> None:
    a = "https://Example.com:443/product/1/?utm_source=x&id=5&color=red"
    b = "https://example.com/product/1?color=red&id=5"
    assert canonical(a) == "https://example.com/product/1/?color=red&id=5"  # slash kept by default
    strip = Rules(NormalizeRules(strip_trailing_slash=True)).canonical
    assert strip(a) == strip(b) == b
    assert strip("https://e.com/") == "https://e.com/"
    assert canonical("https://e.com/?page=2") != canonical("https://e.com/?page=3")


def test_rules_are_configurable() -> None:
    rules = Rules(
        NormalizeRules(
            sort_query=False,
            tracking_params=("ref", "mc_*"),
            session_params=(),
            keep_hashbang=False,
        )
    )
    url = "https://e.com/p;jsessionid=1?b=1&ref=x&mc_cid=2&utm_source=z&a=1#!/x"
    assert rules.canonical(url) == "https://e.com/p;jsessionid=1?b=1&utm_source=z&a=1"


def test_per_host_overrides_inherit_the_rest() -> None:
    cfg = NormalizeConfig(
        hosts=MappingProxyType({"shop.com": NormalizeOverride(strip_trailing_slash=True)})
    )
    normalizer = Normalizer(cfg)
    assert normalizer.canonical("https://shop.com/a/?utm_source=1") == "https://shop.com/a"
    assert normalizer.canonical("https://other.com/a/?utm_source=1") == "https://other.com/a/"
    assert normalizer.for_host("SHOP.com")("https://shop.com/b/") == "https://shop.com/b"
    assert Normalizer().canonical("https://shop.com/a/") == "https://shop.com/a/"


def test_config_section_loads(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[normalize]\ntracking_params = ["utm_*", "ref"]\n'
        '[normalize.hosts."a.com"]\nsort_query = false\n'
    )
    cfg = load_config(path).normalize
    assert cfg.tracking_params == ("utm_*", "ref")
    assert cfg.rules_for("a.com") == NormalizeRules(
        tracking_params=("utm_*", "ref"), sort_query=False
    )
    path.write_text('[normalize]\ntracking_params = ["u*x"]\n')
    with pytest.raises(ConfigError, match=r"normalize\.tracking_params"):
        load_config(path)


def test_fast_path_agrees_with_the_general_route_on_the_corpus() -> None:
    entries = json.loads((CASES / "expected.json").read_text())
    locs = {u for e in entries for u in e["urls"]} | {c for e in entries for c in e["children"]}
    rules = Rules(NormalizeRules())
    fast = [loc for loc in locs if _FAST(loc)]
    assert len(fast) > 100
    for loc in fast:
        assert rules.canonical(loc) == rules._general(loc)


def test_host_of() -> None:
    assert host_of("https://Example.COM:8080/a") == "example.com"
    assert host_of("http://[bad") == ""
