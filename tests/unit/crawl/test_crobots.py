"""_crobots: the compiled matcher against the regular expressions (the reference), on the
conformance cases, TDMRep's first-match order, and random patterns and paths."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from harvester import compiled
from harvester.crawl.robotsrules import PathPatterns, compile_rules, parse_groups

_crobots = compiled.load("_crobots")
needs_compiled = pytest.mark.skipif(_crobots is None, reason="the compiled matcher is not built")

_DATA = json.loads(
    (Path(__file__).parents[2] / "data" / "robots_conformance.json").read_text("utf-8")
)
_CHECKS = [
    pytest.param(case, path, allowed, id=f"{case['name']}:{path}")
    for case in _DATA["cases"]
    for path, allowed in case["checks"]
]


@needs_compiled
@pytest.mark.parametrize(("case", "path", "allowed"), _CHECKS)
def test_conformance_compiled(case: dict[str, Any], path: str, allowed: bool) -> None:
    rules = compile_rules(parse_groups(case["robots"]), case["agent"])
    url = _DATA["base"] + path
    if not rules.matchable:  # no Disallow: allowed without any matching (verdicts' constant)
        assert allowed
        assert rules.compiled is None
        return
    assert rules.compiled(url) == int(allowed)
    assert rules.compiled.many([url, url]) == [int(allowed)] * 2


def test_tdm_first_rule_in_file_order_wins() -> None:
    tdm = PathPatterns([("/a/public/", False), ("/a/", True), ("/*.pdf$", True)])
    cases = {
        "https://e.com/a/public/x.pdf": False,  # first in sequence, though a later one matches
        "https://e.com/a/x": True,
        "https://e.com/b/x.pdf": True,
        "https://e.com/b/x.pdf?v=1": None,
        "https://e.com/": None,
        "https://e.com/a/%7e": True,  # escapes are compared upper-cased
    }
    for url, want in cases.items():
        assert tdm.value(url) is want, url
        if tdm.compiled is not None:
            assert tdm.compiled(url) == (-1 if want is None else int(want)), url


_ALPHABET = "ab/.*$?=%2Fü"


def _random_pattern(rng: random.Random) -> str:
    body = "/" + "".join(rng.choice("ab/.*?=") for _ in range(rng.randint(0, 5)))
    return body + ("$" if rng.random() < 0.3 else "")


def _random_url(rng: random.Random) -> str:
    path = "/" + "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 8)))
    path = path.replace("%", rng.choice(["%2f", "%2F", "%"]))
    return (
        rng.choice(["https://e.com", "http://e.com:8080", "https://e.com/x?y"])
        + path
        + ("#f" if rng.random() < 0.1 else "")
    )


@needs_compiled
def test_random_rules_agree_with_the_regular_expressions() -> None:
    rng = random.Random(48)
    checked = 0
    for _ in range(100):
        lines = [
            f"{rng.choice(['Allow', 'Disallow'])}: {_random_pattern(rng)}"
            for _ in range(rng.randint(1, 6))
        ]
        rules = compile_rules(parse_groups("User-agent: *\n" + "\n".join(lines)), "x")
        tdm = PathPatterns([(_random_pattern(rng), rng.random() < 0.5) for _ in range(3)])
        urls = [_random_url(rng) for _ in range(30)]
        for url in urls:
            if rules.compiled is not None:
                assert rules.compiled(url) == int(rules.allowed(url)), (lines, url)
            want = tdm.value(url)
            assert tdm.compiled(url) == (-1 if want is None else int(want)), url
            checked += 1
    assert checked == 3000


def test_root_allowed_without_regexes_agrees_with_path_allowed() -> None:
    rng = random.Random(9309)
    patterns = ["/", "/$", "*", "*$", "$", "/*", "*/", "*/$", "/a", "/*a", "/?", "/%2F"]
    for _ in range(300):
        lines = [
            f"{rng.choice(['Allow', 'Disallow'])}: {rng.choice([*patterns, _random_pattern(rng)])}"
            for _ in range(rng.randint(1, 4))
        ]
        rules = compile_rules(parse_groups("User-agent: *\n" + "\n".join(lines)), "x")
        assert rules.root_allowed() is rules.path_allowed("/"), lines


@needs_compiled
def test_line_labels_pick_the_label_by_loc() -> None:
    assert _crobots is not None
    rules = compile_rules(parse_groups("User-agent: *\nDisallow: /p\n"), "x")
    tdm = PathPatterns([("/p/open", False), ("/", True)])
    table = tuple(f"{r},{t}".encode() for r in (0, 1, 2) for t in (-1, 0, 1))
    labels = _crobots.LineLabels(rules.compiled, 1, tdm.compiled, -1, table)
    assert labels("https://e.com/a") == b"1,1"
    assert labels("https://e.com/p/open/x") == b"0,0"
    fixed = _crobots.LineLabels(None, 2, None, -1, table)
    assert fixed("https://e.com/p") == b"2,-1"
    with pytest.raises(ValueError, match="9 labels"):
        _crobots.LineLabels(None, 1, None, -1, table[:6])


def _dispatch_pattern(rng: random.Random) -> str:
    # Prefixes that land in one byte's list ("/ab"), in the list every path tries ("/",
    # "/*a", "*a", ""), and that cannot match a path at all ("ab": no leading '/').
    head = rng.choice(["/", "/a", "/b", "//", "/?", "/*", "*", "", "a", "/ü"])
    body = "".join(rng.choice("ab/.*?=") for _ in range(rng.randint(0, 4)))
    return head + body + ("$" if rng.random() < 0.3 else "")


@needs_compiled
def test_many_rules_dispatched_by_second_byte_agree_with_the_regular_expressions() -> None:
    # Up to 25 rules a host, so each byte's list and the generic list both hold several
    # rules whose priorities interleave; paths include "/" (no second byte) and "/ü".
    rng = random.Random(4848)
    checked = 0
    for _ in range(60):
        lines = [
            f"{rng.choice(['Allow', 'Disallow'])}: {_dispatch_pattern(rng)}"
            for _ in range(rng.randint(5, 25))
        ]
        rules = compile_rules(parse_groups("User-agent: *\n" + "\n".join(lines)), "x")
        tdm = PathPatterns([(_dispatch_pattern(rng), rng.random() < 0.5) for _ in range(12)])
        for _ in range(50):
            url = _random_url(rng)
            if rules.compiled is not None:
                assert rules.compiled(url) == int(rules.allowed(url)), (lines, url)
            want = tdm.value(url)
            assert tdm.compiled(url) == (-1 if want is None else int(want)), url
            checked += 1
    assert checked == 3000
